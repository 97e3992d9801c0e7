"""Permissions, approval, plan mode and unsaved buffers: the pure rules and through the tools."""

from __future__ import annotations

import pytest

from gitpatch import MemoryStorage, ToolOperation, apply_patch_tool, patch_tool, read_tool
from gitpatch.tools.policy import (
    Decision,
    SideEffectApprovalToolPermissionPolicy,
    glob_matches,
    rules_from_config,
    workspace_tool_policy,
)
from tests.gitkit import git, mounted, sr, state

OPS = list(ToolOperation)


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("/workspace/private.txt", "/workspace/private.txt", True),
        ("/workspace/private.txt", "/workspace/private.txt.bak", False),
        ("**/*.lock", "/workspace/poetry.lock", True),
        ("**/*.lock", "/workspace/a/b/c.lock", True),
        ("**/*.lock", "c.lock", True),
        ("*.lock", "/workspace/deep/x.lock", True),
        ("*.lock", "/workspace/x.locked", False),
        ("/workspace/secrets/**", "/workspace/secrets/a/b.txt", True),
        ("/workspace/secrets/**", "/workspace/secretsx/a.txt", False),
        ("/workspace/*.txt", "/workspace/a/b.txt", False),
        ("/workspace/?.txt", "/workspace/a.txt", True),
        ("/workspace/[ab].txt", "/workspace/c.txt", False),
        ("/workspace/[!ab].txt", "/workspace/c.txt", True),
        ("src/*.py", "/workspace/src/app.py", True),
        ("src/*.py", "src/app.py", True),
        ("work://s1/**", "work://s1/draft.md", True),
    ],
)
def test_globs(pattern: str, path: str, expected: bool) -> None:
    assert glob_matches(pattern, path) is expected


def test_rule_order() -> None:
    policy = workspace_tool_policy(
        allow=["/workspace/**"], deny=["**/*.lock"], ask=["/workspace/docs/**"]
    )
    assert policy.decide("patch", ToolOperation.MODIFY_FILE, "/workspace/a.lock").verdict == "deny"
    assert policy.decide("patch", ToolOperation.MODIFY_FILE, "/workspace/docs/a").verdict == "ask"
    assert policy.decide("read", ToolOperation.READ_FILE, "/workspace/docs/a").verdict == "allow"
    assert policy.decide("patch", ToolOperation.MODIFY_FILE, "/elsewhere/x").verdict == "deny"
    assert policy.decide("patch", ToolOperation.DELETE_FILE, "/workspace/x").verdict == "allow"


@pytest.mark.parametrize("op", OPS)
def test_side_effect_policy(op: ToolOperation) -> None:
    want = "allow" if op is ToolOperation.READ_FILE else "ask"
    assert SideEffectApprovalToolPermissionPolicy().decide("x", op, "a") == Decision(want)
    assert workspace_tool_policy(True).decide("x", op, "a").verdict == want


def test_bad_globs_are_refused() -> None:
    with pytest.raises(Exception, match="glob"):
        workspace_tool_policy(deny=[""])


def test_rules_from_config() -> None:
    assert rules_from_config({}) is None
    policy = rules_from_config({"deny": ["*.lock"], "requireApproval": ["true"]})
    assert policy is not None and policy.require_approval_for_side_effects
    assert policy.deny == ("*.lock",)


def test_repository_config_rules_apply_when_no_policy_is_given(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"poetry.lock": "x\n", "a.txt": "a\n"})
    git(repo, "config", "--add", "gitpatch.toolDeny", "*.lock")
    before = state(repo)
    res = patch_tool(fs, fs)(path="poetry.lock", edits=sr("x\n", "y\n"))
    assert str(res).startswith(
        "permission denied: patch is not allowed for `/workspace/poetry.lock`"
    )
    assert state(repo) == before
    assert patch_tool(fs, fs)(path="a.txt", edits=sr("a\n", "b\n")).ok


def test_permission_is_checked_before_reading_or_parsing(tmp_path) -> None:
    mem = MemoryStorage({})
    deny = workspace_tool_policy(deny=["**"])
    # The file does not exist and the edits are garbage: the denial still comes first.
    res = patch_tool(mem, mem, policy=deny)(path="nothing.txt", edits="garbage")
    assert res.code == "permission_denied"
    res = read_tool(mem, policy=deny)(path="nothing.txt")
    assert res.code == "permission_denied"


def test_apply_patch_checks_every_source_and_destination(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n", "keep/b.txt": "b\n"})
    before = state(repo)
    tool = apply_patch_tool(fs, fs, policy=workspace_tool_policy(deny=["/workspace/keep/**"]))
    move = "*** Begin Patch\n*** Update File: a.txt\n*** Move to: keep/a.txt\n*** End Patch"
    res = tool(patch=move)
    assert str(res).startswith(
        "permission denied: apply_patch is not allowed for `/workspace/keep/a.txt`"
    )
    assert state(repo) == before


# -- plan mode ---------------------------------------------------------------------------------


def _add(path: str) -> str:
    return f"*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch"


@pytest.mark.parametrize("mode", ["standalone", "sticky"])
def test_plan_mode_allows_only_own_work_addresses(tmp_path, mode: str) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n"})
    tool = apply_patch_tool(fs, fs, plan_mode=mode, session="s1")
    before = state(repo)
    for path, why in [
        ("a2.txt", "an ordinary path"),
        ("memory://k/x.md", "a memory:// address"),
        ("work://shared/x.md", "another session's work:// address"),
        ("work://s2/x.md", "another session's work:// address"),
    ]:
        res = tool(patch=_add(path))
        assert res.code == "plan_mode_denied", str(res)
        assert why in str(res)
        assert state(repo) == before
    ok = tool(patch=_add("work://s1/plan.md"))
    assert ok.ok, str(ok)
    assert git(repo, "show", "refs/gitpatch/work/s1:plan.md") == "x\n"
    # A move is checked at both ends.
    move = "*** Begin Patch\n*** Update File: work://s1/plan.md\n*** Move to: b.md\n*** End Patch"
    res = tool(patch=move)
    assert res.code == "plan_mode_denied"


def test_plan_mode_without_session_refuses_work_addresses(tmp_path) -> None:
    _repo, _ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n"})
    res = apply_patch_tool(fs, fs, plan_mode="sticky")(patch=_add("work://s1/x.md"))
    assert res.code == "plan_mode_denied" and "has no session" in str(res)


def test_directive_plan_mode_allows_no_patch(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n"})
    for tool, args in [
        (
            patch_tool(fs, fs, plan_mode="directive", session="s1"),
            {"path": "a.txt", "edits": sr("a\n", "b\n")},
        ),
        (
            apply_patch_tool(fs, fs, plan_mode="directive", session="s1"),
            {"patch": _add("work://s1/x")},
        ),
    ]:
        res = tool(**args)
        assert res.code == "plan_mode_denied" and "directive" in str(res)
    assert read_tool(fs, plan_mode="directive")(path="a.txt").ok


def test_unknown_plan_mode_is_refused_when_made() -> None:
    mem = MemoryStorage({})
    with pytest.raises(ValueError, match="plan_mode"):
        patch_tool(mem, mem, plan_mode="maybe")


# -- unsaved buffers ---------------------------------------------------------------------------


def test_unsaved_buffers_refuse_the_patch(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n", "b.txt": "b\n"})
    before = state(repo)
    tool = patch_tool(fs, fs, unsaved=lambda: ["/workspace/a.txt"])
    res = tool(path="a.txt", edits=sr("a\n", "x\n"))
    assert res.code == "unsaved_changes"
    assert "`/workspace/a.txt` has unsaved changes in the editor" in str(res)
    assert state(repo) == before
    assert tool(path="b.txt", edits=sr("b\n", "x\n")).ok
    both = apply_patch_tool(fs, fs, unsaved=lambda: ["/workspace/a.txt"])
    res = both(patch="*** Begin Patch\n*** Delete File: a.txt\n*** End Patch")
    assert res.code == "unsaved_changes"


def test_approval_for_scratch_addresses_keeps_nothing(tmp_path) -> None:
    from gitpatch import SideEffectApprovalToolPermissionPolicy

    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n"})
    before = state(repo)
    tool = apply_patch_tool(fs, fs, policy=SideEffectApprovalToolPermissionPolicy())
    res = tool(patch=_add("work://s1/x.md"))
    assert res.code == "approval_required"
    assert str(res).startswith(
        "approval required: apply_patch requires application approval for `work://s1/x.md`"
    )
    assert "proposal_id" not in res.data.get("details", {})
    assert state(repo) == before
