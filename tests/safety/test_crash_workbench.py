"""A checkpoint, the making of a session's worktree (when first needed) and a session's end
killed at every crash point they pass: the next run recovers with nothing lost (issue 25).

Each operation first runs once with ``GITPATCH_CRASH_LOG`` to learn the points it passes
(``safety.recovery.crashpoint``), then once per point in a process of its own that stops there and
is killed by a real SIGKILL from the test (``proofkit.killed_at``: nothing flushed or
cleaned up). A session's worktree holds absolute paths, so every run gets a fresh
repository. After the kill the operation runs again: every change the worktree had is in
the session's work exactly once, its worktree is clean, no lock is left, and ``git fsck
--strict`` is clean; an ended session is gone whole, its approved work kept.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitkit import GIT_ENV, git, make_repo, sr
from tests.safety.proofkit import fsck_problems, killed_at

pytestmark = pytest.mark.slow  # a process killed at every point

FILES = {"a.py": "A = 1\n", "b.py": "B = 1\n", "c.py": "C = 1\n", ".gitignore": "build/\n"}

_CHECKPOINT = """
import sys
from gitpatch import Workspace
ws = Workspace.open(sys.argv[1], sys.argv[2], session="bot")
print(ws.checkpoint("fmt").recorded)
"""
_END = """
import sys
from gitpatch import Workspace
print(Workspace.open(sys.argv[1], "review").end_session("bot", force=True))
"""


def _kill(script: str, repo: Path, point: str, *args: str) -> int:
    """Run ``script`` and SIGKILL it at crash point ``point``."""
    argv = [sys.executable, "-c", script, str(repo), *args]
    return killed_at(argv, {**os.environ, **GIT_ENV}, point)


def _python(script: str, repo: Path, *args: str, env: dict[str, str] | None = None) -> int:
    done = subprocess.run(
        [sys.executable, "-c", script, str(repo), *args],
        env={**os.environ, **GIT_ENV, **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode


def _bench(tmp: Path, mode: str) -> tuple[Path, Path]:
    """A repository with session bot's worktree holding a modification, an addition, a
    deletion and an ignored file; (repo, worktree)."""
    from gitpatch import Workspace

    repo = make_repo(tmp / "repo", FILES, branch="main")
    where = Workspace.open(repo, mode, session="bot").plumbing.session_worktree().path  # type: ignore[arg-type]
    (where / "a.py").write_text("A = 2\n")
    (where / "new.py").write_text("NEW = 1\n")
    (where / "b.py").unlink()
    (where / "build").mkdir()
    (where / "build/o").write_bytes(b"\0\1")
    return repo, where


def _points(tmp: Path, script: str, prepare: object, *args: str) -> list[str]:
    log = tmp / "points.log"
    repo, _where = prepare(tmp / "learn")  # type: ignore[operator]
    assert _python(script, repo, *args, env={"GITPATCH_CRASH_LOG": str(log)}) == 0
    return sorted(set(log.read_text().split()))


def _work_of(repo: Path, where: Path, mode: str) -> str:
    """The commit holding the session's work (stack top / session branch)."""
    if mode == "auto":
        return git(repo, "rev-parse", "gitpatch/session/bot").strip()
    return git(where, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("mode", ["review", "auto"])
def test_a_checkpoint_killed_anywhere_loses_nothing(tmp_path: Path, mode: str) -> None:
    points = _points(tmp_path, _CHECKPOINT, lambda t: _bench(t, mode), mode)
    assert "checkpoint.staged:1" in points and "refs.moved:1" in points
    for n, point in enumerate(points):
        repo, where = _bench(tmp_path / f"run{n}", mode)
        assert _kill(_CHECKPOINT, repo, point, mode) == -signal.SIGKILL, point
        assert _python(_CHECKPOINT, repo, mode) == 0, point
        work = _work_of(repo, where, mode)
        assert git(repo, "show", f"{work}:a.py") == "A = 2\n", point
        assert git(repo, "show", f"{work}:new.py") == "NEW = 1\n", point
        assert "b.py" not in git(repo, "ls-tree", "--name-only", work), point
        assert git(where, "status", "--porcelain") == "", point
        assert (where / "build/o").read_bytes() == b"\0\1", point
        proposals = git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/gitpatch/")
        if mode == "review":
            assert len(proposals.split()) == 1, (point, proposals)  # recorded exactly once
        assert fsck_problems(repo) == "", point
        assert not list((repo / ".git").rglob("*.lock")), point


_MAKE = """
import sys
from gitpatch import Workspace
print(Workspace.open(sys.argv[1], sys.argv[2], session="bot").checkpoint("make").recorded)
"""


def _edited(tmp: Path, mode: str) -> tuple[Path, Path]:
    """A repository where session bot has edited a.py and has no worktree yet."""
    from gitpatch import Workspace

    repo = make_repo(tmp / "repo", FILES, branch="main")
    Workspace.open(repo, mode, session="bot").apply(sr("A = 1\n", "A = 2\n"), path="a.py")  # type: ignore[arg-type]
    where = repo / ".git/gitpatch/worktrees/bot"
    assert not where.exists()
    return repo, where


@pytest.mark.parametrize("mode", ["review", "auto"])
def test_making_the_worktree_killed_anywhere_makes_it_whole_on_the_next_run(
    tmp_path: Path, mode: str
) -> None:
    points = _points(tmp_path, _MAKE, lambda t: _edited(t, mode), mode)
    assert "worktree.added:1" in points and "worktree.filled:1" in points
    for n, point in enumerate(points):
        repo, where = _edited(tmp_path / f"run{n}", mode)
        assert _kill(_MAKE, repo, point, mode) == -signal.SIGKILL, point
        assert _python(_MAKE, repo, mode) == 0, point
        # a half-filled worktree taken for a whole one would checkpoint every file as deleted
        assert (where / "a.py").read_text() == "A = 2\n", point
        assert {p.name for p in where.iterdir()} == {*FILES, ".git"}, point
        assert git(where, "status", "--porcelain") == "", point
        assert git(repo, "worktree", "list").count("worktrees/bot") == 1, point
        assert not (repo / ".git/gitpatch/filling/bot").exists(), point
        made = git(repo, "rev-list", "--count", "main..gitpatch/session/bot", check=False)
        proposals = git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/gitpatch/")
        if mode == "auto":
            assert made.strip() == "1", point  # the edit, and no checkpoint of anything
        else:
            assert len(proposals.split()) == 1, (point, proposals)
        assert fsck_problems(repo) == "", point
        assert not list((repo / ".git").rglob("*.lock")), point


def _ended_prepare(tmp: Path, mode: str) -> tuple[Path, Path]:
    from gitpatch import Workspace

    repo, where = _bench(tmp, mode)
    result = Workspace.open(repo, mode, session="bot").checkpoint("fmt")  # type: ignore[arg-type]
    Workspace.open(repo, "review").approve("bot" if mode == "auto" else result.proposal_id, "P")
    return repo, where


@pytest.mark.parametrize("mode", ["review", "auto"])
def test_ending_a_session_killed_anywhere_finishes_on_the_next_run(
    tmp_path: Path, mode: str
) -> None:
    points = _points(tmp_path, _END, lambda t: _ended_prepare(t, mode))
    assert "session.set_aside:1" in points and "session.removed:1" in points
    for n, point in enumerate(points):
        repo, where = _ended_prepare(tmp_path / f"run{n}", mode)
        landed = git(repo, "rev-parse", "main").strip()
        assert _kill(_END, repo, point) == -signal.SIGKILL, point
        assert _python(_END, repo) in (0, 1), point  # 1: the first run had finished it
        assert not where.exists(), point
        assert not [p for p in where.parent.iterdir() if p.name.startswith(".ending-")], point
        assert "bot" not in git(repo, "worktree", "list"), point
        assert git(repo, "branch", "--list", "gitpatch/session/bot") == "", point
        assert git(repo, "rev-parse", "main").strip() == landed, point
        assert git(repo, "show", "main:new.py") == "NEW = 1\n", point
        assert fsck_problems(repo) == "", point


def test_ending_a_session_whose_worktree_was_killed_half_made(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES, branch="main")
    where = repo / ".git/gitpatch/worktrees/bot"
    assert _kill(_MAKE, repo, "worktree.added", "auto") == -signal.SIGKILL
    assert (where / ".git").is_file() and not (where / "a.py").exists()  # half made
    assert _python(_END, repo) == 0
    assert not where.exists() and "bot" not in git(repo, "worktree", "list")
    assert not (repo / ".git/gitpatch/filling/bot").exists()
    assert git(repo, "branch", "--list", "gitpatch/session/bot") == ""
    assert fsck_problems(repo) == ""
