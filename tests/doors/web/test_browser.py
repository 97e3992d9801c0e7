"""End to end in a real headless Chromium: the page served by ``serve`` in its own process.

A person opens the printed address, sees the pending proposals, approves one (and it is merged
on the branch, as git says), rejects another with a reason (noted), sees a new proposal appear
without a reload, undoes from the log, and the page works at phone width. The screenshot of the
proposal page goes to tmp, or to ``GITPATCH_SCREENSHOT`` (``make screenshot`` writes
docs/review-page.png with it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitpatch.doors.web.demo import build
from tests.doors.web.browser import chromium, running, serve_command, wait_for
from tests.doors.web.webkit import note, propose
from tests.gitkit import git, head

#: a real browser: `make test-fast` leaves these out (`-m "not slow"`).
pytestmark = pytest.mark.slow


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The web demo's repository: a person's uncommitted work and three open proposals."""
    return build(tmp_path / "shop")


@pytest.fixture
def page(repo: Path) -> Iterator[tuple[Any, str]]:
    with running(serve_command(repo)) as url, chromium() as driver:
        yield driver, url


def _ids(repo: Path) -> dict[str, str]:
    """Open proposal ids by the file they change."""
    out = {}
    for ref in git(
        repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/gitpatch/"
    ).split():
        files = git(repo, "diff", "--name-only", f"{ref}~1", ref).split()
        out[files[0]] = ref.removeprefix("gitpatch/")
    return out


def _open(driver: Any, pid: str) -> None:
    driver.find_element("css selector", f'a.pid[href="/p/{pid}"]').click()
    wait_for(driver, lambda d: d.find_elements("css selector", "#proposal"), "the proposal page")


def _confirm(driver: Any, reason: str | None = None) -> None:
    wait_for(driver, lambda d: d.find_element("id", "confirm").get_attribute("open"), "the dialog")
    if reason is not None:
        driver.find_element("id", "confirm-reason").send_keys(reason)
    driver.find_element("id", "confirm-ok").click()


def _status_becomes(driver: Any, status: str) -> None:
    wait_for(
        driver,
        lambda d: d.find_element("id", "proposal").get_attribute("data-status") == status,
        f"the proposal to become {status}: {driver.find_element('id', 'result').text}",
    )


def test_a_person_approves_and_rejects_in_a_real_browser(
    repo: Path, page: tuple[Any, str], tmp_path: Path
) -> None:
    driver, url = page
    assert url.startswith("http://127.0.0.1:") and "/?token=" in url
    ids = _ids(repo)
    driver.get(url)
    wait_for(driver, lambda d: len(d.find_elements("css selector", "tr.row")) == 3, "3 rows")
    assert "token=" not in driver.current_url  # traded for the cookie
    assert driver.execute_script("return document.cookie") == ""  # HttpOnly: scripts can't see it

    # The proposal that recorded the person's own uncommitted work, marked as theirs.
    _open(driver, ids["app.py"])
    mine = driver.find_element("css selector", "section.records")
    assert "Your own uncommitted work" in mine.text and "log = logging.getLogger" in mine.text
    assert driver.find_elements("css selector", "section.file:not(.theirs) .src span.n")
    _screenshot(driver, tmp_path)

    # Approve: type a name once, confirm, see the result and the branch's new position.
    by = driver.find_element("id", "by")
    by.clear()
    by.send_keys("Ada Lovelace <ada@example.com>")
    tip = head(repo, f"gitpatch/{ids['app.py']}")
    driver.find_element("id", "approve").click()
    _confirm(driver)
    _status_becomes(driver, "approved")
    result = driver.find_element("id", "result").text
    assert "Approved proposal" in result and f"feature is now at {tip[:12]}" in result
    assert head(repo, "feature") == tip  # fast-forwarded: git agrees
    assert json.loads(note(repo, tip))["approved_by"] == "Ada Lovelace <ada@example.com>"
    assert "BACKOFF_SECONDS" in (repo / "app.py").read_text()
    assert git(repo, "status", "--porcelain") == ""  # the person's work is now committed too

    # Reject with the keyboard: r, a reason is required, then it is noted.
    driver.get(url.split("?")[0])
    wait_for(driver, lambda d: d.find_elements("css selector", "tr.row"), "the list")
    _open(driver, ids["lib/util.js"])
    rejected_tip = head(repo, f"gitpatch/{ids['lib/util.js']}")
    driver.find_element("css selector", "body").send_keys("r")
    _confirm(driver)  # no reason yet: refused in the dialog
    error = driver.find_element("id", "confirm-error")
    wait_for(driver, lambda d: "reason is required" in error.text, "the missing-reason error")
    driver.find_element("id", "confirm-reason").send_keys("Number() hides bad input")
    driver.find_element("id", "confirm-ok").click()
    _status_becomes(driver, "rejected")
    saved = json.loads(note(repo, rejected_tip))
    assert (saved["reason"], saved["rejected_by"]) == (
        "Number() hides bad input",
        "Ada Lovelace <ada@example.com>",  # the typed name was remembered
    )
    assert git(repo, "branch", "--list", f"gitpatch/{ids['lib/util.js']}") == ""

    # Undo from the log view: a new commit reverts the approval.
    driver.get(url.split("?")[0] + "log")
    driver.find_element("id", "undo").click()
    _confirm(driver)
    wait_for(driver, lambda d: "Undid" in d.find_element("id", "result").text, "the undo")
    assert "Gitpatch-Reverts:" in git(repo, "log", "-1", "--format=%B", "feature")
    assert "BACKOFF_SECONDS" not in (repo / "app.py").read_text()


def test_the_list_updates_by_itself_without_a_reload(repo: Path, page: tuple[Any, str]) -> None:
    driver, url = page
    driver.get(url)
    wait_for(driver, lambda d: len(d.find_elements("css selector", "tr.row")) == 3, "3 rows")
    driver.find_element("css selector", "body").send_keys("j")  # the person's place
    driver.execute_script("window.stayed = 42;")
    new = propose(repo, "README.md", "# shop", "# shop, renamed")
    wait_for(
        driver,
        lambda d: d.find_elements("css selector", f'tr.row[data-id="{new}"]'),
        "the new proposal to appear",
    )
    assert driver.execute_script("return window.stayed") == 42  # no reload
    assert len(driver.find_elements("css selector", "tr.row.selected")) == 1


def test_a_proposal_decided_elsewhere_says_so(repo: Path, page: tuple[Any, str]) -> None:
    from gitpatch import Workspace

    driver, url = page
    driver.get(url)
    wait_for(driver, lambda d: len(d.find_elements("css selector", "tr.row")) == 3, "3 rows")
    pid = _ids(repo)["README.md"]
    _open(driver, pid)
    Workspace.open(repo, mode="review").reject(pid, "Grace", "another window said no")
    _status_becomes(driver, "rejected")
    assert "rejected meanwhile" in driver.find_element("id", "result").text
    assert driver.find_element("id", "approve").get_attribute("disabled")


def test_the_page_works_at_phone_width(repo: Path) -> None:
    with running(serve_command(repo)) as url, chromium(390, 844) as driver:
        driver.get(url)
        wait_for(driver, lambda d: d.find_elements("css selector", "tr.row"), "the list")
        pid = _ids(repo)["app.py"]
        _open(driver, pid)
        width = driver.execute_script("return document.documentElement.scrollWidth")
        assert width <= driver.execute_script("return window.innerWidth")  # no sideways page
        approve = driver.find_element("id", "approve")
        assert approve.is_displayed() and approve.size["width"] > 100


def _screenshot(driver: Any, tmp_path: Path) -> None:
    """The proposal page, tall enough to show the whole diff."""
    target = Path(os.environ.get("GITPATCH_SCREENSHOT") or tmp_path / "review-page.png")
    height, chrome = driver.execute_script(
        "return [document.documentElement.scrollHeight, window.outerHeight - window.innerHeight]"
    )
    driver.set_window_size(1280, min(int(height) + int(chrome), 2400))
    wait_for(driver, lambda d: d.find_element("id", "approve").is_displayed(), "the buttons")
    target.parent.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(target))
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    driver.set_window_size(1280, 900)
