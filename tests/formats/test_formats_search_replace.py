"""SEARCH/REPLACE parser: accepted forms give the expected IR, refusals name code, text and line."""

from __future__ import annotations

import pytest

from gitpatch.core.model import Proposal, SearchReplace, UpdateFile
from gitpatch.errors import InvalidArguments
from gitpatch.formats import search_replace
from tests.formats.formats_kit import assert_refused_at

S, D, R = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"


def block(search: str, replace: str, s: str = S, d: str = D, r: str = R) -> str:
    """One block with the given marker lines."""
    return f"{s}\n{search}{d}\n{replace}{r}\n"


def sr(search: tuple[str, ...], replace: tuple[str, ...], line: int, number: int) -> SearchReplace:
    return SearchReplace(search, replace, source_line=line, block=number)


# (id, text, expected edits for path "f.py")
SINGLE = [
    ("one block", block("a\n", "b\n"), [sr(("a",), ("b",), 1, 1)]),
    ("multi-line", block("a\nb\n", "c\n"), [sr(("a", "b"), ("c",), 1, 1)]),
    ("empty replace deletes", block("a\n", ""), [sr(("a",), (), 1, 1)]),
    (
        "two blocks with blank lines between",
        block("a\n", "b\n") + "\n\n" + block("c\n", "d\n"),
        [sr(("a",), ("b",), 1, 1), sr(("c",), ("d",), 8, 2)],
    ),
    (
        "5 marker chars",
        block("a\n", "b\n", "<<<<< SEARCH", "=====", ">>>>> REPLACE"),
        [sr(("a",), ("b",), 1, 1)],
    ),
    (
        "9 marker chars",
        block("a\n", "b\n", "<<<<<<<<< SEARCH", "=========", ">>>>>>>>> REPLACE"),
        [sr(("a",), ("b",), 1, 1)],
    ),
    (
        "trailing spaces on markers",
        block("a\n", "b\n", S + "  ", D + " \t", R + " "),
        [sr(("a",), ("b",), 1, 1)],
    ),
    (
        "lowercase words",
        block("a\n", "b\n", "<<<<<<< search", D, ">>>>>>> replace"),
        [sr(("a",), ("b",), 1, 1)],
    ),
    ("code fences", "```python\n" + block("a\n", "b\n") + "```\n", [sr(("a",), ("b",), 2, 1)]),
    ("tilde fences", "~~~\n" + block("a\n", "b\n") + "~~~\n", [sr(("a",), ("b",), 2, 1)]),
    ("CRLF edit text", block("a\n", "b\n").replace("\n", "\r\n"), [sr(("a",), ("b",), 1, 1)]),
    ("no final newline", block("a\n", "b\n").rstrip("\n"), [sr(("a",), ("b",), 1, 1)]),
    ("indentation kept", block("    x = 1\n\n", "\ty\n"), [sr(("    x = 1", ""), ("\ty",), 1, 1)]),
    ("path line repeating the path", "f.py\n" + block("a\n", "b\n"), [sr(("a",), ("b",), 2, 1)]),
    ("decorated path line", "**`f.py`**:\n" + block("a\n", "b\n"), [sr(("a",), ("b",), 2, 1)]),
    ("path line with directory", "src/f.py\n" + block("a\n", "b\n"), [sr(("a",), ("b",), 2, 1)]),
    (
        "elision splits into pieces",
        block("a\n...\nz\n", "A\n...\nZ\n"),
        [sr(("a",), ("A",), 1, 1), sr(("z",), ("Z",), 1, 1)],
    ),
    (
        "elision with trailing space and empty outer piece",
        block("...\na\n... \nz\n", "...\nA\n...\nZ\n"),
        [sr(("a",), ("A",), 1, 1), sr(("z",), ("Z",), 1, 1)],
    ),
    (
        "indented ... is code",
        block("def f():\n    ...\n", "def f():\n    pass\n"),
        [sr(("def f():", "    ..."), ("def f():", "    pass"), 1, 1)],
    ),
    (
        "narrower '=' line in REPLACE is content",
        block("Title\n", "Title\n=====\n"),
        [sr(("Title",), ("Title", "====="), 1, 1)],
    ),
    (
        "wider markers around '=======' lines",
        block("a\n=======\n", "b\n=======\n", "<<<<<<<<< SEARCH", "=========", ">>>>>>>>> REPLACE"),
        [sr(("a", "======="), ("b", "======="), 1, 1)],
    ),
    ("unicode and tabs", block("naïve\t“q”\n", "café\n"), [sr(("naïve\t“q”",), ("café",), 1, 1)]),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in SINGLE], ids=[c[0] for c in SINGLE])
def test_single_file_blocks(text: str, expected: list[SearchReplace]) -> None:
    got = search_replace.parse(text, "f.py")
    assert got == Proposal((UpdateFile("f.py", tuple(expected)),), format="search_replace")


MULTI = [
    (
        "two files",
        "a.py\n" + block("x\n", "y\n") + "b/c.py\n" + block("p\n", "q\n"),
        [("a.py", [sr(("x",), ("y",), 2, 1)]), ("b/c.py", [sr(("p",), ("q",), 8, 2)])],
    ),
    (
        "same path merges in order",
        "a.py\n"
        + block("x\n", "y\n")
        + "b.py\n"
        + block("p\n", "q\n")
        + "./a.py\n"
        + block("z\n", "w\n"),
        [
            ("a.py", [sr(("x",), ("y",), 2, 1), sr(("z",), ("w",), 14, 3)]),
            ("b.py", [sr(("p",), ("q",), 8, 2)]),
        ],
    ),
    (
        "path inside or outside the fence",
        "a.py\n```python\n"
        + block("x\n", "y\n")
        + "```\n\n```\nb.py\n"
        + block("p\n", "q\n")
        + "```\n",
        [("a.py", [sr(("x",), ("y",), 3, 1)]), ("b.py", [sr(("p",), ("q",), 12, 2)])],
    ),
    (
        "block without its own path reuses the previous one",
        "a.py\n" + block("x\n", "y\n") + "\n" + block("p\n", "q\n"),
        [("a.py", [sr(("x",), ("y",), 2, 1), sr(("p",), ("q",), 8, 2)])],
    ),
    (
        "path with spaces",
        "my dir/a b.py\n" + block("x\n", "y\n"),
        [("my dir/a b.py", [sr(("x",), ("y",), 2, 1)])],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in MULTI], ids=[c[0] for c in MULTI])
def test_multi_file_form(text: str, expected: list[tuple[str, list[SearchReplace]]]) -> None:
    got = search_replace.parse(text)
    ops = tuple(UpdateFile(p, tuple(e)) for p, e in expected)
    assert got == Proposal(ops, format="search_replace")


# (id, text, path, code, message fragment, line)
ERRORS = [
    (
        "two dividers of the marker's width",
        block("a\n", "=======\nb\n"),
        "f.py",
        "invalid_patch",
        "several divider lines (lines 3, 4)",
        1,
    ),
    ("nothing", "", "f.py", "invalid_patch", "no SEARCH/REPLACE block", None),
    ("only prose", "\n```\n```\n", "f.py", "invalid_patch", "no SEARCH/REPLACE block", None),
    ("unterminated, no divider", f"{S}\na\n", "f.py", "invalid_patch", "unterminated", 1),
    (
        "unterminated, no REPLACE",
        f"x\n{S}\na\n{D}\nb\n".replace("x\n", ""),
        "f.py",
        "invalid_patch",
        "no '>>>>>>> REPLACE'",
        1,
    ),
    (
        "unterminated before next block",
        f"{S}\na\n{D}\nb\n" + block("c\n", "d\n"),
        "f.py",
        "invalid_patch",
        "unterminated block",
        5,
    ),
    ("missing divider", f"{S}\na\n{R}\n", "f.py", "invalid_patch", "missing '=======' divider", 3),
    ("search before divider", f"{S}\na\n{S}\n", "f.py", "invalid_patch", "no '=======' divider", 3),
    (
        "stray text between blocks",
        block("a\n", "b\n") + "Now the second:\n" + block("c\n", "d\n"),
        "f.py",
        "invalid_patch",
        "text outside a SEARCH/REPLACE block: 'Now the second:'",
        6,
    ),
    (
        "stray text before",
        "Here you go\n" + block("a\n", "b\n"),
        "f.py",
        "invalid_patch",
        "text outside",
        1,
    ),
    ("other file's path", "g.py\n" + block("a\n", "b\n"), "f.py", "invalid_patch", "'g.py'", 1),
    ("stray divider", f"{D}\n", "f.py", "invalid_patch", "outside a block", 1),
    (
        "stray REPLACE",
        block("a\n", "b\n") + f"{R}\n",
        "f.py",
        "invalid_patch",
        "outside a block",
        6,
    ),
    (
        "4 marker chars",
        "<<<< SEARCH\na\n====\nb\n>>>> REPLACE\n",
        "f.py",
        "invalid_patch",
        "outside a block",
        1,
    ),
    ("10 marker chars", "<<<<<<<<<< SEARCH\n", "f.py", "invalid_patch", "outside a block", 1),
    ("empty SEARCH", block("", "b\n"), "f.py", "invalid_patch", "empty SEARCH", 1),
    ("blank SEARCH", block("\n  \n", "b\n"), "f.py", "invalid_patch", "empty SEARCH", 1),
    (
        "second block empty",
        block("a\n", "b\n") + block("", "b\n"),
        "f.py",
        "invalid_patch",
        "empty SEARCH",
        6,
    ),
    (
        "elision one side",
        block("a\n...\nb\n", "c\n"),
        "f.py",
        "invalid_patch",
        "'...' appears 1 time(s) in SEARCH but 0",
        1,
    ),
    (
        "elision counts differ",
        block("a\n...\nb\n", "a\n...\nb\n...\nc\n"),
        "f.py",
        "invalid_patch",
        "in REPLACE",
        1,
    ),
    ("elision only", block("...\n", "...\n"), "f.py", "invalid_patch", "empty SEARCH", 1),
    (
        "elision piece without search",
        block("...\na\n", "new\n...\nA\n"),
        "f.py",
        "invalid_patch",
        "no SEARCH text",
        1,
    ),
    ("multi: no path", block("a\n", "b\n"), None, "invalid_patch", "no path line", 1),
    (
        "multi: two text lines",
        "Change:\na.py\n" + block("a\n", "b\n"),
        None,
        "invalid_patch",
        "'Change:' and then 'a.py'",
        1,
    ),
    (
        "multi: path with no block",
        "a.py\n" + block("a\n", "b\n") + "b.py\n",
        None,
        "invalid_patch",
        "not followed by a SEARCH/REPLACE block",
        7,
    ),
    (
        "multi: decoration only",
        "**\n" + block("a\n", "b\n"),
        None,
        "invalid_patch",
        "text outside",
        1,
    ),
]


@pytest.mark.parametrize(
    ("text", "path", "code", "fragment", "line"),
    [c[1:] for c in ERRORS],
    ids=[c[0] for c in ERRORS],
)
def test_refusals(text: str, path: str | None, code: str, fragment: str, line: int | None) -> None:
    assert_refused_at(lambda: search_replace.parse(text, path), code, fragment, line)


def test_non_string_text_is_invalid_arguments() -> None:
    with pytest.raises(InvalidArguments):
        search_replace.parse(b"<<<<<<< SEARCH", "f.py")  # type: ignore[arg-type]


def test_fenced_marker_text_inside_a_block_is_content() -> None:
    text = block("```\na\n```\n", "b\n")
    (op,) = search_replace.parse(text, "f.py").operations
    assert isinstance(op, UpdateFile)
    assert op.edits == (sr(("```", "a", "```"), ("b",), 1, 1),)
