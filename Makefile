# gitpatch — developer commands. `make test` and `make demo` work on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: install test test-fast lint bench demo clean format docs screenshot

# test workers: two per core (see test-fast)
JOBS ?= $(shell echo $$(( $$(nproc) * 2 )))

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# the whole suite, slow tests included, in parallel workers (work stealing: the longest tests
# do not hold the end); the tests wait on fsync and on git processes much of the time
test: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -n $(JOBS) --dist worksteal

# the edit-test loop: everything but the tests marked slow (kill, load, browser, and those that
# start servers, console scripts or hooks in processes of their own), two workers per core:
# the tests wait on fsync and on git processes about a third of the time
test-fast: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -m "not slow" -n $(JOBS)

lint: $(STAMP)
	$(VENV)/bin/ruff check gitpatch tests bench
	$(VENV)/bin/ruff format --check gitpatch tests bench
	$(VENV)/bin/mypy --strict gitpatch

format: $(STAMP)
	$(VENV)/bin/ruff check --fix gitpatch tests bench
	$(VENV)/bin/ruff format gitpatch tests bench

bench: $(STAMP)
	$(PY) bench/run.py

docs: $(STAMP)
	$(PY) -m gitpatch.doors.cli.docs docs/cli.md docs/errors.md

demo: $(STAMP)
	$(PY) -m gitpatch.doors.demo

# docs/review-page.png, from the browser test (needs chromium + chromium-driver)
screenshot: $(STAMP)
	GITPATCH_SCREENSHOT=docs/review-page.png GITPATCH_REQUIRE_BROWSER=1 \
		$(PY) -m pytest -q -p no:cacheprovider tests/doors/web/test_browser.py -k approves

clean:
	rm -rf $(VENV) build *.egg-info
