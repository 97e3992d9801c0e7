"""review6: findings on the last merges (checkpoint's index.lock wait), as strict xfails."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import ConcurrentUpdate
from gitpatch.review import worktrees
from tests.gitkit import git

FILES = {
    "pkg/a.py": "def f():\n    return 1\n",
    "pkg/b.py": "B = 1\n",
}


def _git_commit_holding_the_index(where: Path, fifo: Path) -> subprocess.Popen[bytes]:
    """A ``git commit -a`` in ``where`` holding its ``index.lock`` until a line reaches
    ``fifo`` (its editor waits for it)."""
    os.mkfifo(fifo)
    editor = fifo.with_suffix(".sh")
    editor.write_text(f'#!/bin/sh\nread line < "{fifo}"\n: > "$1"\n')
    editor.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.Popen(
        ["git", "commit", "-a", "-q"],
        cwd=where,
        env={**env, "GIT_EDITOR": str(editor)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    lock = worktrees.linked_gitdir(where) / "index.lock"
    while not lock.exists():
        assert proc.poll() is None, "git commit ended before it took index.lock"
        time.sleep(0.01)
    return proc


@pytest.mark.xfail(
    strict=True,
    reason="review6: in review mode the worktree is moved (git checkout) before the wait for "
    "index.lock, so a held lock gives dirty_worktree (claiming unrecorded changes) instead "
    "of waiting / concurrent_update",
)
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
    proc = _git_commit_holding_the_index(where, fifo)
    monkeypatch.setattr(preflight, "INDEX_LOCK_WAIT_SECONDS", 0.05)
    try:
        with pytest.raises(ConcurrentUpdate, match="index.lock"):
            ws.checkpoint("pytest")
    finally:
        fifo.write_text("done\n")
        proc.wait()
