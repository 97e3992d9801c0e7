"""Unified diff parser: git and ``diff -u`` output give the expected IR; refusals name the line."""

from __future__ import annotations

import pytest

from gitpatch.core.model import AddFile, DeleteFile, FileOp, Hunk, Proposal, UpdateFile
from gitpatch.formats import unified_diff
from tests.formats.formats_kit import assert_refused_at, hl

NO_NL = "\\ No newline at end of file"


def lines(*rows: str) -> str:
    return "\n".join(rows) + "\n"


GIT_UPDATE = lines(
    "diff --git a/f.txt b/f.txt",
    "index de98044..a7bc997 100644",
    "--- a/f.txt",
    "+++ b/f.txt",
    "@@ -1,3 +1,4 @@",
    " a",
    "-b",
    "+B",
    " c",
    "+d",
)
F_HUNK = Hunk(hl(" a", "-b", "+B", " c", "+d"), line_hint=1, source_line=5)

# (id, diff, expected operations)
CASES: list[tuple[str, str, list[FileOp]]] = [
    ("git update", GIT_UPDATE, [UpdateFile("f.txt", (F_HUNK,))]),
    (
        "diff -u with timestamps",
        lines(
            "--- src/a.c\t2026-01-01 10:00:00.000000000 +0000",
            "+++ src/a.c\t2026-01-02 10:00:00.000000000 +0000",
            "@@ -10,2 +10,2 @@ int main(void)",
            " x",
            "-y",
            "+z",
        ),
        [UpdateFile("src/a.c", (Hunk(hl(" x", "-y", "+z"), line_hint=10, source_line=3),))],
    ),
    (
        "timestamp after a space",
        lines(
            "--- a.txt 2026-01-01 10:00:00 +0000",
            "+++ a.txt 2026-01-01 11:00:00 +0000",
            "@@ -1 +1 @@",
            "-a",
            "+b",
        ),
        [UpdateFile("a.txt", (Hunk(hl("-a", "+b"), line_hint=1, source_line=3),))],
    ),
    (
        "different names take the new one",
        lines("--- f.py.orig", "+++ f.py", "@@ -3 +3 @@", "-a", "+b"),
        [UpdateFile("f.py", (Hunk(hl("-a", "+b"), line_hint=3, source_line=3),))],
    ),
    (
        "prefix kept when only one side has it",
        lines("--- a/x", "+++ x", "@@ -1 +1 @@", "-a", "+b"),
        [UpdateFile("x", (Hunk(hl("-a", "+b"), line_hint=1, source_line=3),))],
    ),
    (
        "new file",
        lines(
            "diff --git a/n.txt b/n.txt",
            "new file mode 100644",
            "index 0000000..07f33c4",
            "--- /dev/null",
            "+++ b/n.txt",
            "@@ -0,0 +1,2 @@",
            "+new",
            "+file",
        ),
        [AddFile("n.txt", "new\nfile\n")],
    ),
    (
        "new file without newline at end",
        lines(
            "--- /dev/null", "+++ b/n.txt", "@@ -0,0 +1 @@", "+x", "\\ No newline at end of file"
        ),
        [AddFile("n.txt", "x")],
    ),
    (
        "new empty file",
        lines("diff --git a/e.txt b/e.txt", "new file mode 100644", "index 0000000..e69de29"),
        [AddFile("e.txt", "")],
    ),
    (
        "deleted file",
        lines(
            "diff --git a/g.txt b/g.txt",
            "deleted file mode 100644",
            "index abaddc0..0000000",
            "--- a/g.txt",
            "+++ /dev/null",
            "@@ -1 +0,0 @@",
            "-del",
        ),
        [DeleteFile("g.txt")],
    ),
    (
        "deleted by /dev/null only",
        lines("--- a/g", "+++ /dev/null", "@@ -1 +0,0 @@", "-x"),
        [DeleteFile("g")],
    ),
    (
        "pure rename",
        lines(
            "diff --git a/mv.txt b/moved.txt",
            "similarity index 100%",
            "rename from mv.txt",
            "rename to moved.txt",
        ),
        [UpdateFile("mv.txt", (), move_to="moved.txt")],
    ),
    (
        "rename with changes and quoted unicode name",
        lines(
            'diff --git a/old.txt "b/new dir \\303\\251.txt"',
            "similarity index 66%",
            "rename from old.txt",
            'rename to "new dir \\303\\251.txt"',
            "index b77b4eb..04ec35a 100644",
            "--- a/old.txt",
            '+++ "b/new dir \\303\\251.txt"\t',
            "@@ -1,2 +1,3 @@",
            " x",
            " y",
            "+z",
        ),
        [
            UpdateFile(
                "old.txt",
                (Hunk(hl(" x", " y", "+z"), line_hint=1, source_line=8),),
                move_to="new dir é.txt",
            )
        ],
    ),
    (
        "no newline on both sides",
        lines(
            "--- a/n",
            "+++ b/n",
            "@@ -1 +1 @@",
            "-nonl",
            "\\ No newline at end of file",
            "+nonl2",
            "\\ No newline at end of file",
        ),
        [
            UpdateFile(
                "n", (Hunk(hl("-nonl", "+nonl2"), line_hint=1, end_of_file=True, source_line=3),)
            )
        ],
    ),
    (
        "no newline after a context line",
        lines(
            "--- a/n",
            "+++ b/n",
            "@@ -1,2 +1,2 @@",
            "-a",
            "+b",
            " end",
            "\\ No newline at end of file",
        ),
        [
            UpdateFile(
                "n", (Hunk(hl("-a", "+b", " end"), line_hint=1, end_of_file=True, source_line=3),)
            )
        ],
    ),
    (
        "several files, a mode-only change kept, preamble ignored",
        "commit 123\nAuthor: x\n\n    message\n\n"
        + lines("diff --git a/k.sh b/k.sh", "old mode 100644", "new mode 100755")
        + GIT_UPDATE
        + lines("--- a/h", "+++ b/h", "@@ -5,1 +5,1 @@", "-p", "+q"),
        [
            UpdateFile("k.sh", mode=0o100755),
            UpdateFile("f.txt", (Hunk(F_HUNK.lines, line_hint=1, source_line=13),)),
            UpdateFile("h", (Hunk(hl("-p", "+q"), line_hint=5, source_line=21),)),
        ],
    ),
    (
        "mode change only",
        lines("diff --git a/k b/k", "old mode 100644", "new mode 100755"),
        [UpdateFile("k", mode=0o100755)],
    ),
    (
        "an executable new file",
        lines("diff --git a/r.sh b/r.sh", "new file mode 100755", "--- /dev/null", "+++ b/r.sh")
        + lines("@@ -0,0 +1 @@", "+run"),
        [AddFile("r.sh", "run\n", mode=0o100755)],
    ),
    (
        "two hunks",
        lines(
            "--- a/f",
            "+++ b/f",
            "@@ -1,2 +1,2 @@",
            " a",
            "-b",
            "+c",
            "@@ -20,2 +20,2 @@",
            " y",
            "-z",
            "+Z",
        ),
        [
            UpdateFile(
                "f",
                (
                    Hunk(hl(" a", "-b", "+c"), line_hint=1, source_line=3),
                    Hunk(hl(" y", "-z", "+Z"), line_hint=20, source_line=7),
                ),
            )
        ],
    ),
    (
        "bare @@ header",
        lines("--- a/f", "+++ b/f", "@@", " a", "-b", "+c"),
        [UpdateFile("f", (Hunk(hl(" a", "-b", "+c"), source_line=3),))],
    ),
    (
        "counts that disagree: the body is read as written",
        lines("--- a/f", "+++ b/f", "@@ -1,9 +1,9 @@", " a", "-b", "+c"),
        [UpdateFile("f", (Hunk(hl(" a", "-b", "+c"), line_hint=1, source_line=3),))],
    ),
    (
        "blank context line with its space stripped, counted",
        lines("--- a/f", "+++ b/f", "@@ -1,3 +1,3 @@", " a", "", "-b", "+c"),
        [UpdateFile("f", (Hunk(hl(" a", " ", "-b", "+c"), line_hint=1, source_line=3),))],
    ),
    (
        "trailing blank lines dropped",
        lines(
            "--- a/f",
            "+++ b/f",
            "@@ -1,2 +1,2 @@",
            " a",
            "-b",
            "+c",
            "",
            "",
            "--- a/g",
            "+++ b/g",
            "@@ -1 +1 @@",
            "-x",
            "+y",
            "",
        ),
        [
            UpdateFile("f", (Hunk(hl(" a", "-b", "+c"), line_hint=1, source_line=3),)),
            UpdateFile("g", (Hunk(hl("-x", "+y"), line_hint=1, source_line=11),)),
        ],
    ),
    (
        "uncounted trailing blank dropped",
        lines("--- a/f", "+++ b/f", "@@", " a", "-b", "+c", "", ""),
        [UpdateFile("f", (Hunk(hl(" a", "-b", "+c"), source_line=3),))],
    ),
    (
        "format-patch signature ends the hunk",
        lines("--- a/f", "+++ b/f", "@@ -1 +1 @@", "-a", "+b", "-- ", "2.39.2", ""),
        [UpdateFile("f", (Hunk(hl("-a", "+b"), line_hint=1, source_line=3),))],
    ),
    (
        "header-like removal inside a counted hunk",
        lines("--- a/f", "+++ b/f", "@@ -1,2 +1,2 @@", "--- x", "+++ y", " z"),
        [UpdateFile("f", (Hunk(hl("--- x", "+++ y", " z"), line_hint=1, source_line=3),))],
    ),
    (
        "prose after a hunk whose counts are met is ignored",
        lines("--- a/f", "+++ b/f", "@@ -1 +1 @@", "-a", "+b", "Thanks!", "  indented note"),
        [UpdateFile("f", (Hunk(hl("-a", "+b"), line_hint=1, source_line=3),))],
    ),
    (
        "CRLF diff",
        lines("--- a/f", "+++ b/f", "@@ -1 +1 @@", "-a", "+b").replace("\n", "\r\n"),
        [UpdateFile("f", (Hunk(hl("-a", "+b"), line_hint=1, source_line=3),))],
    ),
    (
        "unicode and tabs kept",
        lines("--- a/ü", "+++ b/ü", "@@ -1 +1 @@", "-\t“x”", '+\t"x"'),
        [UpdateFile("ü", (Hunk(hl("-\t“x”", '+\t"x"'), line_hint=1, source_line=3),))],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_parses(text: str, expected: list[FileOp]) -> None:
    assert unified_diff.parse(text) == Proposal(tuple(expected), format="unified_diff")


# (id, diff, code, message fragment, line)
ERRORS: list[tuple[str, str, str, str, int | None]] = [
    (
        "tab-indented line in a counted hunk",
        lines("--- a/f", "+++ b/f", "@@ -1,3 +1,3 @@", " a", "\tb", "-c", "+C"),
        "invalid_patch",
        "invalid line '\\tb' in the hunk that starts at line 3 (it starts with a tab",
        5,
    ),
    (
        "unprefixed line in a bare hunk",
        lines("--- a/f", "+++ b/f", "@@", " a", "b", "-c", "+d"),
        "invalid_patch",
        "write it with one leading space: ' b'",
        5,
    ),
    (
        "change line after a hunk ended early",
        lines("--- a/f", "+++ b/f", "@@ -1 +1 @@", " a", "\tb", "-c", "+C"),
        "invalid_patch",
        "'-c' is a change line outside any hunk",
        6,
    ),
    ("empty", "", "invalid_patch", "no file changes", None),
    ("prose only", "just words\n", "invalid_patch", "no file changes", None),
    (
        "a symlink by mode",
        lines("diff --git a/k b/k", "old mode 100644", "new mode 120000"),
        "invalid_patch",
        "gives the file a symlink (mode 120000)",
        3,
    ),
    (
        "binary differ",
        lines(
            "diff --git a/i.png b/i.png",
            "index 1..2 100644",
            "Binary files a/i.png and b/i.png differ",
        ),
        "invalid_patch",
        "binary patches cannot be applied",
        3,
    ),
    (
        "git binary patch",
        lines("diff --git a/i b/i", "index 1..2", "GIT binary patch", "literal 5"),
        "invalid_patch",
        "binary",
        3,
    ),
    (
        "copy",
        lines("diff --git a/a b/b", "similarity index 100%", "copy from a", "copy to b"),
        "invalid_patch",
        "copies are not supported",
        3,
    ),
    (
        "hunk without header",
        lines("@@ -1 +1 @@", "-a", "+b"),
        "invalid_patch",
        "hunk without a file header",
        1,
    ),
    (
        "text between hunks",
        lines(
            "--- a/f", "+++ b/f", "@@ -1 +1 @@", "-a", "+b", "note this", "@@ -5 +5 @@", "-c", "+d"
        ),
        "invalid_patch",
        "(or text between hunks)",
        7,
    ),
    (
        "new file with context",
        lines("--- /dev/null", "+++ b/n", "@@ -0,0 +1,2 @@", " a", "+b"),
        "invalid_patch",
        "new file 'n' has a hunk with context",
        3,
    ),
    (
        "deleted file with additions",
        lines("--- a/d", "+++ /dev/null", "@@ -1 +1 @@", "-a", "+b"),
        "invalid_patch",
        "deleted file 'd'",
        3,
    ),
    (
        "two sections for one path",
        GIT_UPDATE + GIT_UPDATE,
        "invalid_patch",
        "'f.txt' already appears in the diff section at line 1",
        11,
    ),
    (
        "rename onto another section's path",
        lines("diff --git a/a b/f.txt", "rename from a", "rename to f.txt") + GIT_UPDATE,
        "invalid_patch",
        "already appears",
        4,
    ),
    (
        "only additions",
        lines("--- a/f", "+++ b/f", "@@ -3,0 +4 @@", "+x"),
        "invalid_patch",
        "only adds lines",
        3,
    ),
    (
        "no-newline marker first",
        lines("--- a/f", "+++ b/f", "@@ -1 +1 @@", "\\ No newline at end of file"),
        "invalid_patch",
        "must follow a hunk line",
        4,
    ),
    ("header without hunks", lines("--- a/f", "+++ b/f"), "invalid_patch", "no hunks", 1),
    (
        "empty hunk",
        lines("--- a/f", "+++ b/f", "@@ -1 +1 @@", "@@ -2 +2 @@", "-a", "+b"),
        "invalid_patch",
        "this hunk has no lines",
        3,
    ),
    (
        "git section with unreadable names",
        lines("diff --git x", "index 1..2"),
        "invalid_patch",
        "names no file",
        1,
    ),
]


@pytest.mark.parametrize(
    ("text", "code", "fragment", "line"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS]
)
def test_refusals(text: str, code: str, fragment: str, line: int | None) -> None:
    assert_refused_at(lambda: unified_diff.parse(text), code, fragment, line)


FINAL_NEWLINE = [
    ("added", lines("--- a/n", "+++ b/n", "@@ -1 +1 @@", "-x", NO_NL, "+x"), True),
    ("removed", lines("--- a/n", "+++ b/n", "@@ -1 +1 @@", "-x", "+x", NO_NL), False),
]


@pytest.mark.parametrize(
    ("text", "final"), [c[1:] for c in FINAL_NEWLINE], ids=[c[0] for c in FINAL_NEWLINE]
)
def test_final_newline_change(text: str, final: bool) -> None:
    """A one-sided ``\\ No newline at end of file`` becomes ``Hunk.final_newline``."""
    (op,) = unified_diff.parse(text).operations
    assert isinstance(op, UpdateFile)
    (hunk,) = op.edits
    assert isinstance(hunk, Hunk) and hunk.end_of_file
    assert hunk.final_newline is final
