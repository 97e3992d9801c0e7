"""apply_patch parser: the grammar and its leniency give the expected IR; refusals name the line."""

from __future__ import annotations

import pytest

from gitpatch.core.model import AddFile, DeleteFile, FileOp, Hunk, Proposal, UpdateFile
from gitpatch.errors import GitpatchError, InvalidArguments
from gitpatch.formats import apply_patch
from tests.formats.formats_kit import assert_refused_at, hl


def patch(*body: str) -> str:
    """A patch with the given body lines between the Begin and End markers."""
    return "\n".join(("*** Begin Patch", *body, "*** End Patch")) + "\n"


UPDATE_CFG = (
    "*** Update File: config.py",
    "@@",
    " API_HOST = 'localhost'",
    "-MAX_RETRIES = 1",
    "+MAX_RETRIES = 3",
    " TIMEOUT = 10",
)
CFG_HUNK = Hunk(
    hl(" API_HOST = 'localhost'", "-MAX_RETRIES = 1", "+MAX_RETRIES = 3", " TIMEOUT = 10"),
    source_line=3,
)

# (id, text, expected operations)
CASES: list[tuple[str, str, list[FileOp]]] = [
    ("spec example", patch(*UPDATE_CFG), [UpdateFile("config.py", (CFG_HUNK,))]),
    (
        "anchor",
        patch("*** Update File: src/config.py", "@@ def load_config", "-a", "+b", " c"),
        [
            UpdateFile(
                "src/config.py",
                (Hunk(hl("-a", "+b", " c"), anchor="def load_config", source_line=3),),
            )
        ],
    ),
    (
        "line hint",
        patch("*** Update File: f", "@@ 42", " a", "+b"),
        [UpdateFile("f", (Hunk(hl(" a", "+b"), line_hint=42, source_line=3),))],
    ),
    (
        "unified-style header gives hint and anchor",
        patch("*** Update File: f", "@@ -12,3 +12,4 @@ class A:", " a", "+b"),
        [UpdateFile("f", (Hunk(hl(" a", "+b"), anchor="class A:", line_hint=12, source_line=3),))],
    ),
    (
        "anchor wrapped in @@ ... @@",
        patch("*** Update File: f", "@@ def f() @@", " a", "+b"),
        [UpdateFile("f", (Hunk(hl(" a", "+b"), anchor="def f()", source_line=3),))],
    ),
    (
        "missing first @@",
        patch("*** Update File: f", " a", "-b", "+c"),
        [UpdateFile("f", (Hunk(hl(" a", "-b", "+c"), source_line=3),))],
    ),
    (
        "several hunks and a locator",
        patch("*** Update File: f", "@@ class A", " def x", "@@", "-a", "+b", "@@ 9", " z"),
        [
            UpdateFile(
                "f",
                (
                    Hunk(hl(" def x"), anchor="class A", source_line=3),
                    Hunk(hl("-a", "+b"), source_line=5),
                    Hunk(hl(" z"), line_hint=9, source_line=8),
                ),
            )
        ],
    ),
    (
        "end of file",
        patch("*** Update File: f", "@@", " last", "+more", "*** End of File"),
        [UpdateFile("f", (Hunk(hl(" last", "+more"), end_of_file=True, source_line=3),))],
    ),
    (
        "empty line inside a hunk is empty context, trailing ones are dropped",
        patch("*** Update File: f", "@@", " a", "", "-b", "+c", "", ""),
        [UpdateFile("f", (Hunk(hl(" a", " ", "-b", "+c"), source_line=3),))],
    ),
    (
        "single space line is empty context even at the end",
        patch("*** Update File: f", "@@", "-b", "+c", " "),
        [UpdateFile("f", (Hunk(hl("-b", "+c", " "), source_line=3),))],
    ),
    (
        "add file",
        patch("*** Add File: docs/new.md", "+# Title", "+", "+body"),
        [AddFile("docs/new.md", "# Title\n\nbody\n")],
    ),
    (
        "add file: blank lines inside kept, trailing dropped",
        patch("*** Add File: n.txt", "+a", "", "+b", "", ""),
        [AddFile("n.txt", "a\n\nb\n")],
    ),
    ("delete file", patch("*** Delete File: old.txt"), [DeleteFile("old.txt")]),
    (
        "move without hunks",
        patch("*** Update File: src/old.py", "*** Move to: src/new.py"),
        [UpdateFile("src/old.py", (), move_to="src/new.py")],
    ),
    (
        "move with hunks",
        patch("*** Update File: src/old.py", "*** Move to: lib/new.py", "@@", "-A", "+B"),
        [UpdateFile("src/old.py", (Hunk(hl("-A", "+B"), source_line=4),), move_to="lib/new.py")],
    ),
    (
        "several operations in order",
        patch("*** Add File: a", "+1", "*** Delete File: b", *UPDATE_CFG),
        [
            AddFile("a", "1\n"),
            DeleteFile("b"),
            UpdateFile("config.py", (Hunk(CFG_HUNK.lines, source_line=6),)),
        ],
    ),
    (
        "whitespace and case around markers",
        "  *** begin patch  \n*** update file:   f  \n@@\n-a\n+b\n   *** END PATCH\n",
        [UpdateFile("f", (Hunk(hl("-a", "+b"), source_line=3),))],
    ),
    (
        "heredoc wrapper",
        "apply_patch <<'EOF'\n" + patch("*** Delete File: x") + "EOF\n",
        [DeleteFile("x")],
    ),
    ("bare heredoc", '<<"PATCH"\n' + patch("*** Delete File: x") + "PATCH", [DeleteFile("x")]),
    ("code fences", "```\n" + patch("*** Delete File: x") + "```\n", [DeleteFile("x")]),
    (
        "CRLF",
        patch("*** Update File: f", "@@", "-a", "+b").replace("\n", "\r\n"),
        [UpdateFile("f", (Hunk(hl("-a", "+b"), source_line=3),))],
    ),
    (
        "lines that look like markers inside a hunk stay content",
        patch("*** Update File: f", "@@", "-*** End Patch", "+@@ x", " -- y"),
        [UpdateFile("f", (Hunk(hl("-*** End Patch", "+@@ x", " -- y"), source_line=3),))],
    ),
    (
        "blank lines between operations",
        patch("*** Delete File: a", "", "*** Delete File: b", ""),
        [DeleteFile("a"), DeleteFile("b")],
    ),
    (
        "unicode and tabs kept",
        patch("*** Update File: ü.txt", "@@", "-\t“x”", '+\t"x"'),
        [UpdateFile("ü.txt", (Hunk(hl("-\t“x”", '+\t"x"'), source_line=3),))],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_parses(text: str, expected: list[FileOp]) -> None:
    assert apply_patch.parse(text) == Proposal(tuple(expected), format="apply_patch")


# (id, text, code, message fragment, line)
ERRORS: list[tuple[str, str, str, str, int | None]] = [
    ("empty", "", "invalid_patch", "must start with '*** Begin Patch', found nothing", None),
    ("no begin", "*** Update File: f\n", "invalid_patch", "must start with '*** Begin Patch'", 1),
    ("prose first", "Here:\n" + patch("*** Delete File: a"), "invalid_patch", "found 'Here:'", 1),
    (
        "no end",
        "*** Begin Patch\n*** Delete File: a\n",
        "invalid_patch",
        "without '*** End Patch'",
        2,
    ),
    (
        "cut off in a hunk",
        "*** Begin Patch\n*** Update File: f\n@@\n-a\n",
        "invalid_patch",
        "without '*** End Patch'",
        4,
    ),
    ("no operations", patch(), "invalid_patch", "no file operation", 2),
    (
        "text after end",
        patch("*** Delete File: a") + "thanks\n",
        "invalid_patch",
        "text after '*** End Patch'",
        4,
    ),
    (
        "unknown line between ops",
        patch("hello"),
        "invalid_patch",
        "expected a file operation, found 'hello'",
        2,
    ),
    ("missing colon", patch("*** Update File f", "-a"), "invalid_patch", "needs a colon", 2),
    ("missing path", patch("*** Add File:", "+a"), "invalid_patch", "needs a colon and a path", 2),
    ("add without lines", patch("*** Add File: n"), "invalid_patch", "has no content lines", 2),
    (
        "add with unprefixed line",
        patch("*** Add File: n", "+a", "b"),
        "invalid_patch",
        "every content line starts with '+'",
        4,
    ),
    (
        "delete with body",
        patch("*** Delete File: d", "-x"),
        "invalid_patch",
        "takes no content lines",
        3,
    ),
    (
        "update with nothing",
        patch("*** Update File: f"),
        "invalid_patch",
        "no hunks and no move",
        2,
    ),
    (
        "update then another op",
        patch("*** Update File: f", "*** Delete File: g"),
        "invalid_patch",
        "no hunks and no move",
        2,
    ),
    (
        "hunk with no lines",
        patch("*** Update File: f", "@@ class A", "@@ def b", " x"),
        "invalid_patch",
        "this hunk has no lines",
        3,
    ),
    (
        "trailing empty hunk",
        patch("*** Update File: f", "@@", " x", "@@"),
        "invalid_patch",
        "this hunk has no lines",
        5,
    ),
    (
        "hunk of only blank lines",
        patch("*** Update File: f", "@@", "", ""),
        "invalid_patch",
        "this hunk has no lines",
        3,
    ),
    (
        "bad hunk line",
        patch("*** Update File: f", "@@", " a", "b"),
        "invalid_patch",
        "invalid hunk line 'b' (if it is an unchanged line, write it with one leading space: ' b')",
        5,
    ),
    (
        "tab-indented hunk line",
        patch("*** Update File: f", "@@", "\tb"),
        "invalid_patch",
        "tab or other whitespace",
        4,
    ),
    (
        "unknown marker in hunk",
        patch("*** Update File: f", "@@", " a", "*** Rename File: g"),
        "invalid_patch",
        "unknown marker",
        5,
    ),
    (
        "first line not a hunk",
        patch("*** Update File: f", "x"),
        "invalid_patch",
        "expected '@@' or a hunk line",
        3,
    ),
    (
        "zero line hint",
        patch("*** Update File: f", "@@ 0", " a"),
        "invalid_patch",
        "line numbers start at 1",
        3,
    ),
    (
        "move not after update",
        patch("*** Update File: f", "@@", "-a", "*** Move to: g"),
        "invalid_patch",
        "out of place",
        5,
    ),
    (
        "end of file outside hunk",
        patch("*** Update File: f", "*** End of File"),
        "invalid_patch",
        "out of place",
        3,
    ),
    ("move alone", patch("*** Move to: g"), "invalid_patch", "must directly follow", 2),
    (
        "move onto itself",
        patch("*** Update File: a/f", "*** Move to: a/./f"),
        "invalid_patch",
        "own path",
        3,
    ),
    (
        "two ops on one path",
        patch("*** Delete File: f", "*** Add File: ./f", "+x"),
        "invalid_patch",
        "already used by the operation at line 2",
        3,
    ),
    (
        "two updates of one path",
        patch(*UPDATE_CFG, *UPDATE_CFG),
        "invalid_patch",
        "two operations on one path",
        8,
    ),
    (
        "move onto another op's path",
        patch("*** Add File: g", "+x", "*** Update File: f", "*** Move to: g"),
        "invalid_patch",
        "'g' is already used",
        5,
    ),
    (
        "op on a move destination",
        patch("*** Update File: f", "*** Move to: g", "*** Delete File: g"),
        "invalid_patch",
        "already used by the operation at line 3",
        4,
    ),
    ("begin with argument", "*** Begin Patch now\n", "invalid_patch", "must start with", 1),
    (
        "end of file with extra text",
        patch("*** Update File: f", "@@", " a", "*** End of File x"),
        "invalid_patch",
        "invalid hunk line",
        5,
    ),
]


@pytest.mark.parametrize(
    ("text", "code", "fragment", "line"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS]
)
def test_refusals(text: str, code: str, fragment: str, line: int | None) -> None:
    assert_refused_at(lambda: apply_patch.parse(text), code, fragment, line)


def test_every_refusal_shows_a_valid_form() -> None:
    """Each hint names a valid line, so the model can rewrite its patch."""
    for _, text, *_ in ERRORS:
        with pytest.raises(GitpatchError) as info:
            apply_patch.parse(text)
        hint = info.value.hint or ""
        assert any(token in hint for token in ("***", "@@", "'+'", "' '")), hint


def test_non_string_is_invalid_arguments() -> None:
    with pytest.raises(InvalidArguments):
        apply_patch.parse(None)  # type: ignore[arg-type]
