"""A session's worktree guards: a git command holding its index, the person's own checkout or
linked worktree where a session's would be: waited for or refused, never taken over."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import ConcurrentUpdate
from tests.gitkit import git, git_commit_holding_index, let_go

FILES = {
    "pkg/a.py": "def f():\n    return 1\n",
    "pkg/b.py": "B = 1\n",
}


def test_a_review_checkpoint_whose_worktree_must_follow_waits_for_index_lock(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitpatch.checkout import preflight

    ws = Workspace.open(repo, "review", session="bot")
    where = ws.plumbing.session_worktree().path
    # the person commits on the target branch: the session's worktree must follow it
    (repo / "pkg/b.py").write_text("B = 2\n")
    git(repo, "commit", "-qam", "person")
    (where / "pkg/a.py").write_text("def f():\n    return 7\n")
    fifo = tmp_path / "editor-fifo"
    proc = git_commit_holding_index(where, fifo)
    monkeypatch.setattr(preflight, "INDEX_LOCK_WAIT_SECONDS", 0.05)
    try:
        with pytest.raises(ConcurrentUpdate, match="index.lock"):
            ws.checkpoint("pytest")
    finally:
        let_go(fifo, proc)


def _persons_worktree_beside_sessions(repo: Path) -> Path:
    """``gitpatch.worktrees`` names a folder where the person keeps a linked worktree of
    their own (``git worktree add ../wts/feature -b feature``), one commit ahead."""
    git(repo, "config", "gitpatch.worktrees", "../wts")
    git(repo, "worktree", "add", "-q", "../wts/feature", "-b", "feature")
    mine = repo.parent / "wts" / "feature"
    (mine / "mine.txt").write_text("mine\n")
    git(mine, "add", "mine.txt")
    git(mine, "commit", "-qm", "mine")
    return mine


def test_a_verdict_leaves_a_persons_worktree_beside_the_sessions_alone(repo: Path) -> None:
    mine = _persons_worktree_beside_sessions(repo)
    agent = Workspace.open(repo, "review", session="bot")
    pid = agent.apply(
        "<<<<<<< SEARCH\nB = 1\n=======\nB = 2\n>>>>>>> REPLACE\n", path="pkg/b.py"
    ).proposal_id
    Workspace.open(repo, "review").approve(pid, "person")
    assert git(mine, "symbolic-ref", "-q", "HEAD").strip() == "refs/heads/feature"
    assert (mine / "mine.txt").exists()


def test_a_persons_worktree_beside_the_sessions_is_no_session(repo: Path) -> None:
    mine = _persons_worktree_beside_sessions(repo)
    person = Workspace.open(repo, "review")
    assert [s.name for s in person.sessions()] == []
    with pytest.raises(Exception):  # noqa: B017 (whichever stable code: not a session)
        person.end_session("feature")
    assert (mine / "mine.txt").exists()


def test_a_checkpoint_where_the_person_checked_out_the_session_branch_has_a_stable_code(
    repo: Path,
) -> None:
    from gitpatch.errors import GitpatchError

    branch = git(repo, "symbolic-ref", "--short", "HEAD").strip()
    ws = Workspace.open(repo, "auto", session="bot")
    ws.apply("<<<<<<< SEARCH\nB = 1\n=======\nB = 2\n>>>>>>> REPLACE\n", path="pkg/b.py")
    assert branch != "gitpatch/session/bot"
    git(repo, "checkout", "-q", "gitpatch/session/bot")  # the person looks at the session
    (repo / "pkg/a.py").write_text("def f():\n    return 3\n")
    before = git(repo, "rev-parse", "gitpatch/session/bot")
    with pytest.raises(GitpatchError) as refused:  # the person's own work is never recorded
        Workspace.open(repo, "auto", session="bot").checkpoint("pytest")
    assert refused.value.code == "branch_checked_out"
    assert git(repo, "rev-parse", "gitpatch/session/bot") == before
    assert git(repo, "status", "--porcelain") == " M pkg/a.py\n"
