"""``git update-index --assume-unchanged``: local changes git hides are never committed or lost.

``git commit -a`` never commits such a file's local changes and ``git checkout`` refuses to
overwrite them; gitpatch refuses every edit kind and every landing (approve, undo) that would
do either, with ``dirty_worktree``, and changes nothing. A marked file WITHOUT local changes is
landed as ``git checkout`` would (the mark goes with the replaced entry).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.core.model import DeleteFile, Proposal, Replace, UpdateFile
from gitpatch.errors import GitpatchError
from tests.gitkit import git, head
from tests.realrepo.kit import delete, edit, fsck, make_repo, state

FILES = {"f.txt": "a\nb\n", "g.txt": "g\n"}
LOCAL = "a\nb\nlocal\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "r", FILES)
    git(root, "update-index", "--assume-unchanged", "f.txt")
    (root / "f.txt").write_text(LOCAL)
    assert git(root, "status", "--porcelain") == ""  # git hides it
    return root


def move(src: str, dst: str) -> Proposal:
    return Proposal((UpdateFile(src, (Replace("a", "A"),), move_to=dst),), "patch_resource")


PROPOSALS = {
    "update": edit("f.txt", "a\n", "A\n"),
    "delete": delete("f.txt"),
    "move": move("f.txt", "h.txt"),
    "update_two": Proposal(
        (UpdateFile("g.txt", (Replace("g", "G"),)), DeleteFile("f.txt")), "patch_resource"
    ),
}


def refused(repo: Path, err: pytest.ExceptionInfo[GitpatchError], before: object) -> None:
    assert err.value.code == "dirty_worktree"
    assert "assume-unchanged" in err.value.message and "f.txt" in err.value.message
    assert err.value.details["reason"] == "assume_unchanged"
    assert state(repo) == before
    assert (repo / "f.txt").read_text() == LOCAL
    assert git(repo, "ls-files", "-v", "f.txt") == "h f.txt\n"  # the mark is kept
    assert git(repo, "show", "HEAD:f.txt") == FILES["f.txt"]


@pytest.mark.parametrize("kind", PROPOSALS)
def test_every_edit_kind_is_refused(repo: Path, kind: str) -> None:
    ws = Workspace.open(repo)
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(PROPOSALS[kind])
    refused(repo, err, before)


def test_approval_is_refused(repo: Path) -> None:
    git(repo, "update-index", "--no-assume-unchanged", "f.txt")
    (repo / "f.txt").write_text(FILES["f.txt"])
    ws = Workspace.open(repo, mode="review")
    res = ws.propose(edit("f.txt", "b\n", "B\n"))
    git(repo, "update-index", "--assume-unchanged", "f.txt")
    (repo / "f.txt").write_text(LOCAL)
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.approve(res.proposal_id, "person")
    refused(repo, err, before)


def test_undo_is_refused(repo: Path) -> None:
    git(repo, "update-index", "--no-assume-unchanged", "f.txt")
    (repo / "f.txt").write_text(FILES["f.txt"])
    ws = Workspace.open(repo)
    ws.propose(edit("f.txt", "b\n", "B\n"))
    git(repo, "update-index", "--assume-unchanged", "f.txt")
    (repo / "f.txt").write_text("a\nB\nlocal\n")
    before, tip = state(repo), head(repo)
    with pytest.raises(GitpatchError) as err:
        ws.undo()
    assert err.value.code == "dirty_worktree" and head(repo) == tip
    assert state(repo) == before and (repo / "f.txt").read_text() == "a\nB\nlocal\n"


def test_a_marked_file_without_local_changes_lands_as_checkout_does(repo: Path) -> None:
    (repo / "f.txt").write_text(FILES["f.txt"])
    Workspace.open(repo).propose(edit("f.txt", "a\n", "A\n"))
    assert (repo / "f.txt").read_text() == "A\nb\n"
    assert git(repo, "show", "HEAD:f.txt") == "A\nb\n"
    assert git(repo, "status", "--porcelain") == ""
    fsck(repo)
