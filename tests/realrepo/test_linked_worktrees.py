"""Linked worktrees: a branch checked out in another worktree is never moved under it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import git, head
from tests.realrepo.kit import edit, fsck, make_repo, state, status

FILES = {"a.txt": "one\ntwo\n"}


@pytest.fixture
def repos(tmp_path: Path) -> tuple[Path, Path]:
    main = make_repo(tmp_path / "main", FILES)
    side = tmp_path / "side"
    git(main, "worktree", "add", "-q", "-b", "feature", str(side))
    return main, side


def test_auto_mode_on_a_branch_checked_out_elsewhere_is_refused(repos: tuple[Path, Path]) -> None:
    main, side = repos
    ws = Workspace.open(main, branch="feature")
    before, before_side = state(main), git(side, "ls-files", "-s") + status(side)
    tip = head(main, "feature")
    with pytest.raises(GitpatchError) as err:
        ws.propose(edit("a.txt", "two", "TWO"))
    assert err.value.code == "branch_checked_out"
    assert str(side) in err.value.message and err.value.details["worktree"] == str(side)
    assert head(main, "feature") == tip
    assert state(main) == before
    assert git(side, "ls-files", "-s") + status(side) == before_side


def test_approve_into_a_branch_checked_out_elsewhere_is_refused(repos: tuple[Path, Path]) -> None:
    main, side = repos
    ws = Workspace.open(main, "review", branch="feature")
    res = ws.propose(edit("a.txt", "two", "TWO"))
    tip = head(main, "feature")
    with pytest.raises(GitpatchError) as err:
        ws.approve(res.proposal_id, by="Pat")
    assert err.value.code == "branch_checked_out"
    assert head(main, "feature") == tip and status(side) == ""
    # opened in the worktree that has it checked out, the same approval lands there exactly
    there = Workspace.open(side, "review")
    there.approve(res.proposal_id, by="Pat")
    assert (side / "a.txt").read_text() == "one\nTWO\n" and status(side) == ""
    assert (main / "a.txt").read_text() == FILES["a.txt"] and status(main) == ""
    fsck(main)


def test_working_in_the_linked_worktree_itself_lands_there(repos: tuple[Path, Path]) -> None:
    main, side = repos
    ws = Workspace.open(side)
    assert ws.branch == "refs/heads/feature"
    ws.propose(edit("a.txt", "one", "ONE"))
    assert (side / "a.txt").read_text() == "ONE\ntwo\n" and status(side) == ""
    assert git(side, "diff", "--cached") == ""
    # the main worktree's branch is checked out there: from the linked one it is refused
    other = Workspace.open(side, branch="work")
    with pytest.raises(GitpatchError) as err:
        other.propose(edit("a.txt", "two", "TWO"))
    assert err.value.code == "branch_checked_out" and str(main) in err.value.message
    fsck(main)


def test_a_branch_nobody_has_checked_out_still_moves(repos: tuple[Path, Path]) -> None:
    main, _side = repos
    git(main, "branch", "spare")
    Workspace.open(main, branch="spare").propose(edit("a.txt", "two", "TWO"))
    assert git(main, "show", "spare:a.txt") == "one\nTWO\n"
    assert status(main) == ""
