"""The skip-worktree bit survives a SIGKILL at every point of its update (issue 26, item 4).

A change to a skip-worktree entry (a file outside a sparse checkout, or one a person hid with
``git update-index --skip-worktree``) lands in the index only. git needs two steps for that
(``--index-info``, which drops the bit, then ``--skip-worktree``); both run on the land's
scratch index and reach the real one in one rename, so a kill anywhere leaves the entry with
its bit, at the old blob or (after recovery finishes the land) the new one.

Kills: at every crash point the land passes (``GITPATCH_CRASH_AT``), and by a ``git`` on PATH
that SIGKILLs its parent the moment it is asked to set the bit, the gap of the two steps.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from gitpatch import Workspace
from tests.gitkit import git, make_repo
from tests.realrepo.kit import edit, fsck
from tests.safety.proofkit import propose_in_child

pytestmark = pytest.mark.slow

FILES = {"a/x.txt": "x one\nx two\n", "b/y.txt": "y one\ny two\n"}
_KILLER = """#!/bin/sh
for arg in "$@"; do
  if [ "$arg" = "--skip-worktree" ]; then kill -9 "$PPID"; sleep 5; exit 1; fi
done
exec {git} "$@"
"""


def _sparse(root: Path) -> None:
    git(root, "sparse-checkout", "set", "a")


def _by_hand(root: Path) -> None:
    git(root, "update-index", "--skip-worktree", "b/y.txt")
    (root / "b/y.txt").write_text("y one\nmy local override\n")  # hidden by the bit


SETUPS: dict[str, Callable[[Path], None]] = {"sparse checkout": _sparse, "set by hand": _by_hand}


def _run(repo: Path, env: dict[str, str]) -> int:
    return propose_in_child(repo, edit("b/y.txt", "y two", "Y TWO"), env)


def _killer(where: Path) -> str:
    """A folder whose ``git`` SIGKILLs its caller when asked to set a skip-worktree bit."""
    real = shutil.which("git")
    assert real is not None
    where.mkdir()
    shim = where / "git"
    shim.write_text(_KILLER.format(git=real))
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return f"{where}{os.pathsep}{os.environ['PATH']}"


def _check(repo: Path, template_blob: str, where: str) -> None:
    Workspace.open(repo)  # recovery, as the next call does
    flags = git(repo, "ls-files", "-t", "--", "b/y.txt")
    assert flags.startswith("S "), f"the bit is gone after a kill {where}: {flags!r}"
    blob = git(repo, "ls-files", "-s", "--", "b/y.txt").split()[1]
    tip = git(repo, "rev-parse", "HEAD:b/y.txt").strip()
    assert blob in (template_blob, tip), f"index entry neither old nor new after {where}"
    assert blob == tip, f"recovery did not finish the land after {where}"
    assert not (repo / ".git/index.lock").exists()
    fsck(repo)


@pytest.mark.parametrize("setup", list(SETUPS))
def test_the_bit_survives_a_kill_at_every_point(setup: str, tmp_path: Path) -> None:
    template = make_repo(tmp_path / "template", FILES)
    SETUPS[setup](template)
    old_blob = git(template, "rev-parse", "HEAD:b/y.txt").strip()
    disk_before = (template / "b/y.txt").read_bytes() if (template / "b").exists() else None
    log = tmp_path / "points.log"
    done = tmp_path / "done"
    shutil.copytree(template, done, symlinks=True)
    assert _run(done, {"GITPATCH_CRASH_LOG": str(log)}) == 0
    _check(done, old_blob, "(none)")
    points = log.read_text().split()
    assert "index.skip_worktree:1" in points
    kills = [(p, {"GITPATCH_CRASH_AT": p}) for p in points]
    kills.append(("git --skip-worktree", {"PATH": _killer(tmp_path / "bin")}))
    for n, (point, env) in enumerate(kills):
        repo = tmp_path / f"kill{n}"
        shutil.copytree(template, repo, symlinks=True)
        assert _run(repo, env) == 137 or point.startswith("git"), f"{point} not reached"
        _check(repo, old_blob, f"at {point}")
        disk = (repo / "b/y.txt").read_bytes() if (repo / "b").exists() else None
        assert disk == disk_before, "the disk of a skip-worktree file is never written"
