"""SIGKILL in the middle of a change that moves the branch and a work:// ref together.

A forked child applies one apply_patch touching ``a.txt`` (on the branch, so on disk too) and
``work://s1/plan.md`` (on ``refs/gitpatch/work/s1``), pausing at every file-system step; the
parent kills it at step 1, 2, 3, ... in turn. After each kill both refs are at the same step
(one ref transaction: both moved or neither), git is sound, the file on disk is its old or its
new content, and the next call finishes the landing.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

import pytest

from gitpatch import MountedFilesystem, Workspace, apply_patch_tool, read_tool
from tests.gitkit import git, make_repo, status_porcelain
from tests.tools import tool_workers

#: SIGKILLs: `make test-fast` leaves these out (`-m "not slow"`).
pytestmark = pytest.mark.slow


def _steps(repo: Path) -> tuple[int, int]:
    """(branch step, scratch step) as the refs say."""
    branch = git(repo, "show", "work:a.txt").split()[-1]
    scratch = git(repo, "show", "refs/gitpatch/work/s1:plan.md").split()[-1]
    return int(branch), int(scratch)


def _kill_at(repo: Path, step: int, event: int) -> bool:
    """Run the child for ``step`` and kill it at its ``event``-th pause; False if it finished
    first."""
    ctx = multiprocessing.get_context("fork")
    ours, theirs = ctx.Pipe()
    child = ctx.Process(target=tool_workers.mixed_child, args=(str(repo), step, theirs))
    child.start()
    theirs.close()
    finished = False
    try:
        for seen in range(1, event + 1):
            kind, detail = ours.recv()
            if kind == "finished":
                finished = True
                break
            assert kind == "event", detail
            if seen < event:
                ours.send("go")
    finally:
        if child.pid is not None and child.is_alive():
            os.kill(child.pid, signal.SIGKILL)
        child.join()
        ours.close()
    return not finished


def test_a_kill_never_separates_the_refs_of_one_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a step 0\n"})
    fs = MountedFilesystem({"/workspace": Workspace.open(repo)})
    add = "*** Begin Patch\n*** Add File: work://s1/plan.md\n+plan step 0\n*** End Patch"
    assert apply_patch_tool(fs, fs)(patch=add).ok
    step, event, killed, behind = 0, 1, 0, 0
    while _kill_at(repo, step + 1, event):
        killed += 1
        branch, scratch = _steps(repo)
        assert branch == scratch, f"kill at event {event} separated the refs"
        assert branch in (step, step + 1)
        git(repo, "fsck", "--strict")
        disk = (repo / "a.txt").read_text()
        assert disk in (f"a step {step}\n", f"a step {step + 1}\n"), disk
        behind += disk != f"a step {branch}\n"
        # The next call finishes what the kill left (journal, index, notes).
        fs = MountedFilesystem({"/workspace": Workspace.open(repo)})
        assert read_tool(fs)(path="a.txt").data["content"] == f"a step {branch}\n"
        assert status_porcelain(repo) == ""
        # Next: the next pause point, on whatever change is still to do.
        step, event = branch, event + 1
    assert killed >= 3, killed
    # Pauses are exact points, so this is not luck: some kill fell after the ref transaction
    # and before the file was written, and the next call finished the landing.
    assert behind >= 1, (killed, behind)
    assert _steps(repo)[0] == _steps(repo)[1]
