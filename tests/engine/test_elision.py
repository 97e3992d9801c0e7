"""Indented ``...`` lines in SEARCH/REPLACE: text first, elision when the text is not in the file
and the elision reading is well formed; refused otherwise."""

from __future__ import annotations

import pytest

from gitpatch.core.model import Changeset
from gitpatch.engine import apply
from gitpatch.errors import GitpatchError, MatchAmbiguous, MatchNotFound
from gitpatch.formats import search_replace

JOB = (
    "class Job:\n"
    "    def handle(self, event):\n"
    "        start = now()\n"
    "        data = load(event)\n"
    "        return data\n"
)
STUBS = (
    "class Store(Protocol):\n"
    "    def get(self, key):\n"
    "        ...\n"
    "\n"
    "    def put(self, key, data):\n"
    "        ...\n"
)


def run(data: str, search: str, replace: str) -> Changeset:
    text = f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"
    return apply(search_replace.parse(text, "f.py"), {"f.py": data.encode()})


def content(out: Changeset) -> str:
    got = out.changes[0].content
    assert got is not None
    return got.decode()


def test_indented_dots_skip_unchanged_lines() -> None:
    out = run(
        JOB,
        "    def handle(self, event):\n        ...\n        return data",
        "    def handle(self, event, ctx):\n        ...\n        return data, ctx",
    )
    assert content(out) == JOB.replace("event):", "event, ctx):").replace(
        "return data", "return data, ctx"
    )
    assert [(r.start_line, r.end_line) for r in out.report] == [(2, 2), (5, 5)]


def test_dots_at_block_edges_keep_the_rest() -> None:
    out = run(
        JOB,
        "        ...\n        data = load(event)\n        ...",
        "        ...\n        data = load(event, strict=True)\n        ...",
    )
    assert content(out) == JOB.replace("load(event)", "load(event, strict=True)")


def test_tab_indented_dots_are_elision_too() -> None:
    data = "def f():\n\ta = 1\n\tb = 2\n\treturn a\n"
    out = run(data, "def f():\n\t...\n\treturn a", "def f(x):\n\t...\n\treturn a + x")
    assert content(out) == "def f(x):\n\ta = 1\n\tb = 2\n\treturn a + x\n"


def test_dots_that_are_in_the_file_are_text() -> None:
    out = run(
        STUBS,
        "    def put(self, key, data):\n        ...",
        "    @abstractmethod\n    def put(self, key, data):\n        ...",
    )
    assert content(out) == STUBS.replace("    def put", "    @abstractmethod\n    def put")
    assert out.report[0].start_line == 5


def test_stub_body_replaced_as_text() -> None:
    out = run(
        STUBS, "    def get(self, key):\n        ...", "    def get(self, key):\n        return b''"
    )
    assert content(out) == STUBS.replace("...", "return b''", 1)


def test_ambiguous_text_reading_is_refused_not_read_as_elision() -> None:
    data = "def a():\n    ...\n\ndef b():\n    ...\n"
    with pytest.raises(MatchAmbiguous):
        run(data, "    ...", "    pass")


@pytest.mark.parametrize(
    ("search", "replace"),
    [
        # REPLACE has no '...': the lines between would be deleted, or the body replaced?
        (
            "    def handle(self, event):\n        ...\n        return data",
            "    def handle(self, event):\n        return None",
        ),
        # REPLACE indents its '...' deeper: the skipped lines would need re-indenting
        (
            "    def handle(self, event):\n        ...\n        return data",
            "    def handle(self, event):\n        with lock:\n            ...\n"
            "            return data",
        ),
        # a REPLACE piece with no SEARCH text to place it
        (
            "    def handle(self, event):\n        ...\n        ...\n        return data",
            "    def handle(self, event):\n        ...\n        log()\n        ...\n"
            "        return data",
        ),
    ],
)
def test_malformed_elision_is_refused_with_a_hint(search: str, replace: str) -> None:
    with pytest.raises(MatchNotFound) as caught:
        run(JOB, search, replace)
    assert "the old text (" in caught.value.message
    assert "put one '...' line at the same place, with the same indentation" in (
        caught.value.hint or ""
    )


def test_failed_elision_reading_says_it_was_tried() -> None:
    with pytest.raises(GitpatchError) as caught:
        run(
            JOB,
            "    def handle(self, event):\n        ...\n        return result",
            "    def handle(self, event, ctx):\n        ...\n        return result",
        )
    err = caught.value
    assert err.code == "match_not_found"
    assert "piece 2 of 2 split by '...'" in err.message
    assert "first line '        return result'" in err.message
    assert "were read as elision" in (err.hint or "")


def test_column_zero_and_indented_elision_together() -> None:
    data = JOB + "\n\ndef helper():\n    x = 1\n    y = 2\n    return x\n"
    text = (
        "<<<<<<< SEARCH\n    def handle(self, event):\n        ...\n        return data\n...\n"
        "def helper():\n    ...\n    return x\n=======\n"
        "    def handle(self, event, ctx):\n        ...\n        return data\n...\n"
        "def helper(z):\n    ...\n    return x + z\n>>>>>>> REPLACE\n"
    )
    out = apply(search_replace.parse(text, "f.py"), {"f.py": data.encode()})
    got = content(out)
    assert "def handle(self, event, ctx):\n        start = now()" in got
    assert got.endswith("def helper(z):\n    x = 1\n    y = 2\n    return x + z\n")


def test_crlf_file_with_indented_elision_keeps_its_endings() -> None:
    out = apply(
        search_replace.parse(
            "<<<<<<< SEARCH\r\n    def handle(self, event):\r\n        ...\r\n"
            "        return data\r\n=======\r\n    def handle(self, event, ctx):\r\n"
            "        ...\r\n        return data\r\n>>>>>>> REPLACE\r\n",
            "f.py",
        ),
        {"f.py": JOB.replace("\n", "\r\n").encode()},
    )
    assert content(out) == JOB.replace("event):", "event, ctx):").replace("\n", "\r\n")
