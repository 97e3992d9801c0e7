"""States that were refused with misleading words (issue 26): each now says what it is and what
to do next, with a stable reason, and changes nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import git, run_git
from tests.realrepo.kit import add, edit, make_repo, state

FILES = {"a.txt": "alpha\n", "t.txt": "target\n"}


def test_a_sha256_repository_says_so(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    made = run_git(tmp_path, "init", "-q", "--object-format=sha256", str(repo))
    if made.returncode != 0:
        pytest.skip("this git cannot make SHA-256 repositories")
    before = sorted(p.name for p in (repo / ".git").iterdir())
    with pytest.raises(GitpatchError) as caught:
        Workspace.open(repo)
    err = caught.value
    assert err.code == "repository_error" and err.details["reason"] == "object_format"
    assert "SHA-256" in err.message and "not a git repository" not in err.message
    assert err.hint and "sha1" in err.hint
    assert sorted(p.name for p in (repo / ".git").iterdir()) == before


def test_an_intent_to_add_file_is_named_as_such(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    (repo / "n.txt").write_text("planned\n")
    git(repo, "add", "-N", "n.txt")
    before = state(repo)
    ws = Workspace.open(repo)
    for proposal in (edit("n.txt", "planned", "PLANNED"), add("n.txt", "other\n")):
        with pytest.raises(GitpatchError) as caught:
            ws.propose(proposal)
        err = caught.value
        assert err.code == "staged_changes" and err.details["reason"] == "intent_to_add"
        assert "git add -N" in err.message and "has staged changes" not in err.message
        assert err.hint and "git add n.txt" in err.hint and "git rm --cached n.txt" in err.hint
        assert state(repo) == before


@pytest.mark.parametrize("step", ["approve", "undo"])
def test_a_file_turned_into_a_symlink_is_named_as_such(step: str, tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    if step == "approve":
        ws = Workspace.open(repo, mode="review")
        pid = ws.propose(edit("a.txt", "alpha", "ALPHA")).proposal_id
    else:
        ws = Workspace.open(repo)
        ws.propose(edit("a.txt", "alpha", "ALPHA"))
    os.remove(repo / "a.txt")
    os.symlink("t.txt", repo / "a.txt")
    before = state(repo)
    with pytest.raises(GitpatchError) as caught:
        ws.approve(pid, by="Reviewer") if step == "approve" else ws.undo()
    err = caught.value
    assert err.code == "dirty_worktree" and err.details["reason"] == "type_changed"
    assert "is a symlink (to t.txt)" in err.message
    assert "Read the file again" not in str(err) and "line" not in err.message
    assert err.hint and "git checkout -- a.txt" in err.hint
    assert state(repo) == before and os.readlink(repo / "a.txt") == "t.txt"


def test_a_persons_branch_named_gitpatch_is_named(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    git(repo, "branch", "gitpatch")
    before = state(repo)
    with pytest.raises(GitpatchError) as caught:
        Workspace.open(repo, mode="review").propose(edit("a.txt", "alpha", "ALPHA"))
    err = caught.value
    assert err.code == "repository_error" and err.details["reason"] == "ref_conflict"
    assert err.details["blocking"] == "refs/heads/gitpatch"
    assert "parent is not directory" not in err.message
    assert err.hint and "git branch -m gitpatch" in err.hint
    assert state(repo) == before
