"""An edit whose old text is gone but whose new text is in the file: the hint says it may have
been applied already (models often resend an edit that landed), and only when that is worth
saying."""

from __future__ import annotations

import pytest

from gitpatch.core.model import Proposal
from gitpatch.engine import apply
from gitpatch.errors import MatchNotFound
from gitpatch.formats import apply_patch, patch_resource, search_replace, unified_diff

FILE = b'def greet(name):\n    print("hello", name)\n    return name\n'
QUESTION = "was this edit applied already?"


def refusal(proposal: Proposal, data: bytes = FILE) -> MatchNotFound:
    with pytest.raises(MatchNotFound) as caught:
        apply(proposal, {"greet.py": data})
    return caught.value


def sr(search: str, replace: str) -> Proposal:
    text = f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"
    return search_replace.parse(text, "greet.py")


def test_search_replace_resent() -> None:
    err = refusal(sr('    print("hi", name)', '    print("hello", name)'))
    assert (err.hint or "").startswith(
        f"The REPLACE text is already in the file, at line 2: {QUESTION}"
    )
    assert "The closest region is lines 2-2" in (err.hint or "")
    assert err.details["applied_at"] == [2]


def test_search_replace_resent_reindented_still_noticed() -> None:
    err = refusal(sr('print("hi", name)\nreturn name', 'print("hello", name)\nreturn name'))
    assert err.details["applied_at"] == [2]


def test_apply_patch_hunk_resent() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: greet.py\n@@\n def greet(name):\n"
        '-    print("hi", name)\n+    print("hello", name)\n*** End Patch\n'
    )
    err = refusal(apply_patch.parse(patch))
    assert (err.hint or "").startswith("The hunk's new text (its ' ' and '+' lines) is already")
    assert err.details["applied_at"] == [1]


def test_unified_diff_hunk_resent() -> None:
    diff = (
        "--- a/greet.py\n+++ b/greet.py\n@@ -1,2 +1,2 @@\n def greet(name):\n"
        '-    print("hi", name)\n+    print("hello", name)\n'
    )
    assert refusal(unified_diff.parse(diff)).details["applied_at"] == [1]


def test_patch_resource_new_string_resent() -> None:
    err = refusal(
        patch_resource.parse(
            "greet.py", [{"old_string": 'print("hi", name)', "new_string": 'print("hello", name)'}]
        )
    )
    assert (err.hint or "").startswith(f"new_string is already in the file, at line 2: {QUESTION}")
    assert err.details == {"path": "greet.py", "edit": 1, "applied_at": [2]}


def test_several_places_are_all_named() -> None:
    data = FILE + FILE.replace(b"greet", b"greet2")
    err = refusal(sr('    print("hi", name)', '    print("hello", name)'), data)
    assert err.details["applied_at"] == [2, 5]
    assert "already in the file, at lines 2, 5:" in (err.hint or "")


@pytest.mark.parametrize(
    "proposal",
    [
        # the new text is not in the file
        sr('    print("hi", name)', '    print("hey", name)'),
        # too short to be sure: a coincidence is as likely as a resend
        sr("    x = 1", "    return name"),
        # a deletion leaves no new text to look for
        sr('    print("hi", name)', ""),
        patch_resource.parse("greet.py", [{"old_string": "nope nope", "new_string": "name"}]),
        patch_resource.parse("greet.py", [{"old_string": "nope nope", "new_string": ""}]),
    ],
)
def test_no_remark_when_it_would_mislead(proposal: Proposal) -> None:
    err = refusal(proposal)
    assert QUESTION not in (err.hint or "")
    assert "applied_at" not in err.details


def test_crlf_file_resend_is_noticed_for_every_format() -> None:
    crlf = FILE.replace(b"\n", b"\r\n")
    resent = [
        sr('    print("hi", name)', '    print("hello", name)'),
        patch_resource.parse(
            "greet.py", [{"old_string": 'print("hi", name)', "new_string": 'print("hello", name)'}]
        ),
    ]
    assert [refusal(p, crlf).details["applied_at"] for p in resent] == [[2], [2]]
