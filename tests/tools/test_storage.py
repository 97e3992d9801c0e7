"""Storages under the tools: versions, resource ids, families, teams, failures, real checkouts."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import gitpatch.tools.storage.base
from gitpatch import (
    MemoryStorage,
    MountedFilesystem,
    Workspace,
    apply_patch_tool,
    patch_resource_tool,
    patch_tool,
    read_tool,
)
from gitpatch.tools import GENERIC_FAILURE
from gitpatch.tools.storage.base import Target
from tests.gitkit import git, head, make_repo, mounted, repo_state, sr, state, status_porcelain


def _move(src: str, dst: str) -> str:
    return f"*** Begin Patch\n*** Update File: {src}\n*** Move to: {dst}\n*** End Patch"


def _ids_follow_edits_and_moves(ns: Any) -> None:
    read = read_tool(ns)
    first = read(path="a.txt").data["id"]
    assert patch_tool(ns, ns)(path="a.txt", edits=sr("a\n", "b\n")).ok
    assert read(path="a.txt").data["id"] == first
    moved = apply_patch_tool(ns, ns)(patch=_move("a.txt", "dir/b.txt"))
    assert moved.ok, str(moved)
    assert moved.data["files"][0]["id"] == first
    assert read(path="dir/b.txt").data["id"] == first
    ap = apply_patch_tool(ns, ns)
    assert ap(patch="*** Begin Patch\n*** Delete File: dir/b.txt\n*** End Patch").ok
    assert ap(patch="*** Begin Patch\n*** Add File: dir/b.txt\n+b\n*** End Patch").ok
    assert read(path="dir/b.txt").data["id"] != first


def test_resource_ids_on_a_workspace(tmp_path) -> None:
    _repo, ws, _fs = mounted(tmp_path / "r", {"a.txt": "a\n", "other.txt": "o\n"})
    _ids_follow_edits_and_moves(ws)


def test_resource_ids_on_memory() -> None:
    _ids_follow_edits_and_moves(MemoryStorage({"a.txt": "a\n", "other.txt": "o\n"}))


def test_an_edit_after_an_edit_finds_its_id_without_walking_the_history(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The edited file's first parent was walked already (by the edit before): its id is
    found there and the store's history walk never starts; it is the id the walk finds."""
    from gitpatch.store import Store

    _repo, ws, _fs = mounted(tmp_path / "r", {"a.txt": "a1\na2\n"})
    edit = patch_tool(ws, ws)
    first = edit(path="a.txt", edits=sr("a1\n", "A1\n"))
    assert first.ok, str(first)
    walks: list[object] = []
    real = Store.first_parents

    def counted(self: Store, tip: Any) -> Any:
        walks.append(tip)  # the real walk still runs
        return real(self, tip)

    monkeypatch.setattr(Store, "first_parents", counted)
    second = edit(path="a.txt", edits=sr("a2\n", "A2\n"))
    assert second.ok, str(second)
    assert walks == []
    ident = second.data["id"]
    assert ident == first.data["id"]
    gitpatch.tools.storage.base._KNOWN.clear()  # worked out again from the history alone
    assert read_tool(ws)(path="a.txt").data["id"] == ident
    assert walks != []


def test_resource_id_follows_a_persons_git_mv(tmp_path) -> None:
    repo, ws, _fs = mounted(tmp_path / "r", {"a.txt": "some text that is long enough\n"})
    first = read_tool(ws)(path="a.txt").data["id"]
    git(repo, "mv", "a.txt", "b.txt")
    git(repo, "commit", "-qm", "rename")
    assert read_tool(ws)(path="b.txt").data["id"] == first


def test_resource_id_of_a_file_a_later_commit_added(tmp_path) -> None:
    # An add without any deletion is no move (the id starts there); with a deletion beside it,
    # git's rename detection still decides.
    repo, ws, _fs = mounted(tmp_path / "r", {"a.txt": "a\n"})
    (repo / "new.txt").write_text("a new file with enough text to be recognised\n")
    git(repo, "add", "new.txt")
    git(repo, "commit", "-qm", "add new.txt")
    first = read_tool(ws)(path="new.txt").data["id"]
    gitpatch.tools.storage.base._KNOWN.clear()  # worked out again from the history alone
    assert read_tool(ws)(path="new.txt").data["id"] == first
    assert read_tool(ws)(path="a.txt").data["id"] != first
    git(repo, "mv", "new.txt", "moved.txt")
    (repo / "third.txt").write_text("3\n")
    git(repo, "add", "third.txt")
    git(repo, "commit", "-qm", "move one, add another")
    gitpatch.tools.storage.base._KNOWN.clear()
    assert read_tool(ws)(path="moved.txt").data["id"] == first
    assert read_tool(ws)(path="third.txt").data["id"] not in (first, None)


def test_memory_versions_are_counters_and_recreation_is_not_found() -> None:
    mem = MemoryStorage({"a.txt": "a\n"})
    tool = patch_resource_tool(mem, mem)
    v1 = read_tool(mem)(path="a.txt").data["version"]
    assert isinstance(v1, int)
    res = tool(path="a.txt", edits=[{"old_string": "a", "new_string": "b"}], expected_version=v1)
    assert res.data["version"] == v1 + 1
    stale = tool(path="a.txt", edits=[{"old_string": "b", "new_string": "c"}], expected_version=v1)
    assert stale.code == "resource_conflict"
    v2 = res.data["version"]
    ap = apply_patch_tool(mem, mem)
    assert ap(patch="*** Begin Patch\n*** Delete File: a.txt\n*** End Patch").ok
    assert ap(patch="*** Begin Patch\n*** Add File: a.txt\n+b\n*** End Patch").ok
    gone = tool(path="a.txt", edits=[{"old_string": "b", "new_string": "c"}], expected_version=v2)
    assert gone.code == "resource_not_found"
    assert mem.read_bytes("a.txt") == b"b\n"


def test_workspace_recreation_is_not_found(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n"})
    version = read_tool(fs)(path="a.txt").data["version"]
    ap = apply_patch_tool(fs, fs)
    assert ap(patch="*** Begin Patch\n*** Delete File: a.txt\n*** End Patch").ok
    assert ap(patch="*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch").ok
    before = state(repo)
    res = patch_resource_tool(fs, fs)(
        path="a.txt", edits=[{"old_string": "a", "new_string": "b"}], expected_version=version
    )
    assert res.code == "resource_not_found" and state(repo) == before


# -- a version identifies what was read, uncommitted disk content included ---------------------


def test_read_version_of_uncommitted_content(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n1\n2\nz\n"})
    assert read_tool(fs)(path="a.txt").data["version"] == head(repo)
    (repo / "a.txt").write_text("dirty\n1\n2\nz\n")
    read = read_tool(fs)(path="a.txt")
    version = read.data["version"]
    assert version != head(repo) and read.data["content"] == "dirty\n1\n2\nz\n"
    assert git(repo, "show", f"{version}:a.txt") == "dirty\n1\n2\nz\n"
    assert version not in git(repo, "for-each-ref")  # no ref points at it
    tool = patch_resource_tool(fs, fs)
    res = tool(
        path="a.txt",
        edits=[{"old_string": "z", "new_string": "Z"}],
        expected_version=version,
    )
    assert res.ok, str(res)
    assert "they stay uncommitted" in str(res)
    assert (repo / "a.txt").read_text() == "dirty\n1\n2\nZ\n"
    assert git(repo, "show", "HEAD:a.txt") == "a\n1\n2\nZ\n"
    assert status_porcelain(repo) == " M a.txt\n"
    # Read again, then someone changes the disk: the old version is a conflict.
    (repo / "a.txt").write_text("mine\n")
    version = read_tool(fs)(path="a.txt").data["version"]
    (repo / "a.txt").write_text("theirs\n")
    before = state(repo)
    res = tool(
        path="a.txt", edits=[{"old_string": "mine", "new_string": "x"}], expected_version=version
    )
    assert res.code == "resource_conflict" and "changed on disk" in str(res)
    assert state(repo) == before


# -- families ----------------------------------------------------------------------------------


def test_mixed_families_move_every_ref_in_one_proposal(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n"})
    patch = (
        "*** Begin Patch\n*** Add File: work://s1/plan.md\n+plan\n"
        "*** Add File: memory://k/notes.md\n+note\n"
        "*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch"
    )
    res = apply_patch_tool(fs, fs)(patch=patch)
    assert res.ok, str(res)
    assert (repo / "a.txt").read_text() == "b\n" and status_porcelain(repo) == ""
    assert not (repo / "plan.md").exists() and not (repo / "work:").exists()
    assert git(repo, "show", "refs/gitpatch/work/s1:plan.md") == "plan\n"
    assert git(repo, "show", "refs/gitpatch/memory/k:notes.md") == "note\n"
    trailer = "%(trailers:key=Gitpatch-Proposal,valueonly)"
    ids = {
        git(repo, "log", "-1", f"--format={trailer}", ref).strip()
        for ref in ("refs/gitpatch/work/s1", "refs/gitpatch/memory/k", "HEAD")
    }
    assert ids == {res.data["proposal_id"]}
    assert set(res.data["versions"]) == {
        "refs/heads/work",
        "refs/gitpatch/work/s1",
        "refs/gitpatch/memory/k",
    }
    assert read_tool(fs)(path="work://s1/plan.md").data["content"] == "plan\n"
    git(repo, "fsck", "--strict")


def test_mixed_families_carry_a_persons_uncommitted_work(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\nmid\nz\n"})
    (repo / "a.txt").write_text("a\nmid\nz\nmine\n")
    patch = (
        "*** Begin Patch\n*** Add File: work://s1/plan.md\n+plan\n"
        "*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch"
    )
    res = apply_patch_tool(fs, fs)(patch=patch)
    assert res.ok, str(res)
    assert (repo / "a.txt").read_text() == "b\nmid\nz\nmine\n"
    assert git(repo, "show", "HEAD:a.txt") == "b\nmid\nz\n"
    assert git(repo, "show", "refs/gitpatch/work/s1:plan.md") == "plan\n"
    # the result says so, as a change to ordinary paths alone does
    assert res.data["carried"] == ["/workspace/a.txt"] and "uncommitted" in str(res)


@pytest.mark.parametrize("session", [None, "s"])
def test_mixed_families_in_review_mode_are_refused_and_change_nothing(
    tmp_path, session: str | None
) -> None:
    # A review-mode Workspace never lands an agent's ordinary paths on the branch: a change
    # that also touches work:// cannot be split between review and direct application.
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\nmid\nz\n"}, mode="review", session=session)
    before, start = repo_state(repo), head(repo)
    res = apply_patch_tool(fs, fs)(
        patch="*** Begin Patch\n*** Add File: work://s1/plan.md\n+plan\n"
        "*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch"
    )
    assert not res.ok and res.code == "invalid_arguments", str(res)
    assert "cannot be kept for review" in str(res) and "Split the call" in str(res)
    assert repo_state(repo) == before
    # split, each part goes where it belongs: the plan at once, the code up for review
    plan = apply_patch_tool(fs, fs)(
        patch="*** Begin Patch\n*** Add File: work://s1/plan.md\n+plan\n*** End Patch"
    )
    code = apply_patch_tool(fs, fs)(
        patch="*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch"
    )
    assert plan.ok and code.ok, (str(plan), str(code))
    assert git(repo, "show", "refs/gitpatch/work/s1:plan.md") == "plan\n"
    assert head(repo) == start
    assert (repo / "a.txt").read_text() == "a\nmid\nz\n"
    assert git(repo, "status", "--porcelain") == ""
    waiting = [p for p in ws.proposals() if p.status == "proposed"]
    assert [p.files for p in waiting] == [["a.txt"]] and waiting[0].id == code.data["proposal_id"]


@pytest.mark.parametrize("setting", ["autocrlf", "filter"])
def test_mixed_families_write_what_checkout_writes(tmp_path, setting: str) -> None:
    # The scratch part and the ordinary part go through the one attempt loop: the ordinary
    # paths are committed as `git add` stores them and written as `git checkout` writes them.
    files = {"a.txt": "a\n", ".gitattributes": "*.secret filter=rot\n"}
    repo, _ws, _fs = mounted(tmp_path / "r", files)
    if setting == "autocrlf":
        git(repo, "config", "core.autocrlf", "true")
        git(repo, "rm", "-q", "--cached", "a.txt")
        git(repo, "reset", "-q", "--hard")  # a.txt as checkout writes it now: CRLF
    else:
        for key in ("clean", "smudge"):
            git(repo, "config", f"filter.rot.{key}", "tr A-Za-z N-ZA-Mn-za-m")
    fs = MountedFilesystem({"/workspace": Workspace.open(repo)})
    res = apply_patch_tool(fs, fs)(
        patch="*** Begin Patch\n*** Add File: work://s1/plan.md\n+plan\n"
        "*** Add File: new.secret\n+Hello\n"
        "*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch"
    )
    assert res.ok, str(res)
    if setting == "autocrlf":
        assert (repo / "a.txt").read_bytes() == b"b\r\n"
        assert (repo / "new.secret").read_bytes() == b"Hello\r\n"
        assert git(repo, "show", "HEAD:a.txt") == "b\n"
    else:
        assert (repo / "new.secret").read_bytes() == b"Hello\n"
        assert git(repo, "show", "HEAD:new.secret") == "Uryyb\n"
    assert git(repo, "show", "refs/gitpatch/work/s1:plan.md") == "plan\n"
    assert status_porcelain(repo) == ""
    git(repo, "fsck", "--strict")


def test_a_failing_part_moves_no_ref(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n"})
    before = state(repo)
    patch = (
        "*** Begin Patch\n*** Add File: work://s1/plan.md\n+plan\n"
        "*** Update File: a.txt\n@@\n-not there\n+b\n*** End Patch"
    )
    res = apply_patch_tool(fs, fs)(patch=patch)
    assert res.code == "match_not_found" and state(repo) == before


def test_a_move_across_roots_is_refused(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n"})
    before = state(repo)
    res = apply_patch_tool(fs, fs)(patch=_move("a.txt", "work://s1/a.txt"))
    assert res.code == "invalid_arguments" and "stays within one root" in str(res)
    assert state(repo) == before


def test_family_edits_and_versions(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n"})
    ap = apply_patch_tool(fs, fs)
    assert ap(patch="*** Begin Patch\n*** Add File: work://s1/x.md\n+one\n*** End Patch").ok
    read = read_tool(fs)(path="work://s1/x.md")
    assert read.data["version"] == head(repo, "refs/gitpatch/work/s1")
    res = patch_resource_tool(fs, fs)(
        path="work://s1/x.md",
        edits=[{"old_string": "one", "new_string": "two"}],
        expected_version=read.data["version"],
    )
    assert res.ok and res.data["path"] == "work://s1/x.md" and res.data["id"] == read.data["id"]
    assert git(repo, "show", "refs/gitpatch/work/s1:x.md") == "two\n"
    assert status_porcelain(repo) == ""


def test_families_need_one_mounted_workspace(tmp_path) -> None:
    mem = MemoryStorage({"a": "a\n"})
    res = patch_tool(mem, mem)(path="work://s1/a", edits=sr("a\n", "b\n"))
    assert res.code == "path_unsafe"
    fs = MountedFilesystem({"/m": mem})
    res = read_tool(fs)(path="work://s1/a")
    assert res.code == "path_unsafe" and "exactly one mounted Workspace" in str(res)


# -- teams -------------------------------------------------------------------------------------


def test_team_without_a_service_is_a_clear_error(tmp_path) -> None:
    mem = MemoryStorage({"a.txt": "a\n"})
    res = patch_resource_tool(mem, mem)(
        path="a.txt", edits=[{"old_string": "a", "new_string": "b"}], team="core"
    )
    assert res.code == "team_not_found" and "no team spaces" in str(res)
    assert mem.read_bytes("a.txt") == b"a\n"


def test_team_spaces_plug_in_through_a_resolver() -> None:
    own, team = MemoryStorage({"a.txt": "mine\n"}), MemoryStorage({"a.txt": "team\n"})
    tool = patch_resource_tool(own, own, spaces={"core": team}.__getitem__)
    res = tool(path="a.txt", edits=[{"old_string": "team", "new_string": "ours"}], team="core")
    assert res.ok, str(res)
    assert team.read_bytes("a.txt") == b"ours\n" and own.read_bytes("a.txt") == b"mine\n"
    other = tool(path="a.txt", edits=[{"old_string": "x", "new_string": "y"}], team="nope")
    assert other.code == "team_not_found" and "'nope'" in str(other)


# -- failures ----------------------------------------------------------------------------------


class Broken(MemoryStorage):
    def __init__(self, error: BaseException) -> None:
        super().__init__({"a.txt": "a\n"})
        self.error = error

    def apply(self, proposal: Any, **kw: Any) -> Any:
        raise self.error


def test_unexpected_errors_get_one_stable_text(caplog) -> None:
    mem = Broken(RuntimeError("internal detail 42"))
    with caplog.at_level(logging.ERROR, logger="gitpatch.tools"):
        res = patch_tool(mem, mem)(path="a.txt", edits=sr("a\n", "b\n"))
    assert str(res) == GENERIC_FAILURE.format(tool="patch")
    assert res.code == "internal_error" and "internal detail" not in str(res)
    assert "internal detail 42" in caplog.text


def test_failed_writes_say_so() -> None:
    mem = Broken(OSError(28, "No space left on device"))
    res = patch_tool(mem, mem)(path="a.txt", edits=sr("a\n", "b\n"))
    assert res.code == "filesystem_error" and "No space left on device" in str(res)
    assert res.data["errno"] == "ENOSPC"
    assert mem.read_bytes("a.txt") == b"a\n"


def test_wrong_arguments_are_invalid_arguments() -> None:
    mem = MemoryStorage({"a.txt": "a\n"})
    res = patch_tool(mem, mem)(path="a.txt", edit="x")
    assert res.code == "invalid_arguments" and "edit" in str(res)
    res = read_tool(mem)(path="a.txt", offset=0)
    assert res.code == "invalid_arguments"


# -- real checkouts ----------------------------------------------------------------------------


def test_linked_worktree(tmp_path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    ws = Workspace.open(tmp_path / "side")
    res = patch_tool(ws, ws)(path="a.txt", edits=sr("a\n", "b\n"))
    assert res.ok, str(res)
    assert (tmp_path / "side" / "a.txt").read_text() == "b\n"
    assert (repo / "a.txt").read_text() == "a\n"
    assert status_porcelain(tmp_path / "side") == ""


def test_mixed_families_in_a_linked_worktree_keep_staged_work(tmp_path) -> None:
    # The one attempt loop on a linked worktree: its own branch, disk and index move with the
    # scratch ref; a person's staged file elsewhere stays staged, the main checkout is untouched.
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n", "b.txt": "b\n"})
    side = tmp_path / "side"
    git(repo, "worktree", "add", "-q", "-b", "side", str(side))
    (side / "b.txt").write_text("staged\n")
    git(side, "add", "b.txt")
    fs = MountedFilesystem({"/workspace": Workspace.open(side)})
    res = apply_patch_tool(fs, fs)(
        patch="*** Begin Patch\n*** Add File: work://s1/plan.md\n+plan\n"
        "*** Update File: a.txt\n@@\n-a\n+A\n*** End Patch"
    )
    assert res.ok, str(res)
    assert (side / "a.txt").read_text() == "A\n" and git(side, "show", "side:a.txt") == "A\n"
    assert git(side, "show", "refs/gitpatch/work/s1:plan.md") == "plan\n"
    assert status_porcelain(side) == "M  b.txt\n"
    assert (repo / "a.txt").read_text() == "a\n" and status_porcelain(repo) == ""


def test_staged_work_stays_staged(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n", "b.txt": "b\n"})
    (repo / "b.txt").write_text("staged\n")
    git(repo, "add", "b.txt")
    assert patch_tool(fs, fs)(path="a.txt", edits=sr("a\n", "x\n")).ok
    assert git(repo, "diff", "--cached", "--name-only").split() == ["b.txt"]


def test_sparse_checkout_outside_the_cone(tmp_path) -> None:
    repo = make_repo(tmp_path / "r", {"in/a.txt": "a\n", "out/b.txt": "b\n"})
    git(repo, "sparse-checkout", "set", "in")
    ws = Workspace.open(repo)
    assert patch_tool(ws, ws)(path="in/a.txt", edits=sr("a\n", "x\n")).ok
    before = head(repo)
    res = patch_tool(ws, ws)(path="out/b.txt", edits=sr("b\n", "x\n"))
    # Outside the cone the file is not on disk: the Workspace either edits the committed file
    # without checking it out, or reports it missing and changes nothing.
    assert not (repo / "out" / "b.txt").exists()
    if res.ok:
        assert git(repo, "show", "HEAD:out/b.txt") == "x\n"
    else:
        assert res.code == "resource_not_found", str(res)
        assert head(repo) == before and git(repo, "show", "HEAD:out/b.txt") == "b\n"


def test_mixed_families_on_a_sparse_checkout(tmp_path) -> None:
    # Outside the cone the ordinary file is edited in the commit and the index only, as any
    # proposal is; the scratch ref moves in the same transaction.
    repo = make_repo(tmp_path / "r", {"in/a.txt": "a\n", "out/b.txt": "b\n"})
    git(repo, "sparse-checkout", "set", "in")
    fs = MountedFilesystem({"/workspace": Workspace.open(repo)})
    res = apply_patch_tool(fs, fs)(
        patch="*** Begin Patch\n*** Add File: work://s1/plan.md\n+plan\n"
        "*** Update File: out/b.txt\n@@\n-b\n+B\n*** End Patch"
    )
    assert res.ok, str(res)
    assert not (repo / "out" / "b.txt").exists()
    assert git(repo, "show", "HEAD:out/b.txt") == "B\n"
    assert git(repo, "show", "refs/gitpatch/work/s1:plan.md") == "plan\n"
    assert status_porcelain(repo) == ""


def test_crlf_files_keep_their_endings(tmp_path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": b"one\r\ntwo\r\n"})
    git(repo, "config", "core.autocrlf", "true")
    ws = Workspace.open(repo)
    assert patch_tool(ws, ws)(path="a.txt", edits=sr("one\n", "uno\n")).ok
    assert (repo / "a.txt").read_bytes() == b"uno\r\ntwo\r\n"


def test_target_is_a_plain_record() -> None:
    mem = MemoryStorage({})
    assert mem.resolve("a/b.txt") == Target(mem, "a/b.txt", "a/b.txt")


def test_memory_writer_completes_on_success_and_preserves_on_failure() -> None:
    mem = MemoryStorage({"a.txt": "a\n", "b.txt": "b\n"})
    with pytest.raises(RuntimeError), mem.writer() as staged:
        staged["a.txt"] = b"new\n"
        staged["b.txt"] = None
        raise RuntimeError("half-way")
    assert mem.read_bytes("a.txt") == b"a\n" and mem.read_bytes("b.txt") == b"b\n"
    with mem.writer() as staged:
        staged["a.txt"] = b"new\n"
        staged["b.txt"] = None
    assert mem.read_bytes("a.txt") == b"new\n" and mem.list() == ["a.txt"]
    assert mem.stat("a.txt") is not None and mem.stat("b.txt") is None


def test_a_team_space_may_be_a_workspace(tmp_path) -> None:
    repo, ws, _fs = mounted(tmp_path / "r", {"a.txt": "team\n"})
    own = MemoryStorage({"a.txt": "mine\n"})
    tool = patch_resource_tool(own, own, spaces=lambda team: ws)
    res = tool(path="a.txt", edits=[{"old_string": "team", "new_string": "ours"}], team="core")
    assert res.ok and (repo / "a.txt").read_text() == "ours\n"


def test_workspace_storage_reads_lists_and_stats(tmp_path) -> None:
    from gitpatch.tools.storage.mounts import as_storage

    repo, ws, _fs = mounted(tmp_path / "r", {"a.txt": "a\n", "d/b.txt": "bb\n"})
    storage = as_storage(ws)
    assert storage.read_bytes("a.txt") == b"a\n"
    assert storage.list() == ["a.txt", "d/b.txt"] and storage.list("d") == ["d/b.txt"]
    assert storage.stat("d") is not None and storage.stat("d").kind == "directory"
    assert storage.stat("d/b.txt").size == 3 and storage.stat("nope") is None
    assert isinstance(storage, gitpatch.tools.storage.base.Storage)
