"""Saves that reach a land's replaced files in the ways a review of the kept-file code found
(issue 26): a writer still holding the file after a save was put back, a save set aside for a
long path, and a deleted executable that a save brings back.

Each test drives a real auto-mode land (``Workspace.apply``) in a child process, stopped at
crash points (its own stops, several per land, where ``GITPATCH_CRASH_AT`` names one), and a
real writer process or the test itself writing through descriptors opened before the land.
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench import landrace
from tests.safety.proofkit import fsck_problems, paused_at

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
#: the agent: replaces ``line 2`` of argv[2] in an auto-mode land, stopping itself (SIGSTOP)
#: at each crash point named in argv[3] (comma-separated) for the test to act there
AGENT = """
import os, signal, sys
from gitpatch.checkout import saves, worktree
STOPS = set(sys.argv[3].split(","))
def stop(name):
    if name in STOPS:
        os.kill(os.getpid(), signal.SIGSTOP)
saves.crashpoint = stop
worktree.crashpoint = stop
from gitpatch import Workspace
patch = ("*** Begin Patch\\n*** Update File: " + sys.argv[2]
         + "\\n@@\\n-line 2\\n+LINE 2 by agent\\n*** End Patch\\n")
Workspace.open(sys.argv[1], mode="auto").apply(patch)
"""
ONE_STOP = """
import sys
from gitpatch import Workspace
patch = ("*** Begin Patch\\n*** Update File: " + sys.argv[2]
         + "\\n@@\\n-line 2\\n+LINE 2 by agent\\n*** End Patch\\n")
Workspace.open(sys.argv[1], mode="auto").apply(patch)
"""
BODY = "".join(f"line {i}\n" for i in range(1, 6))


def _git(at: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real git in ``at``, as the person (landrace's identity), not raising."""
    return landrace.git(at, *args, check=False)


def _repo(tmp_path: Path, name: str) -> Path:
    repo = tmp_path / "repo"
    (repo / name).parent.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "work")
    (repo / name).write_text(BODY)
    _git(repo, "add", "-A")
    assert _git(repo, "commit", "-qm", "start").returncode == 0
    os.utime(repo / name, (1, 1))  # settled: the land compares identities
    return repo


def _wait_stopped(child: subprocess.Popen[bytes]) -> None:
    _pid, status = os.waitpid(child.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), status


def _finish(child: subprocess.Popen[bytes]) -> int:
    _pid, status = os.waitpid(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return child.returncode


def test_a_writer_still_holding_the_file_after_a_put_back_loses_nothing(tmp_path: Path) -> None:
    """A line slips in between the last check and the rename (put back at once), and the
    same writer writes again before the land is over: both lines are on disk."""
    repo = _repo(tmp_path, "log.txt")
    fd = os.open(repo / "log.txt", os.O_WRONLY | os.O_APPEND)  # opened before the land
    child = subprocess.Popen(
        [sys.executable, "-c", AGENT, str(repo), "log.txt", "file.kept,index.written"]
    )
    try:
        _wait_stopped(child)  # file.kept: checked, not yet swapped
        os.write(fd, b"editor 1\n")
        os.kill(child.pid, signal.SIGCONT)
        _wait_stopped(child)  # index.written: the put back is done, the land not over
        os.write(fd, b"editor 2\n")
        os.kill(child.pid, signal.SIGCONT)
    finally:
        os.close(fd)
    assert _finish(child) == 0
    text = (repo / "log.txt").read_text()
    assert "LINE 2 by agent\n" in _git(repo, "show", "work:log.txt").stdout
    assert "LINE 2 by agent\n" in text
    assert text.count("editor 1\n") == 1 and text.count("editor 2\n") == 1, text
    assert list((repo / ".git").rglob(".kept.*")) == []
    assert fsck_problems(repo) == ""


def test_a_save_set_aside_for_a_long_path_is_kept_and_every_next_call_works(
    tmp_path: Path,
) -> None:
    """A save that can go back neither in place nor merged is set aside in
    ``.git/gitpatch/saves/``; for a path of 240 bytes its name stays a legal file name."""
    name = "d" * 200 + "/" + "f" * 40
    repo = _repo(tmp_path, name)
    argv = [sys.executable, "-c", ONE_STOP, str(repo), name]
    with paused_at(argv, dict(os.environ), "index.written") as child:
        kept = glob.glob(str(repo / ".git/gitpatch/tmp/.kept.*"))
        assert len(kept) == 1
        # a late write through a descriptor opened before the rename, and a save at the path
        Path(kept[0]).write_text(BODY.replace("line 2\n", "line 2 by the old descriptor\n"))
        (repo / name).write_text(BODY.replace("line 2\n", "LINE 2 by agent\nx\n").replace("3", "Z"))
    _out, err = child.communicate()
    assert child.returncode == 0, err.decode()[-800:]
    assert not (repo / ".git/gitpatch/journal.json").exists()
    aside = list((repo / ".git/gitpatch/saves").iterdir())
    assert len(aside) == 1 and len(aside[0].name.encode()) <= 255
    assert "line 2 by the old descriptor" in aside[0].read_text()
    again = subprocess.run(
        [sys.executable, "-c", f"from gitpatch import Workspace; Workspace.open({str(repo)!r})"],
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0, again.stderr[-800:]


def test_a_save_brings_back_a_deleted_executable_executable(tmp_path: Path) -> None:
    """A line written to an executable the land deletes, after its check: the file comes back
    with the person's bytes and its executable bit."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "work")
    (repo / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (repo / "run.sh").chmod(0o755)
    _git(repo, "add", "-A")
    assert _git(repo, "commit", "-qm", "start").returncode == 0
    os.utime(repo / "run.sh", (1, 1))
    fd = os.open(repo / "run.sh", os.O_WRONLY | os.O_APPEND)
    delete = (
        "import sys\nfrom gitpatch import Workspace\n"
        "Workspace.open(sys.argv[1], mode='auto').apply("
        "'*** Begin Patch\\n*** Delete File: run.sh\\n*** End Patch\\n')\n"
    )
    try:
        with paused_at(
            [sys.executable, "-c", delete, str(repo)], dict(os.environ), "refs.moved"
        ) as child:
            os.write(fd, b"echo person\n")
    finally:
        os.close(fd)
    _out, err = child.communicate()
    assert child.returncode == 0, err.decode()[-800:]
    assert (repo / "run.sh").read_text() == "#!/bin/sh\necho hi\necho person\n"
    assert os.stat(repo / "run.sh").st_mode & 0o111 == 0o111


@pytest.mark.parametrize("checkout", ["autocrlf", "sparse", "staged", "linked"])
def test_a_late_save_is_kept_on_real_checkouts(tmp_path: Path, checkout: str) -> None:
    """A line written through a descriptor opened before the rename, after the land's last
    check, on an autocrlf checkout (CRLF on disk), a sparse checkout, one with the person's
    staged work in another file, and a linked worktree: the line is the person's unstaged
    change, the agent's change is committed, the staged work stays staged."""
    nl = "\r\n" if checkout == "autocrlf" else "\n"
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "doc").mkdir()
    _git(repo, "init", "-q", "-b", "work")
    if checkout == "autocrlf":
        _git(repo, "config", "core.autocrlf", "true")
    (repo / "src/log.txt").write_bytes("".join(f"line {i}{nl}" for i in range(1, 6)).encode())
    (repo / "doc/x.txt").write_text("x\n")
    (repo / "other.txt").write_text("o\n")
    _git(repo, "add", "-A")
    assert _git(repo, "commit", "-qm", "start").returncode == 0
    at = repo
    if checkout == "sparse":
        assert _git(repo, "sparse-checkout", "set", "src").returncode == 0
    elif checkout == "staged":
        (repo / "other.txt").write_text("staged\n")
        _git(repo, "add", "other.txt")
    elif checkout == "linked":
        at = tmp_path / "linked"
        assert _git(repo, "worktree", "add", "-q", "-b", "side", str(at)).returncode == 0
    os.utime(at / "src/log.txt", (1, 1))
    fd = os.open(at / "src/log.txt", os.O_WRONLY | os.O_APPEND)
    argv = [sys.executable, "-c", ONE_STOP, str(at), "src/log.txt"]
    try:
        with paused_at(argv, dict(os.environ), "index.written") as child:
            os.write(fd, f"editor 1{nl}".encode())
    finally:
        os.close(fd)
    _out, err = child.communicate()
    assert child.returncode == 0, err.decode()[-800:]
    want = "".join(f"{t}{nl}" for t in ("line 1", "LINE 2 by agent", "line 3", "line 4", "line 5"))
    assert (at / "src/log.txt").read_bytes() == f"{want}editor 1{nl}".encode()
    assert "LINE 2 by agent" in _git(at, "show", "HEAD:src/log.txt").stdout
    status = _git(at, "status", "--porcelain").stdout.splitlines()
    assert " M src/log.txt" in status
    assert ("M  other.txt" in status) == (checkout == "staged")
    assert _git(at, "diff", "src/log.txt").stdout.rstrip().endswith("+editor 1")
    assert list((repo / ".git").rglob(".kept.*")) == []
    assert not (repo / ".git/gitpatch/saves").exists()
