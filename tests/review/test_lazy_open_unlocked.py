"""Opening a lazy session (its branch, no worktree of its own) drops git's record of its
own worktree's folder removed by hand (``test_own_worktrees``), yet it never waits for the
workbench's lock when there is no such record: a land on the session in another process
holds that lock for the whole edit. And a record the person locked (``git worktree lock``,
git's word for "away, keep it") is kept, as ``git worktree prune`` keeps it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from gitpatch.review import workbench, worktrees
from tests.gitkit import git

FILES = {"pkg/a.py": "A = 1\n"}

ADD_ONE = "*** Begin Patch\n*** Add File: one.txt\n+one\n*** End Patch\n"
ADD_TWO = "*** Begin Patch\n*** Add File: two.txt\n+two\n*** End Patch\n"


def test_opening_a_lazy_session_takes_no_lock(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = Workspace.open(repo, "auto", session="bot")
    ws.apply(ADD_ONE)  # the branch is there, no worktree: lazy
    store = ws.plumbing.store
    assert not worktrees.place(store, "bot").exists()
    monkeypatch.setattr(workbench, "_WAIT_SECONDS", 0.2)  # a wait fails at once, not in 60 s
    with workbench.locked(store, "bot"):  # as a land in another process holds it
        again = Workspace.open(repo, "auto", session="bot")
    again.apply(ADD_TWO)
    assert git(repo, "show", "gitpatch/session/bot:two.txt") == "two\n"


def test_a_removed_worktree_the_person_locked_keeps_its_record(repo: Path) -> None:
    git(repo, "config", "gitpatch.worktrees", "../wts")
    ws = Workspace.open(repo, "auto", session="bot")
    ws.apply(ADD_ONE)
    bot = ws.plumbing.session_worktree().path
    git(repo, "worktree", "lock", "--reason", "on my usb stick", str(bot))
    shutil.rmtree(bot)  # as the drive it is on being away looks
    tip = git(repo, "rev-parse", "refs/heads/gitpatch/session/bot")
    with pytest.raises(GitpatchError) as refused:  # still checked out there for git: refused
        Workspace.open(repo, "auto", session="bot").apply(ADD_TWO)
    assert refused.value.code == "branch_checked_out"
    assert "git worktree unlock" in (refused.value.hint or "")
    assert git(repo, "rev-parse", "refs/heads/gitpatch/session/bot") == tip  # nothing landed
    listed = git(repo, "worktree", "list", "--porcelain")
    assert f"worktree {bot}\n" in listed and "locked on my usb stick" in listed
    git(repo, "worktree", "unlock", str(bot))  # the person's word: it is gone after all
    again = Workspace.open(repo, "auto", session="bot")
    again.apply(ADD_TWO)
    assert again.plumbing.session_worktree().path == bot
    assert (bot / "two.txt").read_text() == "two\n"


def test_a_persons_missing_worktree_where_a_session_would_go_keeps_its_record(
    repo: Path,
) -> None:
    """A person's own worktree in the ``gitpatch.worktrees`` folder, named like a session, its
    folder missing (a drive away, say): opening the session, and the session's need of a
    worktree, leave git's record of it (it never blocked the session's branch)."""
    git(repo, "config", "gitpatch.worktrees", "../wts")
    git(repo, "worktree", "add", "-q", "../wts/feature", "-b", "feature")
    mine = repo.parent / "wts" / "feature"
    shutil.rmtree(mine)
    ws = Workspace.open(repo, "auto", session="feature")
    ws.apply(ADD_ONE)
    again = Workspace.open(repo, "auto", session="feature")
    again.apply(ADD_TWO)
    with pytest.raises(GitpatchError):  # its place is taken: refused, never the person's
        again.plumbing.session_worktree()
    listed = git(repo, "worktree", "list", "--porcelain")
    assert f"worktree {mine}\n" in listed and "branch refs/heads/feature\n" in listed
