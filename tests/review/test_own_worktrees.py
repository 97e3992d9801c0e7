"""Only worktrees gitpatch made are sessions' (``worktrees.made_for``): a person's own linked
worktree in the ``gitpatch.worktrees`` folder is never listed, followed, taken or removed as
a session's, even one named like a session; a worktree an older gitpatch made (no marker in
its git directory) is still its session's."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError, ProposalNotFound
from gitpatch.review import worktrees
from tests.gitkit import git, repo_state

FILES = {
    "pkg/a.py": "def f():\n    return 1\n",
    "pkg/b.py": "B = 1\n",
}

EDIT_B = "<<<<<<< SEARCH\nB = 1\n=======\nB = 2\n>>>>>>> REPLACE\n"


def _persons_worktree(repo: Path, *args: str, name: str = "feature") -> Path:
    git(repo, "config", "gitpatch.worktrees", "../wts")
    git(repo, "worktree", "add", "-q", f"../wts/{name}", *args)
    mine = repo.parent / "wts" / name
    (mine / "mine.txt").write_text("mine\n")
    return mine


def test_a_session_named_like_a_persons_worktree_never_takes_it(repo: Path) -> None:
    mine = _persons_worktree(repo, "-b", "feature")
    agent = Workspace.open(repo, "review", session="feature")
    agent.apply(EDIT_B, path="pkg/b.py")
    before = repo_state(mine)
    with pytest.raises(GitpatchError):  # its place is taken: refused, never the person's
        agent.plumbing.session_worktree()
    assert git(mine, "symbolic-ref", "-q", "HEAD").strip() == "refs/heads/feature"
    assert repo_state(mine) == before
    person = Workspace.open(repo, "review")
    assert [(s.name, s.worktree) for s in person.sessions()] == [("feature", "")]


def test_a_persons_detached_worktree_where_a_session_would_go_is_none(repo: Path) -> None:
    mine = _persons_worktree(repo, "--detach", name="bot")
    head = git(mine, "rev-parse", "HEAD")
    person = Workspace.open(repo, "review")
    assert person.sessions() == []
    with pytest.raises(ProposalNotFound):
        person.end_session("bot")
    assert (mine / "mine.txt").exists() and git(mine, "rev-parse", "HEAD") == head


def test_a_session_worktree_knows_its_session_through_a_checkout_inside_it(repo: Path) -> None:
    git(repo, "config", "gitpatch.worktrees", "../wts")
    agent = Workspace.open(repo, "review", session="bot")
    where = agent.plumbing.session_worktree().path
    git(where, "checkout", "-q", "-b", "scratch")  # HEAD no longer what gitpatch left
    assert worktrees.made_for(agent.plumbing.store, where)
    assert [s.worktree for s in Workspace.open(repo, "review").sessions()] == [str(where)]


def test_a_worktree_an_older_gitpatch_made_is_still_its_sessions(repo: Path) -> None:
    git(repo, "config", "gitpatch.worktrees", "../wts")
    agent = Workspace.open(repo, "review", session="bot")
    where = agent.plumbing.session_worktree().path
    (worktrees.linked_gitdir(where) / "gitpatch-session").unlink()  # as an older one left it
    person = Workspace.open(repo, "review")
    assert [(s.name, s.worktree) for s in person.sessions()] == [("bot", str(where))]
    pid = agent.apply(EDIT_B, path="pkg/b.py").proposal_id
    person.approve(pid, "person")
    assert (where / "pkg/b.py").read_text() == "B = 2\n"  # followed the verdict
    person.end_session("bot")
    assert not where.exists()


@pytest.mark.parametrize("setting", [None, "../wts"])
def test_a_session_worktree_removed_by_hand_is_made_again(repo: Path, setting: str | None) -> None:
    """``rm -rf`` of an auto session's worktree: its next change lands (git's record of the
    removed folder is dropped; the branch was "checked out" there, so no change could land)."""
    if setting is not None:
        git(repo, "config", "gitpatch.worktrees", setting)
    ws = Workspace.open(repo, "auto", session="bot")
    ws.apply("*** Begin Patch\n*** Add File: one.txt\n+one\n*** End Patch\n")
    bot = ws.plumbing.session_worktree().path
    shutil.rmtree(bot)
    again = Workspace.open(repo, "auto", session="bot")
    again.apply("*** Begin Patch\n*** Add File: two.txt\n+two\n*** End Patch\n")
    assert again.plumbing.session_worktree().path == bot
    assert (bot / "one.txt").read_text() == "one\n" and (bot / "two.txt").read_text() == "two\n"
    listed = git(repo, "worktree", "list", "--porcelain")
    assert listed.count(f"worktree {bot}\n") == 1 and "prunable" not in listed
    assert git(bot, "status", "--porcelain") == ""
