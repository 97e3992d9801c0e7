"""SEARCH/REPLACE at the ``blank_lines`` level: every shape of blank lines in the file, the old
text and the new text at one spot, with the bytes it must give or the refusal.

``a`` and ``b`` are the lines around the spot; the file has F blank lines between them, SEARCH
has S, and REPLACE says what goes there. Lines the agent adds at a spot where the file has blank
lines SEARCH left out are placed only when the new text makes the place clear (it has one run of
blank lines, or only runs at least as long as the file's, or it replaces the removed lines just
above one for one), or the indentation does (the file dedents across the spot and the added
lines are deeper than the line below, or at its level); otherwise the edit is refused, never
guessed.
"""

from __future__ import annotations

import pytest

from gitpatch.engine import apply
from gitpatch.errors import MatchAmbiguous
from gitpatch.formats import search_replace

REFUSED = None

# (file, SEARCH, REPLACE, expected file or REFUSED)
TABLE = [
    # F=1, S=0: the agent did not see the file's blank line
    ("a\n\nb\n", "a\nb", "a\nB", "a\n\nB\n"),  # untouched spot: kept
    ("a\n\nb\n", "a\nb", "a\n\nB", "a\n\nB\n"),  # the blank the agent adds is the file's
    ("a\n\nb\n", "a\nb", "a\n\n\nB", "a\n\n\nB\n"),  # two asked for: two
    ("a\n\nb\n", "a\nb", "a\n\n# c\nb", "a\n\n# c\nb\n"),  # the case: not doubled
    ("a\n\nb\n", "a\nb", "a\n# c\n\nb", "a\n# c\n\nb\n"),
    ("a\n\nb\n", "a\nb", "a\n\n# c\n\nb", "a\n\n# c\n\nb\n"),
    ("a\n\nb\n", "a\nb", "a\n# c\n\n# d\nb", "a\n# c\n\n# d\nb\n"),  # one inner run
    ("a\n\nb\n", "a\nb", "a\n# c\nb", REFUSED),  # above or below the blank line?
    ("a\n\nb\nc\n", "a\nb\nc", "a\n# x\nb\n# y\nc", REFUSED),
    # F=2, S=0
    ("a\n\n\nb\n", "a\nb", "a\nB", "a\n\n\nB\n"),
    ("a\n\n\nb\n", "a\nb", "a\n\nB", "a\n\n\nB\n"),  # the file's longer run wins
    ("a\n\n\nb\n", "a\nb", "a\n\n# c\nb", "a\n\n\n# c\nb\n"),
    ("a\n\n\nb\n", "a\nb", "a\n\n\n# c\n\n\nb", "a\n\n\n# c\n\n\nb\n"),
    ("a\n\n\nb\n", "a\nb", "a\n\n# c\n\nb", REFUSED),  # which side gets the second blank?
    # the line above the spot is replaced
    ("a\n\nb\n", "a\nb", "A\nb", "A\n\nb\n"),  # one for one: the blank stays below it
    ("a\n\nb\n", "a\nb", "A\n\nX\nb", "A\n\nX\nb\n"),
    ("a\n\nb\n", "a\nb", "A\nX\nb", REFUSED),  # is X part of A's replacement or new?
    ("a\n\nb\n", "a\nb", "a\nB\nX", "a\n\nB\nX\n"),  # the line below replaced: blank above it
    # the indentation says which neighbour the added lines belong to
    (
        "if a:\n    b()\n\nc()\n",
        "    b()\nc()",
        "    b()\n    e()\nc()",
        "if a:\n    b()\n    e()\n\nc()\n",
    ),
    (
        "if a:\n    b()\n\nc()\n",
        "    b()\nc()",
        "    b()\nd()\nc()",
        "if a:\n    b()\n\nd()\nc()\n",
    ),
    ("def f():\n\n    b()\n", "def f():\n    b()", "def f():\n    e()\n    b()", REFUSED),
    ("        x()\n\n    y()\n", "        x()\n    y()", "        x()\nz()\n    y()", REFUSED),
    # lines removed around the spot
    ("x\na\n\nb\n", "x\na\nb", "x\nb", "x\n\nb\n"),
    ("x\na\n\nb\ny\n", "x\na\nb\ny", "x\ny", "x\ny\n"),  # inside a removal: removed too
    # F=0, S=1: the agent quoted a blank line the file lacks
    ("a\nb\n", "a\n\nb", "a\n\nB", "a\nB\n"),
    ("a\nb\n", "a\n\nb", "a\nB", "a\nB\n"),
    ("a\nb\n", "a\n\nb", "a\n\n# c\nb", "a\n# c\nb\n"),
    ("a\nb\n", "\na\nb", "\na\nB", "a\nB\n"),  # a leading blank the file lacks
    # F=3, S=1
    ("a\n\n\n\nb\n", "a\n\nb", "a\n\n# c\n\nb", REFUSED),
    # two spots in one block, each clear on its own
    ("a\n\nb\n\nc\n", "a\nb\nc", "a\n\n# x\nb\n# y\n\nc", "a\n\n# x\nb\n# y\n\nc\n"),
    # F=2, S=1: one of the file's two blank lines was quoted
    ("a\n\n\nb\n", "a\n\nb", "a\n\nB", "a\n\n\nB\n"),
    ("a\n\n\nb\n", "a\n\nb", "a\n\n# c\nb", "a\n\n\n# c\nb\n"),
    ("a\n\n\nb\n", "a\n\nb", "a\n# c\n\nb", "a\n# c\n\n\nb\n"),
    ("a\n\n\nb\n", "a\n\nb", "a\n\n# c\n\nb", "a\n\n# c\n\nb\n"),
]


def _run(data: str, search: str, replace: str) -> bytes:
    text = f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"
    out = apply(search_replace.parse(text, "f.py"), {"f.py": data.encode()})
    assert out.report[0].level == "blank_lines"
    content = out.changes[0].content
    assert content is not None
    return content


@pytest.mark.parametrize(("data", "search", "replace", "expected"), TABLE)
def test_blank_line_shapes(data: str, search: str, replace: str, expected: str | None) -> None:
    if expected is REFUSED:
        with pytest.raises(MatchAmbiguous) as caught:
            _run(data, search, replace)
        assert "blank line" in caught.value.message
        assert caught.value.details["level"] == "blank_lines"
        assert caught.value.details["path"] == "f.py"
        return
    assert _run(data, search, replace) == expected.encode()


def test_refusal_names_the_blank_lines_and_how_to_retry() -> None:
    with pytest.raises(MatchAmbiguous) as caught:
        _run("x = 1\n\n\ny = 2\n", "x = 1\ny = 2", "x = 1\nz = 3\ny = 2")
    err = caught.value
    assert err.message == (
        "f.py: SEARCH block 1 (edit line 1): the file has 2 blank lines at lines 2-3 that the "
        "old text leaves out, and the new text adds lines right there: it is unclear whether "
        "they go above or below the blank lines"
    )
    assert "Include the file's blank line(s) in the old text" in (err.hint or "")
    assert err.details["blank_lines"] == [2, 3]


def test_the_same_edit_with_the_blank_line_quoted_applies() -> None:
    got = _run_exact("x = 1\n\ny = 2\n", "x = 1\n\ny = 2", "x = 1\nz = 3\n\ny = 2")
    assert got == b"x = 1\nz = 3\n\ny = 2\n"


def _run_exact(data: str, search: str, replace: str) -> bytes:
    text = f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"
    out = apply(search_replace.parse(text, "f.py"), {"f.py": data.encode()})
    content = out.changes[0].content
    assert content is not None
    return content


def test_crlf_file_keeps_its_endings_on_the_blank_lines() -> None:
    out = apply(
        search_replace.parse("<<<<<<< SEARCH\na\nb\n=======\na\n\n# c\nb\n>>>>>>> REPLACE\n", "f"),
        {"f": b"a\r\n\r\nb\r\n"},
    )
    assert out.changes[0].content == b"a\r\n\r\n# c\r\nb\r\n"
