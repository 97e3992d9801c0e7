"""Undo on real checkouts: a file replaced by a directory, and an agent commit a person amended."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.core.model import AddFile, DeleteFile, Proposal
from gitpatch.errors import GitpatchError
from tests.gitkit import git, head
from tests.realrepo.kit import edit, fsck, make_repo, state, status

FILES = {"a": "a file\n", "b.txt": "one\ntwo\nthree\n"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", FILES)


def test_undo_of_delete_a_and_add_a_slash_b(repo: Path) -> None:
    ws = Workspace.open(repo)
    swap = Proposal((DeleteFile("a"), AddFile("a/b", "inside\n")), "patch_resource", tool="t")
    ws.propose(swap)
    assert (repo / "a/b").read_text() == "inside\n"
    ws.undo()
    assert (repo / "a").read_text() == "a file\n"
    assert git(repo, "ls-tree", "-r", "--name-only", "HEAD") == "a\nb.txt\n"
    assert status(repo) == ""
    fsck(repo)


def test_undo_after_amend_reverts_only_the_agents_change(repo: Path) -> None:
    ws = Workspace.open(repo)
    ws.propose(edit("b.txt", "one", "ONE"))
    # the person amends the agent's commit with work of their own (the trailer stays)
    (repo / "b.txt").write_text("ONE\ntwo\nthree\nperson\n")
    (repo / "c.txt").write_text("person's file\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--amend", "--no-edit")
    assert "Gitpatch-Proposal" in git(repo, "log", "-1", "--format=%B")
    ws.undo()
    assert (repo / "b.txt").read_text() == "one\ntwo\nthree\nperson\n"
    assert (repo / "c.txt").read_text() == "person's file\n"
    assert git(repo, "show", "HEAD:c.txt") == "person's file\n"
    assert status(repo) == ""
    fsck(repo)


def test_undo_after_an_amend_that_rewrote_the_agents_lines_is_refused(repo: Path) -> None:
    ws = Workspace.open(repo)
    ws.propose(edit("b.txt", "one", "ONE"))
    (repo / "b.txt").write_text("ONE by the person\ntwo\nthree\n")
    git(repo, "commit", "-q", "-a", "--amend", "--no-edit")
    before, tip = state(repo), head(repo)
    with pytest.raises(GitpatchError) as err:
        ws.undo()
    assert err.value.code == "merge_conflict"
    assert state(repo) == before and head(repo) == tip
