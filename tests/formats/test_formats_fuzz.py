"""Every parser, fed arbitrary input, returns a Proposal or raises a GitpatchError: nothing else."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitpatch.core.model import Proposal
from gitpatch.errors import GitpatchError
from gitpatch.formats import apply_patch, patch_resource, search_replace, unified_diff

# Lines that steer the parsers into their deeper states, mixed with arbitrary text.
_PIECES = [
    "<<<<<<< SEARCH",
    "<<<<< search  ",
    "=======",
    "=====",
    ">>>>>>> REPLACE",
    "...",
    "```python",
    "```",
    "f.py",
    "*** Begin Patch",
    "*** End Patch",
    "  *** end patch ",
    "*** Update File: a.py",
    "*** Update File:",
    "*** Add File: b.txt",
    "*** Delete File: a.py",
    "*** Move to: c.py",
    "*** Move to: a.py",
    "*** End of File",
    "@@",
    "@@ 0",
    "@@ 12",
    "@@ def f",
    "@@ -1,2 +1,3 @@ x",
    "@@ -0,0 +1 @@",
    "<<'EOF'",
    "EOF",
    "diff --git a/a.py b/a.py",
    'diff --git "a/\\303\\251" "b/\\303"',
    "--- a/a.py",
    "+++ b/a.py",
    "--- /dev/null",
    "+++ /dev/null",
    '+++ "b/\\777\\x"',
    "new file mode 100644",
    "deleted file mode 100644",
    "rename from a.py",
    "rename to d.py",
    "copy from a.py",
    "similarity index 90%",
    "index 1..2 100644",
    "Binary files a and b differ",
    "\\ No newline at end of file",
    "-- ",
    " context",
    "-old",
    "+new",
    "+",
    "-",
    " ",
    "",
    "\t",
]

_lines = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=12)), max_size=30)
_texts = st.one_of(
    st.text(),
    st.builds("\n".join, _lines),
    st.builds("\r\n".join, _lines),
    st.builds(lambda ls: "\n".join(ls) + "\n", _lines),
)

_settings = settings(
    max_examples=int(os.environ.get("GITPATCH_FUZZ_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _only_gitpatch_errors(call: Callable[[], Proposal]) -> None:
    try:
        got = call()
    except GitpatchError as err:
        assert err.code and err.message
        return
    assert isinstance(got, Proposal) and got.operations


@_settings
@given(_texts)
def test_search_replace_single(text: str) -> None:
    _only_gitpatch_errors(lambda: search_replace.parse(text, "f.py"))


@_settings
@given(_texts)
def test_search_replace_multi(text: str) -> None:
    _only_gitpatch_errors(lambda: search_replace.parse(text))


@_settings
@given(_texts)
def test_apply_patch(text: str) -> None:
    _only_gitpatch_errors(lambda: apply_patch.parse(text))


@_settings
@given(_texts)
def test_unified_diff(text: str) -> None:
    _only_gitpatch_errors(lambda: unified_diff.parse(text))


_FIELDS = ["old_string", "new_string", "replace_all", "start_line", "end_line", "after_line"]
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 10**20), st.floats(), st.text(max_size=8)
)
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.one_of(st.sampled_from(_FIELDS), st.text(max_size=5)), inner, max_size=4
        ),
    ),
    max_leaves=12,
)
_edit_objects = st.dictionaries(st.sampled_from(_FIELDS), _scalars, max_size=6)


@_settings
@given(st.one_of(_json, st.lists(_edit_objects, max_size=4)))
def test_edits(value: Any) -> None:
    _only_gitpatch_errors(lambda: patch_resource.parse("notes.md", value))
