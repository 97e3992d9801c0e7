"""A SIGKILL during a queued landing: main stays at a checked result, nothing is half-landed,
and the next gitpatch call recovers without a person.

``gitpatch approve a b c`` (checks on) runs once with ``GITPATCH_CRASH_LOG`` to learn the step
boundaries it passes, then once per boundary of the second landing in a process that dies
there (``GITPATCH_CRASH_AT``, ``os._exit``: no cleanup, as a SIGKILL). After the next call:
main's tree is one the checks passed, each session either landed whole (its proposal closed,
its change on main) or not at all (still open, main without it), ``git fsck`` and
``git status`` are clean, no lock file, queue record or journal is left, and approving what
is left lands it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.killtrials import leftovers
from gitpatch.porcelain.workspace import Workspace
from tests.gitkit import edit, git, git_env
from tests.review.checkskit import checked, checked_repo

pytestmark = pytest.mark.slow

CHANGES = (("a", "one\n", "ONE\n"), ("b", "three\n", "THREE\n"), ("c", "five\n", "FIVE\n"))


def _queued(root: Path) -> tuple[Path, Path, dict[str, str]]:
    repo, log = checked_repo(root)
    ids = {}
    for name, old, new in CHANGES:
        ws = Workspace.open(repo, mode="review", session=name)
        ids[name] = ws.propose(edit("c.txt", old, new)).proposal_id
    return repo, log, ids


def _approve(repo: Path, names: list[str], extra: dict[str, str]) -> int:
    env = {**git_env(repo), **extra}
    args = [sys.executable, "-m", "gitpatch", "-C", str(repo), "approve", *names, "--by", "Pat"]
    return subprocess.run(args, env=env, capture_output=True, check=False).returncode


def _points(tmp_path: Path) -> list[str]:
    """The step boundaries of the second landing (their second pass)."""
    repo, _log, _ids = _queued(tmp_path / "learn")
    trail = tmp_path / "trail.log"
    assert _approve(repo, ["a", "b", "c"], {"GITPATCH_CRASH_LOG": str(trail)}) == 0
    return [p for p in trail.read_text().split() if p.endswith(":2")]


def test_a_kill_during_a_queued_landing_leaves_main_checked_and_recovers(tmp_path: Path) -> None:
    points = _points(tmp_path)
    assert "refs.moved:2" in points and "index.written:2" in points, points
    for n, point in enumerate(points):
        repo, log, ids = _queued(tmp_path / f"kill{n}")
        assert _approve(repo, ["a", "b", "c"], {"GITPATCH_CRASH_AT": point}) == 137, point
        assert (repo / ".git" / "gitpatch" / "queue.json").exists()  # the queue was cut short
        Workspace.open(repo, mode="review").proposals()  # any next call recovers
        assert leftovers(repo) == [], (point, leftovers(repo))  # no lock, record or journal
        assert not (repo / ".git" / "gitpatch" / "queue.json").exists(), point
        main_tree = git(repo, "rev-parse", "main^{tree}").strip()
        assert main_tree in checked(log), f"main at an unchecked tree after a kill at {point}"
        assert git(repo, "status", "--porcelain", "--untracked-files=all") == "", point
        fsck = git(repo, "fsck", "--strict", "--no-dangling", "--no-progress")
        assert "error" not in fsck and "missing" not in fsck, point
        assert not (repo / ".git" / "gitpatch" / "journal.json").exists(), point
        content = git(repo, "show", "main:c.txt")
        left = []
        for name, _old, new in CHANGES:
            is_open = git(repo, "for-each-ref", f"refs/heads/gitpatch/{ids[name]}") != ""
            assert is_open != (new in content), f"{name} half-landed after a kill at {point}"
            if is_open:
                left.append(name)
        assert left and left[0] != "a" and left[-1] == "c", (point, left)
        # what is left lands in the next turn
        assert _approve(repo, left, {}) == 0, point
        assert git(repo, "show", "main:c.txt") == "ONE\ntwo\nTHREE\nfour\nFIVE\n"
        assert not (repo / ".git" / "gitpatch" / "queue.json").exists()
