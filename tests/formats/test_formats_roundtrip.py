"""Round trip: the change between two random texts, written in each edit language, parsed and
applied by the engine to the first text, gives back the second text exactly.

A difflib diff is written as a unified diff and as an apply_patch text; for SEARCH/REPLACE
blocks and patch_resource edits the texts have distinct lines, so that every block is unique
(those languages have no line hints to choose among repeats)."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import fields

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gitpatch import engine
from gitpatch.core.model import Hunk
from gitpatch.errors import InvalidPatch
from gitpatch.formats import apply_patch, patch_resource, search_replace, unified_diff

NO_NEWLINE = "\\ No newline at end of file"
CAN_CHANGE_FINAL_NEWLINE = "final_newline" in {f.name for f in fields(Hunk)}
_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")

# Few distinct lines, so that texts repeat lines and hunks need their context and hints.
_line = st.sampled_from(["a", "b", "c", "", "  a", "\tb", "x = 1", "é"])
_text = st.builds(
    lambda lines, final: "\n".join(lines) + ("\n" if final else ""),
    st.lists(_line, min_size=1, max_size=25),
    st.booleans(),
)


def make_unified_diff(old: str, new: str, path: str = "f.txt", context: int = 3) -> str:
    """A ``git diff``-style diff from ``old`` to ``new``, with the no-newline markers git adds."""
    out = []
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    for line in difflib.unified_diff(a, b, f"a/{path}", f"b/{path}", n=context):
        out.append(line if line.endswith("\n") else f"{line}\n{NO_NEWLINE}\n")
    return "".join(out)


def make_apply_patch(diff: str, old: str, path: str = "f.txt") -> str:
    """The same change as ``diff`` in the apply_patch language, with ``@@ N`` line hints.

    A hunk whose old side reaches the end of ``old`` is marked ``*** End of File``.
    """
    total = len(old.splitlines())
    body = ["*** Begin Patch", f"*** Update File: {path}"]
    reaches_end = False
    for line in diff.splitlines()[2:]:
        m = _HEADER.match(line)
        if m:
            if reaches_end:
                body.append("*** End of File")
            start, count = int(m.group(1)), int(m.group(2) or 1)
            reaches_end = start + count - 1 >= total
            body.append(f"@@ {start}")
        elif line != NO_NEWLINE:
            body.append(line)
    if reaches_end:
        body.append("*** End of File")
    body.append("*** End Patch")
    return "\n".join(body) + "\n"


def _applied(proposal_text: str, parse: object, old: str) -> str:
    proposal = parse(proposal_text)  # type: ignore[operator]
    changes = engine.apply(proposal, {"f.txt": old.encode()}).changes
    (change,) = changes
    assert change.path == "f.txt" and change.content is not None
    return change.content.decode()


_settings = settings(
    max_examples=int(os.environ.get("GITPATCH_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@_settings
@given(_text, _text)
def test_unified_diff_applies_back(old: str, new: str) -> None:
    assume(old and old != new)
    diff = make_unified_diff(old, new)
    if new and old.endswith("\n") != new.endswith("\n") and not CAN_CHANGE_FINAL_NEWLINE:
        # Without Hunk.final_newline the IR cannot carry this change: refused, never guessed.
        with pytest.raises(InvalidPatch, match="ends with a newline"):
            unified_diff.parse(diff)
        return
    assert _applied(diff, unified_diff.parse, old) == new


@_settings
@given(_text, _text)
def test_apply_patch_applies_back(old: str, new: str) -> None:
    assume(old and old != new and old.endswith("\n") == new.endswith("\n"))
    text = make_apply_patch(make_unified_diff(old, new), old)
    assert _applied(text, apply_patch.parse, old) == new


@st.composite
def distinct_texts(draw: st.DrawFn) -> tuple[str, str]:
    """An old text of distinct lines and a new one made by keeping, dropping, changing and
    inserting lines: every block of the old text is found in one place only."""
    old = [f"<{i}>" for i in range(draw(st.integers(1, 30)))]
    new: list[str] = []
    for k, line in enumerate(old):
        action = draw(st.sampled_from(["keep", "keep", "keep", "drop", "change", "insert"]))
        if action in ("keep", "insert"):
            new.append(line)
        if action in ("change", "insert"):
            new.append(f"[{k}]")
    return "".join(x + "\n" for x in old), "".join(x + "\n" for x in new)


def change_groups(old: str, new: str) -> list[tuple[list[str], list[str]]]:
    """(old lines, new lines) for each changed region with one line of context around it."""
    a, b = old.splitlines(), new.splitlines()
    groups = difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(1)
    return [(a[g[0][1] : g[-1][2]], b[g[0][3] : g[-1][4]]) for g in groups]


def make_search_replace(old: str, new: str) -> str:
    """One SEARCH/REPLACE block per changed region."""
    return "\n".join(
        "<<<<<<< SEARCH\n"
        + "".join(x + "\n" for x in search)
        + "=======\n"
        + "".join(x + "\n" for x in replace)
        + ">>>>>>> REPLACE\n"
        for search, replace in change_groups(old, new)
    )


@_settings
@given(distinct_texts())
def test_search_replace_applies_back(texts: tuple[str, str]) -> None:
    old, new = texts
    assume(old != new)
    text = make_search_replace(old, new)
    assert _applied(text, lambda t: search_replace.parse(t, "f.txt"), old) == new


@_settings
@given(distinct_texts())
def test_edits_apply_back(texts: tuple[str, str]) -> None:
    old, new = texts
    assume(old != new)
    items = [
        {"old_string": "".join(x + "\n" for x in s), "new_string": "".join(x + "\n" for x in r)}
        for s, r in change_groups(old, new)
    ]
    assert _applied("", lambda _: patch_resource.parse("f.txt", items), old) == new


def test_generators_agree_on_an_example() -> None:
    old, new = "a\nb\nc\n", "a\nB\nc\n"
    diff = make_unified_diff(old, new)
    assert diff == "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    assert make_apply_patch(diff, old) == (
        "*** Begin Patch\n*** Update File: f.txt\n@@ 1\n a\n-b\n+B\n c\n*** End of File\n"
        "*** End Patch\n"
    )
