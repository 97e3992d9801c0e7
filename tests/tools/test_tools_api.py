"""The public tool API: shapes, texts and codes of the common calls, on every storage."""

from __future__ import annotations

import pytest

import gitpatch
from gitpatch import (
    MemoryStorage,
    MountedFilesystem,
    SideEffectApprovalToolPermissionPolicy,
    ToolResult,
    Workspace,
    apply_patch_tool,
    patch_resource_tool,
    patch_tool,
    read_tool,
    workspace_tool_policy,
)
from tests.gitkit import git, head, mounted, sr, state, status_porcelain


def test_exports() -> None:
    for name in (
        "Workspace",
        "MemoryStorage",
        "MountedFilesystem",
        "ToolOperation",
        "ToolResult",
        "SideEffectApprovalToolPermissionPolicy",
        "workspace_tool_policy",
        "patch_tool",
        "apply_patch_tool",
        "patch_resource_tool",
        "read_tool",
    ):
        assert name in gitpatch.__all__
        assert getattr(gitpatch, name) is not None


def test_patch_on_mounted_workspace(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"notes.txt": "hello\nworld\n"})
    tool = patch_tool(reader=fs, writer=fs, cwd=None, policy=None)
    res = tool(path="notes.txt", edits=sr("hello\n", "hi\n"))
    assert isinstance(res, ToolResult)
    assert str(res).splitlines()[0] == "Applied 1 edit to /workspace/notes.txt."
    assert res.ok and res.code is None
    assert res.data["path"] == "/workspace/notes.txt"
    assert res.data["version"] == head(repo)
    assert f"Version: {head(repo)}" in str(res)
    assert (repo / "notes.txt").read_text() == "hi\nworld\n"
    assert status_porcelain(repo) == ""


def test_patch_two_blocks_and_level_line(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.py": "x = 1   \ny = 2\nz = 3\n"})
    tool = patch_tool(fs, fs)
    res = tool(path="/workspace/a.py", edits=sr("x = 1\n", "x = 10\n") + sr("z = 3\n", "z = 30\n"))
    assert str(res).startswith("Applied 2 edits to /workspace/a.py.")
    assert "matched at level trailing_whitespace" in str(res)
    assert (repo / "a.py").read_text() == "x = 10\ny = 2\nz = 30\n"


def test_plain_storages_show_relative_paths(tmp_path) -> None:
    mem = MemoryStorage({"notes.txt": "a\n", "img.bin": b"\x00\x01"})
    res = patch_tool(reader=mem, writer=mem)(path="notes.txt", edits=sr("a\n", "b\n"))
    assert str(res).splitlines()[0] == "Applied 1 edit to notes.txt."
    assert mem.read_bytes("notes.txt") == b"b\n"
    repo, ws, _fs = mounted(tmp_path / "r", {"notes.txt": "a\n"})
    res = patch_tool(reader=ws, writer=ws)(path="notes.txt", edits=sr("a\n", "b\n"))
    assert str(res).splitlines()[0] == "Applied 1 edit to notes.txt."


def test_reader_and_writer_must_share_a_namespace(tmp_path) -> None:
    one, two = MemoryStorage({}), MemoryStorage({})
    with pytest.raises(ValueError, match="namespace"):
        patch_tool(reader=one, writer=two)
    fs = MountedFilesystem({"/workspace": one})
    with pytest.raises(ValueError, match="MountedFilesystem"):
        patch_tool(reader=fs, writer=one)
    _repo, ws, _ = mounted(tmp_path / "r", {"a": "a\n"})
    assert patch_tool(reader=ws, writer=ws).namespace == patch_tool(ws, ws).namespace
    other = Workspace.open(_repo)
    with pytest.raises(ValueError, match="namespace"):
        patch_tool(reader=ws, writer=other)


def test_read_tool_numbers_lines_and_gives_version(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "one\ntwo\nthree\n"})
    res = read_tool(fs)(path="a.txt", offset=2, limit=1)
    lines = str(res).splitlines()
    assert lines[0] == f"/workspace/a.txt (version {head(repo)}, lines 2-2 of 3)"
    assert lines[1] == "     2\ttwo"
    assert "pass offset=3 to continue" in lines[2]
    assert res.data["content"] == "two\n" and res.data["total_lines"] == 3


def test_patch_resource_data_and_expected_version(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"docs/CHANGELOG.md": "version: 1.2.0\n"})
    tool = patch_resource_tool(fs, fs)
    read = read_tool(fs)(path="docs/CHANGELOG.md")
    res = tool(
        path="docs/CHANGELOG.md",
        edits=[
            {"old_string": "version: 1.2.0", "new_string": "version: 1.3.0"},
            {"after_line": 0, "new_string": "## 1.3.0 — latest\n\n"},
        ],
        expected_version=read.data["version"],
    )
    assert res.ok, str(res)
    assert set(res.data) == {"path", "id", "version"}
    assert res.data["path"] == "/workspace/docs/CHANGELOG.md"
    assert res.data["id"] == read.data["id"]
    assert res.data["version"] == head(repo)
    stale = tool(
        path="docs/CHANGELOG.md",
        edits=[{"after_line": 0, "new_string": "x\n"}],
        expected_version=read.data["version"],
    )
    assert stale.code == "resource_conflict" and not stale.ok


def test_apply_patch_lists_every_kind_of_change(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
    patch = (
        "*** Begin Patch\n*** Add File: new/d.txt\n+d\n*** Delete File: a.txt\n"
        "*** Update File: b.txt\n@@\n-b\n+B\n*** Update File: c.txt\n*** Move to: e.txt\n"
        "*** End Patch"
    )
    res = apply_patch_tool(fs, fs)(patch=patch)
    assert res.ok, str(res)
    text = str(res)
    assert text.splitlines()[0] == (
        "Applied patch to 4 files (1 added, 1 modified, 1 deleted, 1 moved):"
    )
    assert "  moved    /workspace/c.txt -> /workspace/e.txt" in text
    assert f"Version: {head(repo)}" in text
    assert res.data["added"] == ["/workspace/new/d.txt"]
    assert sorted(p.name for p in repo.iterdir() if p.name != ".git") == [
        "b.txt",
        "e.txt",
        "new",
    ]


def test_denied_path_changes_nothing(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"private.txt": "secret\n"})
    before = state(repo)
    tool = patch_tool(fs, fs, policy=workspace_tool_policy(deny=["/workspace/private.txt"]))
    res = tool(path="private.txt", edits="not even parsed")
    assert str(res).splitlines()[0] == (
        "permission denied: patch is not allowed for `/workspace/private.txt`"
    )
    assert res.code == "permission_denied" and not res.ok
    assert state(repo) == before


@pytest.mark.parametrize(
    "policy",
    [SideEffectApprovalToolPermissionPolicy(), workspace_tool_policy(True)],
    ids=["side_effect_policy", "workspace_tool_policy"],
)
def test_approval_keeps_a_review_proposal(tmp_path, policy) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"notes.txt": "a\n"})
    before_head = head(repo)
    res = patch_tool(fs, fs, policy=policy)(path="notes.txt", edits=sr("a\n", "b\n"))
    lines = str(res).splitlines()
    assert lines[0] == (
        "approval required: patch requires application approval for `/workspace/notes.txt` "
        "before execution"
    )
    pid = res.data["details"]["proposal_id"]
    assert lines[1].startswith(f"Proposal {pid} is kept for review on gitpatch/{pid}")
    assert res.code == "approval_required" and not res.ok
    assert head(repo) == before_head and (repo / "notes.txt").read_text() == "a\n"
    assert git(repo, "show", f"gitpatch/{pid}:notes.txt") == "b\n"
    ws.approve(pid, by="Ada")
    assert (repo / "notes.txt").read_text() == "b\n"


def test_approval_on_memory_storage_changes_nothing() -> None:
    mem = MemoryStorage({"notes.txt": "a\n"})
    tool = patch_tool(mem, mem, policy=SideEffectApprovalToolPermissionPolicy())
    res = tool(path="notes.txt", edits=sr("a\n", "b\n"))
    assert res.code == "approval_required"
    assert str(res).startswith(
        "approval required: patch requires application approval for `notes.txt`"
    )
    assert mem.read_bytes("notes.txt") == b"a\n"


def test_reads_are_not_subject_to_approval(tmp_path) -> None:
    mem = MemoryStorage({"notes.txt": "a\n"})
    res = read_tool(mem, policy=SideEffectApprovalToolPermissionPolicy())(path="notes.txt")
    assert res.ok


def test_workspace_stays_the_error_raiser(tmp_path) -> None:
    _repo, ws, _fs = mounted(tmp_path / "r", {"a": "a\n"})
    with pytest.raises(gitpatch.GitpatchError):
        ws.apply(sr("a\n", "b\n"), path="missing.txt")
    assert isinstance(ws, Workspace)


def test_cwd_is_captured_when_the_tool_is_made(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"src/app.py": "a\n", "app.py": "top\n"})
    for cwd in ("/workspace/src", "src"):
        res = patch_tool(fs, fs, cwd=cwd)(path="app.py", edits=sr("a\n", f"{cwd}\n"))
        assert str(res).startswith("Applied 1 edit to /workspace/src/app.py."), str(res)
        patch_tool(fs, fs, cwd=cwd)(path="app.py", edits=sr(f"{cwd}\n", "a\n"))
    mem = MemoryStorage({"src/app.py": "a\n"})
    res = patch_tool(mem, mem, cwd="src")(path="app.py", edits=sr("a\n", "b\n"))
    assert str(res).startswith("Applied 1 edit to src/app.py.")
    escape = patch_tool(fs, fs, cwd="/workspace/src")(path="../../x", edits=sr("a\n", "b\n"))
    assert escape.code == "path_unsafe"


def test_errors_become_results_in_one_place() -> None:
    # Only tools/_errors.py builds a failed ToolResult; every tool goes through it.
    from pathlib import Path

    tools = Path(gitpatch.__file__).parent / "tools"
    makers = [p.name for p in tools.glob("*.py") if "ok=False" in p.read_text("utf-8")]
    assert makers == ["_errors.py"]


def test_bare_repository(tmp_path) -> None:
    repo, _ws, _fs = mounted(tmp_path / "r", {"a.txt": "a\n"})
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(tmp_path / "bare.git"))
    ws = Workspace.open(tmp_path / "bare.git")
    res = patch_tool(ws, ws)(path="a.txt", edits=sr("a\n", "b\n"))
    assert res.ok, str(res)
    assert git(tmp_path / "bare.git", "show", "work:a.txt") == "b\n"
    assert read_tool(ws)(path="a.txt").data["content"] == "b\n"


def test_protected_branch_lands_on_a_session(tmp_path) -> None:
    from tests.gitkit import make_repo

    repo = make_repo(tmp_path / "r", {"a.txt": "a\n"}, branch="main")
    ws = Workspace.open(repo)
    res = patch_tool(ws, ws)(path="a.txt", edits=sr("a\n", "b\n"))
    assert res.ok, str(res)
    assert "It landed on session branch gitpatch/session/agent (main is protected)." in str(res)
    assert ws.plumbing.worktree is None and "files are in" not in str(
        res
    )  # an edit makes no worktree
    assert git(repo, "show", "main:a.txt") == "a\n" and (repo / "a.txt").read_text() == "a\n"
    where = ws.plumbing.session_worktree().path
    assert (where / "a.txt").read_text() == "b\n"
    res = patch_tool(ws, ws)(path="a.txt", edits=sr("b\n", "c\n"))
    assert res.ok and f"files are in {where}" in str(res)
    assert (where / "a.txt").read_text() == "c\n"


def test_read_edges() -> None:
    mem = MemoryStorage({"bin": b"\x00\x01", "empty.txt": "", "a.txt": "1\n2\n3\n"})
    read = read_tool(mem)
    assert read(path="bin").code == "not_a_text_resource"
    empty = read(path="empty.txt")
    assert empty.ok and str(empty) == "empty.txt (version 1, empty file)"
    past = read(path="a.txt", offset=4)
    assert past.code == "invalid_arguments" and "past the end" in str(past)
    assert read(path="a.txt", limit=0).code == "invalid_arguments"
    assert read(path="a.txt", offset="2").code == "invalid_arguments"
    tail = read(path="a.txt", offset=3)
    assert str(tail).splitlines()[1:] == ["     3\t3"] and tail.data["end_line"] == 3
    assert read(path="missing.txt").code == "resource_not_found"
    assert read(path="a.txt").to_dict()["data"]["total_lines"] == 3


def test_results_serialise_to_json(tmp_path) -> None:
    import json

    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n"})
    for res in (
        patch_tool(fs, fs)(path="a.txt", edits=sr("a\n", "b\n")),
        patch_tool(fs, fs)(path="a.txt", edits=sr("zzz\n", "b\n")),
        apply_patch_tool(fs, fs)(patch="*** Begin Patch\n*** Delete File: a.txt\n*** End Patch"),
        read_tool(fs)(path="nope"),
    ):
        assert json.loads(json.dumps(res.to_dict()))["text"] == str(res)
