"""Sparse checkouts: files outside the sparse set live in the commit and the index only."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import git, head
from tests.realrepo.kit import add, delete, edit, fsck, make_repo, staged, state, status

FILES = {"a/x.txt": "x one\nx two\n", "b/y.txt": "y one\ny two\n"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "r", FILES)
    git(root, "sparse-checkout", "set", "a")
    assert not (root / "b").exists()
    return root


def flags(repo: Path) -> str:
    return git(repo, "ls-files", "-t")


def test_read_outside_the_sparse_set_comes_from_the_commit(repo: Path) -> None:
    ws = Workspace.open(repo)
    seen = ws.read("b/y.txt")
    assert seen.content == FILES["b/y.txt"] and seen.version == head(repo)


def test_add_on_a_file_outside_the_sparse_set_is_resource_exists(repo: Path) -> None:
    ws = Workspace.open(repo)
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(add("b/y.txt", "replacement\n"))
    assert err.value.code == "resource_exists"
    assert state(repo) == before
    assert git(repo, "show", "HEAD:b/y.txt") == FILES["b/y.txt"]


def test_edit_outside_updates_commit_and_index_keeps_the_bit_writes_nothing(repo: Path) -> None:
    ws = Workspace.open(repo)
    res = ws.propose(edit("b/y.txt", "y two", "Y TWO"))
    assert git(repo, "show", "HEAD:b/y.txt") == "y one\nY TWO\n"
    assert git(repo, "diff", "--stat", "HEAD~1", "HEAD").count("|") == 1
    assert not (repo / "b").exists()
    assert "S b/y.txt" in flags(repo)
    assert status(repo) == "" and staged(repo) == ""
    assert res.files[0].action == "update"
    fsck(repo)


def test_edit_inside_the_sparse_set_lands_on_disk(repo: Path) -> None:
    ws = Workspace.open(repo)
    ws.propose(edit("a/x.txt", "x two", "X TWO"))
    assert (repo / "a/x.txt").read_text() == "x one\nX TWO\n"
    assert "S b/y.txt" in flags(repo) and "H a/x.txt" in flags(repo)
    assert status(repo) == ""
    fsck(repo)


def test_delete_outside_removes_the_entry_and_undo_brings_it_back(repo: Path) -> None:
    ws = Workspace.open(repo)
    ws.propose(delete("b/y.txt"))
    assert git(repo, "ls-tree", "-r", "--name-only", "HEAD") == "a/x.txt\n"
    assert status(repo) == "" and not (repo / "b").exists()
    ws.undo()
    assert git(repo, "show", "HEAD:b/y.txt") == FILES["b/y.txt"]
    # a path new to the index is written like any tracked file (documented): nothing is lost,
    # and `git sparse-checkout reapply` hides it again
    assert (repo / "b/y.txt").read_text() == FILES["b/y.txt"]
    assert status(repo) == ""
    git(repo, "sparse-checkout", "reapply")
    assert "S b/y.txt" in flags(repo) and not (repo / "b").exists()
    fsck(repo)


def test_review_and_approve_outside_the_sparse_set(repo: Path) -> None:
    ws = Workspace.open(repo, "review")
    res = ws.propose(edit("b/y.txt", "y one", "Y ONE"))
    assert "-y one" in ws.show(res.proposal_id).diff
    ws.approve(res.proposal_id, by="Pat")
    assert git(repo, "show", "HEAD:b/y.txt") == "Y ONE\ny two\n"
    assert "S b/y.txt" in flags(repo) and not (repo / "b").exists()
    assert status(repo) == ""


def test_hidden_local_file_with_skip_worktree_is_never_overwritten(tmp_path: Path) -> None:
    # people hide local edits of a tracked config file with --skip-worktree
    repo = make_repo(tmp_path / "r", {"conf.ini": "a=1\n", "app.py": "x\n"})
    git(repo, "update-index", "--skip-worktree", "conf.ini")
    (repo / "conf.ini").write_text("a=LOCAL\n")
    ws = Workspace.open(repo)
    assert ws.read("conf.ini").content == "a=1\n"
    ws.propose(edit("conf.ini", "a=1", "a=2"))
    assert (repo / "conf.ini").read_text() == "a=LOCAL\n"
    assert git(repo, "show", "HEAD:conf.ini") == "a=2\n"
    assert "S conf.ini" in git(repo, "ls-files", "-t")
    assert status(repo) == ""
    fsck(repo)


def test_a_session_worktree_of_a_sparse_checkout_keeps_its_sparse_set(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "m", FILES, branch="main")
    git(root, "sparse-checkout", "set", "a")
    before = state(root)
    ws = Workspace.open(root)  # protected main: the session gets a worktree of its own
    ws.plumbing.session_worktree()
    assert ws.plumbing.worktree is not None and ws.plumbing.worktree.root != root
    assert not (ws.plumbing.worktree.root / "b").exists()
    ws.propose(edit("b/y.txt", "y one", "Y ONE"))
    ws.propose(edit("a/x.txt", "x one", "X ONE"))
    assert (ws.plumbing.worktree.root / "a/x.txt").read_text() == "X ONE\nx two\n"
    assert git(root, "show", "gitpatch/session/agent:b/y.txt") == "Y ONE\ny two\n"
    assert (
        status(ws.plumbing.worktree.root) == "" and not (ws.plumbing.worktree.root / "b").exists()
    )
    after = state(root)
    assert after.pop("refs") != before.pop("refs") and after == before
    fsck(root)
