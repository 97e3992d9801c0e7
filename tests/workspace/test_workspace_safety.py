"""Workspace safety: unsafe paths, dirty and ignored files; every error changes nothing."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from gitpatch.core.model import AddFile, DeleteFile, Proposal, Replace, UpdateFile
from gitpatch.errors import GitpatchError
from gitpatch.porcelain.workspace import Workspace
from tests.gitkit import git, head, make_repo, note, sr, state, status_porcelain
from tests.ownerkit import killed_holding

FILES = {
    "a.txt": "alpha\nbeta\ngamma\n",
    "b.txt": "one\ntwo\n",
    "src/c.py": "x = 1\n",
    ".gitignore": "*.log\nbuild/\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "repo", FILES)
    os.symlink("a.txt", root / "link.txt")
    os.symlink("src", root / "srclink")
    git(root, "add", "link.txt", "srclink")
    git(root, "commit", "-q", "-m", "links")
    sub = root / "binary.bin"
    sub.write_bytes(b"\x00\x01\x02")
    git(root, "add", "binary.bin")
    git(root, "commit", "-q", "-m", "binary")
    return root


def upd(path: str, old: str = "alpha", new: str = "ALPHA") -> Proposal:
    return Proposal((UpdateFile(path, (Replace(old, new),)),), "patch_resource", tool="t")


ERRORS: list[tuple[str, Callable[[Workspace], object], str]] = [
    ("git dir", lambda ws: ws.propose(upd(".git/config")), "path_unsafe"),
    ("escape", lambda ws: ws.propose(upd("../outside.txt")), "path_unsafe"),
    ("absolute outside", lambda ws: ws.propose(upd("/etc/passwd")), "path_unsafe"),
    ("tracked symlink", lambda ws: ws.propose(upd("link.txt")), "path_unsafe"),
    ("through symlink dir", lambda ws: ws.propose(upd("srclink/c.py", "x", "y")), "path_unsafe"),
    ("directory", lambda ws: ws.propose(upd("src")), "not_a_text_resource"),
    ("binary", lambda ws: ws.propose(upd("binary.bin")), "not_a_text_resource"),
    ("missing", lambda ws: ws.propose(upd("nope.txt")), "resource_not_found"),
    ("no match", lambda ws: ws.apply(sr("zeta\n", "Z\n"), path="a.txt"), "match_not_found"),
    ("bad patch", lambda ws: ws.apply("*** Begin Patch\nnonsense\n"), "invalid_patch"),
    ("empty edits", lambda ws: ws.apply([], path="a.txt"), "empty_edits"),
    (
        "add existing",
        lambda ws: ws.propose(Proposal((AddFile("b.txt", "x"),), "patch_resource")),
        "resource_exists",
    ),
    (
        "third op fails",
        lambda ws: ws.propose(
            Proposal(
                (
                    UpdateFile("a.txt", (Replace("alpha", "A"),)),
                    DeleteFile("b.txt"),
                    UpdateFile("src/c.py", (Replace("not there", "y"),)),
                ),
                "patch_resource",
            )
        ),
        "match_not_found",
    ),
    ("read missing", lambda ws: ws.read("nope.txt"), "resource_not_found"),
    ("read binary", lambda ws: ws.read("binary.bin"), "not_a_text_resource"),
    ("read git", lambda ws: ws.read(".git/HEAD"), "path_unsafe"),
]


@pytest.mark.parametrize("mode", ["auto", "review"])
@pytest.mark.parametrize(("name", "call", "code"), ERRORS, ids=[e[0] for e in ERRORS])
def test_error_changes_nothing(
    repo: Path, mode: str, name: str, call: Callable[[Workspace], object], code: str
) -> None:
    # a dirty file the failing call also touches must not get recorded either
    (repo / "a.txt").write_text("alpha\nbeta\ngamma\nlocal\n")
    ws = Workspace.open(repo, mode=mode)  # type: ignore[arg-type]
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        call(ws)
    assert err.value.code == code, err.value.message
    assert err.value.message
    assert state(repo) == before
    assert git(repo, "notes", "--ref", "gitpatch", "list", check=False) == ""


def test_dirty_file_recorded_first_then_edited(repo: Path) -> None:
    base = head(repo)
    (repo / "a.txt").write_text("alpha\nbeta\ngamma\nlocal\n")
    ws = Workspace.open(repo, dirty="record")
    res = ws.apply(sr("alpha\n", "ALPHA\n"), path="a.txt")
    assert (repo / "a.txt").read_text() == "ALPHA\nbeta\ngamma\nlocal\n"
    record = head(repo, "HEAD~1")
    assert res.base == record and head(repo, "HEAD~2") == base
    assert "Gitpatch-Record: " + res.proposal_id in git(repo, "log", "-1", "--format=%B", record)
    assert git(repo, "show", f"{record}:a.txt") == "alpha\nbeta\ngamma\nlocal\n"
    # the agent's diff holds its edit only
    assert git(repo, "diff", "--stat", record, res.version).count("|") == 1
    added = [
        line
        for line in git(repo, "diff", record, res.version).splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    assert added == ["+ALPHA"]
    assert status_porcelain(repo) == ""


def test_untracked_file_recorded_as_add(repo: Path) -> None:
    (repo / "notes.md").write_text("draft\n")
    ws = Workspace.open(repo, dirty="record")
    ws.apply(sr("draft\n", "final\n"), path="notes.md")
    assert git(repo, "show", "HEAD~1:notes.md") == "draft\n"
    assert git(repo, "show", "HEAD:notes.md") == "final\n"
    assert status_porcelain(repo) == ""


def test_only_touched_paths_are_recorded(repo: Path) -> None:
    (repo / "a.txt").write_text("alpha\nchanged\n")
    (repo / "b.txt").write_text("one\nlocal\n")
    ws = Workspace.open(repo, dirty="record")
    res = ws.apply(sr("one\n", "ONE\n"), path="b.txt")
    assert git(repo, "diff", "--name-only", head(repo, "HEAD~2"), res.version) == "b.txt\n"
    assert status_porcelain(repo) == " M a.txt\n"


def test_dirty_refuse(repo: Path) -> None:
    (repo / "a.txt").write_text("alpha\nlocal\n")
    ws = Workspace.open(repo, dirty="refuse")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.apply(sr("alpha\n", "A\n"), path="a.txt")
    assert err.value.code == "dirty_worktree" and "a.txt" in err.value.message
    assert state(repo) == before
    # a clean file still works
    ws.apply(sr("one\n", "ONE\n"), path="b.txt")


def test_ignored_file_refused_unless_configured(repo: Path) -> None:
    (repo / "run.log").write_text("x\n")
    ws = Workspace.open(repo, dirty="record")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.apply(sr("x\n", "y\n"), path="run.log")
    assert err.value.code == "path_ignored"
    with pytest.raises(GitpatchError) as err:
        ws.propose(Proposal((AddFile("build/out.txt", "x\n"),), "apply_patch"))
    assert err.value.code == "path_ignored"
    assert state(repo) == before
    git(repo, "config", "gitpatch.allowIgnored", "true")
    ws = Workspace.open(repo, dirty="record")
    ws.apply(sr("x\n", "y\n"), path="run.log")
    assert (repo / "run.log").read_text() == "y\n"


def test_untracked_directory_and_symlink_on_disk_refused(repo: Path) -> None:
    (repo / "newdir").mkdir()
    (repo / "newdir" / "f.txt").write_text("f\n")
    os.symlink("/etc", repo / "etclink")
    ws = Workspace.open(repo)
    before = state(repo)
    for call, code in [
        (lambda: ws.propose(upd("newdir")), "not_a_text_resource"),
        (
            lambda: ws.propose(Proposal((AddFile("etclink/x", "y"),), "patch_resource")),
            "path_unsafe",
        ),
        (lambda: ws.read("etclink/passwd"), "path_unsafe"),
    ]:
        with pytest.raises(GitpatchError) as err:
            call()
        assert err.value.code == code
    assert state(repo) == before


def test_submodule_entry_refused(repo: Path) -> None:
    commit = head(repo)
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{commit},vendor")
    git(repo, "commit", "-q", "-m", "submodule")
    ws = Workspace.open(repo)
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(upd("vendor/x.txt"))
    assert err.value.code == "not_a_text_resource" and "submodule" in err.value.message
    assert state(repo) == before


def test_read_returns_disk_content_of_checked_out_branch(repo: Path) -> None:
    (repo / "a.txt").write_text("on disk\n")
    ws = Workspace.open(repo, dirty="record")
    seen = ws.read("a.txt")
    # uncommitted content gets a version of its own: a commit pinning it on top of the head
    assert seen.content == "on disk\n" and seen.version != head(repo)
    assert git(repo, "rev-parse", seen.version + "^").strip() == head(repo)
    assert git(repo, "show", seen.version + ":a.txt") == "on disk\n"
    res = ws.apply(
        [{"old_string": "disk", "new_string": "DISK"}],
        path="a.txt",
        expected_version=seen.version,
    )
    assert (repo / "a.txt").read_text() == "on DISK\n"
    assert note(repo, res.version)


def test_index_changes_by_git_between_calls_are_kept(repo: Path) -> None:
    ws = Workspace.open(repo)
    ws.apply(sr("alpha\n", "ALPHA\n"), path="a.txt")
    # a person stages a change with git between two calls: the cached index must be re-read
    (repo / "b.txt").write_text("one\ntwo\nstaged\n")
    git(repo, "add", "b.txt")
    ws.apply(sr("gamma\n", "GAMMA\n"), path="a.txt")
    assert status_porcelain(repo) == "M  b.txt\n"
    assert git(repo, "diff", "--cached", "--name-only") == "b.txt\n"


def test_review_mode_records_dirty_file_in_the_proposal_only(repo: Path) -> None:
    base = head(repo)
    (repo / "a.txt").write_text("alpha\nbeta\ngamma\nlocal\n")
    before = state(repo)
    ws = Workspace.open(repo, mode="review", dirty="record")
    res = ws.apply(sr("alpha\n", "ALPHA\n"), path="a.txt")
    assert head(repo) == base and res.base != base
    assert head(repo, f"{res.version}~1") == res.base
    assert head(repo, f"{res.version}~2") == base
    assert git(repo, "show", f"{res.version}:a.txt") == "ALPHA\nbeta\ngamma\nlocal\n"
    after = state(repo)
    assert {k: v for k, v in after.items() if k != "refs"} == {
        k: v for k, v in before.items() if k != "refs"
    }


def test_locks_of_a_killed_process_do_not_block_the_next_call(repo: Path) -> None:
    ws = Workspace.open(repo)
    locks = [repo / ".git/index.lock", repo / ".git/refs/heads/work.lock"]
    killed_holding(repo / ".git", locks)
    res = ws.apply(sr("alpha\n", "ALPHA\n"), path="a.txt")
    assert head(repo) == res.version and status_porcelain(repo) == ""
    assert not any(lock.exists() for lock in locks)


def test_a_lock_no_gitpatch_process_claims_is_never_removed(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person's git may hold it, however old: refuse, name it, change nothing."""
    monkeypatch.setattr("gitpatch.store._refs.LOCK_RETRIES", 2)
    ws = Workspace.open(repo)
    lock = repo / ".git/refs/heads/work.lock"
    lock.write_text("")
    os.utime(lock, (1_000_000_000, 1_000_000_000))
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.apply(sr("alpha\n", "ALPHA\n"), path="a.txt")
    assert err.value.code == "concurrent_update" and str(lock) in err.value.message
    assert "not gitpatch" in err.value.message and lock.exists()
    lock.unlink()
    assert state(repo) == before


def test_untracked_file_where_a_directory_must_go_is_refused_first(repo: Path) -> None:
    (repo / "notes").write_text("an untracked file\n")
    ws = Workspace.open(repo)
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(Proposal((AddFile("notes/today.md", "x\n"),), "apply_patch"))
    assert err.value.code == "resource_exists" and "notes" in err.value.message
    assert state(repo) == before


def test_tracked_file_replaced_by_directory_in_one_proposal(repo: Path) -> None:
    ws = Workspace.open(repo)
    ws.propose(Proposal((DeleteFile("b.txt"), AddFile("b.txt/inner.txt", "x\n")), "apply_patch"))
    assert (repo / "b.txt/inner.txt").read_text() == "x\n" and status_porcelain(repo) == ""
