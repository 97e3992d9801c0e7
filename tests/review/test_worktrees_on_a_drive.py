"""``gitpatch.worktrees`` naming a drive of its own (a mount point: a disk, a volume, a bind
mount): while it is not mounted, the session worktrees on it are away, not removed, and
nothing of gitpatch drops git's record of them (``.git/worktrees/<id>``: HEAD, index), so
they work again once it is mounted.

The mounts are real: each scenario runs in a private mount namespace (``unshare``), with a
bind mount of a folder onto the worktrees folder. Where ``unshare`` cannot make one, the test
skips, unless ``GITPATCH_REQUIRE_MOUNTS=1`` (``.ci/run`` sets it where it can) makes that a
failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.gitkit import git, make_repo

#: Inside the namespace: mount, make the session's worktree with an agent's unrecorded file,
#: unmount, try to end the session and list sessions, mount again, and say what git sees.
_SCENARIO = r"""
import json, subprocess, sys
from pathlib import Path
from gitpatch import Workspace
from gitpatch.errors import GitpatchError

repo, real, wts = (Path(a) for a in sys.argv[1:4])
mounted = lambda: subprocess.run(["mount", "--bind", str(real), str(wts)], check=True)
unmounted = lambda: subprocess.run(["umount", str(wts)], check=True)
out = {}
mounted()
ws = Workspace.open(repo, "auto", session="bot")
ws.apply("*** Begin Patch\n*** Add File: bot.txt\n+bot\n*** End Patch\n")
bot = ws.plumbing.session_worktree().path
(bot / "notes.txt").write_text("the agent's unrecorded work\n")
out["worktree"] = str(bot)
unmounted()
try:
    out["end"] = Workspace.open(repo, "review").end_session("bot")
except GitpatchError as exc:
    out["end"] = exc.code
out["sessions"] = [s.name for s in Workspace.open(repo, "review").sessions()]
mounted()
status = subprocess.run(
    ["git", "-C", str(bot), "status", "--porcelain"], capture_output=True, text=True
)
out["status"] = [status.returncode, status.stdout, status.stderr]
# with the drive mounted, a worktree removed by hand is gone: its record is dropped, and the
# session's next change makes it again
import shutil
shutil.rmtree(bot)
again = Workspace.open(repo, "auto", session="bot")
again.apply("*** Begin Patch\n*** Add File: again.txt\n+again\n*** End Patch\n")
again.plumbing.session_worktree()
out["again"] = sorted(p.name for p in bot.iterdir())
listed = ["git", "-C", str(repo), "worktree", "list", "--porcelain"]
out["listed"] = subprocess.run(listed, capture_output=True, text=True, check=True).stdout
print(json.dumps(out))
"""


def _namespaces() -> list[str]:
    """The ``unshare`` command that makes a private mount namespace here: a mount namespace
    alone (root), or inside a user namespace of its own (anyone, where the kernel allows)."""
    for command in (["unshare", "-m"], ["unshare", "-r", "-m"]):
        try:
            if subprocess.run([*command, "true"], capture_output=True).returncode == 0:
                return command
        except OSError:
            break  # no unshare at all
    if os.environ.get("GITPATCH_REQUIRE_MOUNTS") == "1":
        pytest.fail(
            "mount namespaces are required here (GITPATCH_REQUIRE_MOUNTS) but unshare fails"
        )
    pytest.skip("unshare cannot make a mount namespace here")


def _scenario(tmp_path: Path) -> dict[str, Any]:
    repo = make_repo(tmp_path / "repo", {"a.txt": "hi\n"}, branch="main")
    real, wts = tmp_path / "drive", tmp_path / "wts"
    real.mkdir()
    wts.mkdir()  # the mount point, empty while nothing is mounted on it
    git(repo, "config", "gitpatch.worktrees", str(wts))
    script = tmp_path / "scenario.py"
    script.write_text(_SCENARIO)
    done = subprocess.run(
        [*_namespaces(), sys.executable, str(script), str(repo), str(real), str(wts)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    out["repo"] = repo
    return out


def test_a_session_worktree_on_a_drive_not_mounted_keeps_its_record(tmp_path: Path) -> None:
    out = _scenario(tmp_path)
    # the end refused (its commit is not on main), and removed nothing
    assert out["end"] == "invalid_arguments"
    assert "bot" in out["sessions"]
    # git's record of the worktree is still there: once mounted again it works, with the
    # agent's unrecorded file
    code, status, err = out["status"]
    assert code == 0, err
    assert status == "?? notes.txt\n"
    assert out["again"] == [".git", "a.txt", "again.txt", "bot.txt"]
    listed = out["listed"]  # as git sees it with the drive mounted (in the namespace)
    assert listed.count(f"worktree {out['worktree']}\n") == 1 and "prunable" not in listed
