"""A person's git while a land has written its files and index ahead of its branch (issue 26).

A land renames the files and the index into place before it moves the branch (git's order).
While it does, it holds ``index.lock`` and, since the ref transaction runs the write-ahead
under its locks, the branch's ref lock too. Without the ref lock, a ``git commit`` that had
released ``index.lock`` already (an as-is commit writes the refreshed index back before it
moves the branch) could move the branch in that window: the land lost its compare-and-swap
and put the disk back, while a second ``git commit`` had already read the index written
ahead; the person's next ``git commit -a`` then recorded the put-back file, a revert of the
agent's change (1 in 1,000 lands of ``bench/landrace.py`` scenario 4).

Each test stops a real auto-mode land at a crash point (``GITPATCH_CRASH_HOW=pause``), runs
the person's real git there, lets the land go on, and checks what was recorded.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench import landrace
from tests.safety.proofkit import paused_at

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
#: the agent: one land of ``agent 0`` -> ``AGENT 0`` through ``WorkingTree.land`` and the
#: store's ref transaction (no retry of a lost race, which the Workspace would do); exit 0
#: landed, 4 refused (the compare-and-swap lost: what was written ahead is put back)
AGENT = """
import sys
import pygit2
from gitpatch.checkout.worktree import WorkingTree
from gitpatch.errors import ConcurrentUpdate
from gitpatch.store import Store

store = Store.open(sys.argv[1])
repo = pygit2.Repository(sys.argv[1])
old = repo.references["refs/heads/work"].target
commit = repo[old]
text = repo[commit.tree["shared.txt"].id].data.replace(b"agent 0\\n", b"AGENT 0\\n")
builder = repo.TreeBuilder(commit.tree)
builder.insert("shared.txt", repo.create_blob(text), pygit2.enums.FileMode.BLOB)
sig = pygit2.Signature("Agent", "agent@example.com")
new = repo.create_commit(None, sig, sig, "agent", builder.write(), [old])


def move(ahead=None):
    more = {} if ahead is None else {"while_locked": ahead}
    store.update_refs([("refs/heads/work", new, old)], "agent", **more)


try:
    WorkingTree(store).land(str(old), str(new), ["shared.txt"], move, ref="refs/heads/work")
except ConcurrentUpdate:
    sys.exit(4)
"""


def _git(repo: Path, *args: str, index: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **landrace.ENV}
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)


def _reverts(repo: Path) -> list[str]:
    """Lines of ``shared.txt`` some commit of ``work`` removed, other than ``agent k``."""
    log = _git(repo, "log", "-p", "--format=commit %h", "work", "--", "shared.txt").stdout
    return [
        line
        for line in log.splitlines()
        if line.startswith("-") and not line.startswith("---") and line[1:].startswith("AGENT")
    ]


def test_a_commit_moving_the_branch_during_the_write_ahead_records_no_revert(
    tmp_path: Path,
) -> None:
    repo = landrace.make(tmp_path, 2)
    start = _git(repo, "rev-parse", "work").stdout.strip()
    read_ahead = tmp_path / "index.read"
    env = {**os.environ, **landrace.ENV}
    with paused_at([sys.executable, "-c", AGENT, str(repo)], env, "index.written") as agent:
        # the files and the index are written ahead; the branch has not moved yet
        assert "AGENT 0" in (repo / "shared.txt").read_text()
        # 1. an as-is `git commit` (its index.lock released already) moves the branch
        person = _git(repo, "commit-tree", f"{start}^{{tree}}", "-p", start, "-m", "person A")
        moved = _git(repo, "update-ref", "refs/heads/work", person.stdout.strip(), start)
        # 2. a second `git commit` reads HEAD, then the index (without its lock)
        seen = _git(repo, "rev-parse", "work").stdout.strip()
        shutil.copyfile(repo / ".git/index", read_ahead)
    _out, err = agent.communicate()
    assert agent.returncode in (0, 4), err.decode()
    # ... and commits what it read on the HEAD it read (its compare-and-swap as git's)
    tree = _git(repo, "write-tree", index=read_ahead).stdout.strip()
    second = _git(repo, "commit-tree", tree, "-p", seen, "-m", "person B").stdout.strip()
    _git(repo, "update-ref", "refs/heads/work", second, seen)
    _git(repo, "commit", "-qam", "person C")  # the person's next `git commit -a`
    assert _reverts(repo) == [], _git(repo, "log", "-p", "work").stdout
    # the branch's lock was held: git's own refusal, and the land stands
    assert moved.returncode != 0 and "cannot lock ref" in moved.stderr, moved.stderr
    assert agent.returncode == 0
    assert "AGENT 0" in _git(repo, "show", "work:shared.txt").stdout
    assert "AGENT 0" in (repo / "shared.txt").read_text()
    assert _git(repo, "status", "--porcelain").stdout == ""
    assert _git(repo, "fsck", "--strict", "--no-progress").returncode == 0
