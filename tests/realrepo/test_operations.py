"""Operations in progress (merge, cherry-pick, revert, rebase, bisect): refused and named."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import git, head, run_git
from tests.realrepo.kit import edit, fsck, make_repo, state

FILES = {"a.txt": "one\ntwo\nthree\n", "b.txt": "bee\n"}


def conflicting(tmp_path: Path) -> Path:
    """A repository whose branch `other` conflicts with `work` on a.txt."""
    repo = make_repo(tmp_path / "r", FILES)
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "a.txt").write_text("one\nOTHER\nthree\n")
    git(repo, "commit", "-q", "-am", "other")
    git(repo, "checkout", "-q", "work")
    (repo / "a.txt").write_text("one\nWORK\nthree\n")
    git(repo, "commit", "-q", "-am", "work")
    return repo


def refused(repo: Path, ws: Workspace, path: str, name: str) -> None:
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(edit(path, "bee" if path == "b.txt" else "one", "EDITED"))
    assert err.value.code == "operation_in_progress", err.value
    assert name in err.value.message and err.value.details["operation"] in (name, "conflict")
    assert state(repo) == before


@pytest.mark.parametrize(
    ("start", "name"),
    [
        (("merge", "other"), "merge"),
        (("cherry-pick", "other"), "cherry-pick"),
    ],
)
def test_conflicted_operation_refuses_landing(
    tmp_path: Path, start: tuple[str, str], name: str
) -> None:
    repo = conflicting(tmp_path)
    assert run_git(repo, *start).returncode != 0  # stopped on the conflict
    ws = Workspace.open(repo)
    refused(repo, ws, "b.txt", name)  # even a file the conflict does not touch
    refused(repo, ws, "a.txt", name)
    assert "UU a.txt" in git(repo, "status", "--porcelain")
    git(repo, start[0], "--abort")
    fsck(repo)


def test_revert_in_progress(tmp_path: Path) -> None:
    repo = conflicting(tmp_path)
    (repo / "a.txt").write_text("one\nLATER\nthree\n")
    git(repo, "commit", "-q", "-am", "later")
    assert run_git(repo, "revert", "--no-edit", "HEAD~1").returncode != 0
    refused(repo, Workspace.open(repo), "b.txt", "revert")


def test_review_proposal_on_an_unmerged_path_is_refused(tmp_path: Path) -> None:
    repo = conflicting(tmp_path)
    assert run_git(repo, "merge", "other").returncode != 0
    ws = Workspace.open(repo, "review")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(edit("a.txt", "one", "ONE"))
    assert err.value.code == "operation_in_progress"
    assert state(repo) == before


def test_rebase_in_progress_refuses_moving_the_rebased_branch(tmp_path: Path) -> None:
    repo = conflicting(tmp_path)
    assert run_git(repo, "rebase", "other").returncode != 0
    tip = head(repo, "work")
    ws = Workspace.open(repo, branch="work")
    with pytest.raises(GitpatchError) as err:
        ws.propose(edit("b.txt", "bee", "BEE"))
    assert err.value.code == "operation_in_progress" and "rebase" in err.value.message
    assert head(repo, "work") == tip
    git(repo, "rebase", "--abort")
    assert head(repo, "work") == tip
    fsck(repo)


def test_bisect_refuses_moving_the_bisected_branch(tmp_path: Path) -> None:
    repo = conflicting(tmp_path)
    git(repo, "bisect", "start", "work", "work~1")
    tip = head(repo, "work")
    ws = Workspace.open(repo, branch="work")
    with pytest.raises(GitpatchError) as err:
        ws.propose(edit("b.txt", "bee", "BEE"))
    assert err.value.code == "operation_in_progress" and "bisect" in err.value.message
    assert head(repo, "work") == tip
    git(repo, "bisect", "reset")


def test_opening_on_a_protected_branch_during_a_merge_does_not_switch_head(
    tmp_path: Path,
) -> None:
    repo = conflicting(tmp_path)
    git(repo, "branch", "-m", "work", "main")  # protected: auto mode starts a session
    assert run_git(repo, "merge", "other").returncode != 0
    before = state(repo)
    ws = Workspace.open(repo)  # in a worktree of its own: the person's merge is not its business
    ws.plumbing.session_worktree()
    assert ws.plumbing.worktree is not None and ws.plumbing.worktree.root != repo
    after = state(repo)
    assert after.pop("refs") != before.pop("refs")  # the session branch, nothing else
    assert after == before
    assert git(repo, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
