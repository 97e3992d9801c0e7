"""A sparse index (``index.sparse``): every index write outside the cone stays a valid index."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.core.model import Proposal
from tests.gitkit import git
from tests.realrepo.kit import edit, fsck, make_repo, status

FILES = {"a/f.txt": "a1\n", "b/g.txt": "b1\nb2\n"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "r", FILES)
    git(root, "sparse-checkout", "init", "--cone", "--sparse-index")
    git(root, "sparse-checkout", "set", "a")
    assert "b/\n" in git(root, "ls-files", "--sparse")  # collapsed into one entry
    return root


def valid(repo: Path) -> None:
    """git reads the index, fsck passes, and a person's next commit records no duplicate."""
    entries = git(repo, "ls-files", "--sparse").split()
    assert not ("b/" in entries and "b/g.txt" in entries), entries
    fsck(repo)
    (repo / "a/f.txt").write_text("person\n")
    git(repo, "commit", "-q", "-am", "person")
    fsck(repo)
    assert git(repo, "ls-tree", "-r", "--name-only", "HEAD") == "a/f.txt\nb/g.txt\n"


def test_approve_out_of_the_cone_keeps_the_index_valid(repo: Path) -> None:
    ws = Workspace.open(repo, mode="review")
    res = ws.propose(edit("b/g.txt", "b2", "B2"))
    ws.approve(res.proposal_id, "person")
    assert git(repo, "show", "HEAD:b/g.txt") == "b1\nB2\n"
    assert status(repo) == ""
    valid(repo)
    assert git(repo, "show", "HEAD:b/g.txt") == "b1\nB2\n"  # not reverted by the commit


def test_undo_out_of_the_cone_keeps_the_index_valid(repo: Path) -> None:
    ws = Workspace.open(repo)
    ws.propose(edit("b/g.txt", "b2", "B2"))
    ws.undo()
    assert git(repo, "show", "HEAD:b/g.txt") == FILES["b/g.txt"]
    assert status(repo) == ""
    valid(repo)
    assert git(repo, "show", "HEAD:b/g.txt") == FILES["b/g.txt"]


def test_auto_land_out_of_the_cone_keeps_the_index_valid(repo: Path) -> None:
    ws = Workspace.open(repo)
    ws.propose(edit("b/g.txt", "b2", "B2"))
    assert not (repo / "b").exists() and status(repo) == ""
    valid(repo)
    assert git(repo, "show", "HEAD~1:b/g.txt") == "b1\nB2\n"


def test_approve_in_and_out_of_the_cone_together(repo: Path) -> None:
    ws = Workspace.open(repo, mode="review")
    both = Proposal(
        (*edit("b/g.txt", "b2", "B2").operations, *edit("a/f.txt", "a1", "A1").operations),
        "patch_resource",
    )
    res = ws.propose(both)
    ws.approve(res.proposal_id, "person")
    assert (repo / "a/f.txt").read_text() == "A1\n" and status(repo) == ""
    valid(repo)
