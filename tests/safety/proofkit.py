"""Helpers for the compat proofs: real repositories checked with the real ``git`` binary.

Kept free of pytest fixtures so child processes (spawned or forked by the concurrency and crash
tests) can import it cheaply; running git and making repositories live in ``tests.gitkit``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

from gitpatch import Workspace
from gitpatch.core.model import Proposal
from tests.gitkit import git, head, run_git, status_porcelain

TRAILER_KEY = "Gitpatch-Proposal"


def fsck_problems(repo: Path) -> str:
    """What ``git fsck --strict`` complains about (empty when the repository is sound).

    Dangling objects are normal (a proposal built but never landed) and are not problems.
    """
    out = run_git(repo, "fsck", "--strict", "--no-dangling", "--no-progress")
    text = (out.stdout + out.stderr).decode(errors="replace").strip()
    if out.returncode != 0:
        return text or f"git fsck exited with {out.returncode}"
    bad = [
        line
        for line in text.splitlines()
        if line.startswith(("error", "fatal", "missing", "broken", "warning", "bad"))
    ]
    return "\n".join(bad)


def assert_fsck_clean(repo: Path) -> None:
    """Fail with git's own words unless ``git fsck --strict`` is clean."""
    problems = fsck_problems(repo)
    assert not problems, f"git fsck --strict in {repo}:\n{problems}"


def assert_status_clean(repo: Path) -> None:
    """Fail unless the working tree and index match HEAD exactly."""
    status = status_porcelain(repo)
    assert status == "", f"git status --porcelain in {repo} is not clean:\n{status}"


def refs_snapshot(repo: Path) -> str:
    """Every ref with its target, plus what HEAD points at: equal snapshots = no ref moved."""
    refs = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    sym = run_git(repo, "symbolic-ref", "-q", "HEAD").stdout.decode().strip()
    return f"HEAD -> {sym or head(repo)}\n{refs}"


def disk_files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` except ``.git``, keyed by relative POSIX path."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            full = Path(dirpath) / name
            out[full.relative_to(root).as_posix()] = full.read_bytes()
    return out


def tree_files(repo: Path, rev: str) -> dict[str, bytes]:
    """Every blob in ``rev``'s tree, keyed by path, read through ``git cat-file --batch``."""
    listing = git(repo, "ls-tree", "-r", "-z", "--full-tree", rev)
    entries: list[tuple[str, str]] = []
    for item in listing.split("\0"):
        if not item:
            continue
        meta, path = item.split("\t", 1)
        _mode, kind, oid = meta.split()
        if kind == "blob":
            entries.append((path, oid))
    if not entries:
        return {}
    batch = run_git(
        repo, "cat-file", "--batch", input="".join(f"{o}\n" for _, o in entries).encode()
    )
    data = batch.stdout
    out: dict[str, bytes] = {}
    pos = 0
    for path, _oid in entries:
        header_end = data.index(b"\n", pos)
        size = int(data[pos:header_end].split()[2])
        start = header_end + 1
        out[path] = data[start : start + size]
        pos = start + size + 1
    return out


def proposal_trailer(repo: Path, commit: str) -> str:
    """The ``Gitpatch-Proposal`` trailer of ``commit`` ('' when it has none)."""
    fmt = f"--format=%(trailers:key={TRAILER_KEY},valueonly,separator=%x2C)"
    return git(repo, "log", "-1", fmt, commit).strip()


def proposal_trailers(repo: Path, base: str, tip: str) -> list[tuple[str, str]]:
    """(commit, ``Gitpatch-Proposal`` trailer) for every commit in ``base..tip``, oldest first."""
    fmt = f"--format=%H %(trailers:key={TRAILER_KEY},valueonly,separator=%x2C)"
    text = git(repo, "log", "--reverse", fmt, f"{base}..{tip}")
    pairs = [line.split(" ", 1) for line in text.splitlines() if line.strip()]
    return [(p[0], p[1].strip() if len(p) > 1 else "") for p in pairs]


def note_json(repo: Path, commit: str) -> str:
    """``git notes --ref gitpatch show <commit>`` ('' when there is no note)."""
    out = run_git(repo, "notes", "--ref", "gitpatch", "show", commit)
    return out.stdout.decode() if out.returncode == 0 else ""


def _propose_then_exit(repo: str, proposal: Proposal, env: dict[str, str]) -> None:
    os.environ.update(env)
    try:
        Workspace.open(repo).propose(proposal)
    except BaseException:
        os._exit(3)
    os._exit(0)


def propose_in_child(repo: Path, proposal: Proposal, env: dict[str, str]) -> int:
    """Propose (auto mode) in a forked process with ``env`` set (a crash point, a PATH): its
    exit code, 137 for a crash point's kill, -9 for a SIGKILL, 3 for an error."""
    child = multiprocessing.get_context("fork").Process(
        target=_propose_then_exit, args=(str(repo), proposal, env)
    )
    child.start()
    child.join()
    assert child.exitcode is not None
    return child.exitcode


def _stopped_at(
    argv: list[str], env: dict[str, str], point: str, how: str, stderr: int
) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``argv`` with crash point ``point`` armed (``GITPATCH_CRASH_HOW=how``) and wait
    until it stops itself there or ends: the child and its wait status."""
    child = subprocess.Popen(
        argv,
        env={**env, "GITPATCH_CRASH_AT": point, "GITPATCH_CRASH_HOW": how},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    _pid, status = os.waitpid(child.pid, os.WUNTRACED)
    return child, status


@contextlib.contextmanager
def paused_at(
    argv: list[str], env: dict[str, str], point: str
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``argv`` until it reaches crash point ``point`` and keep it stopped there for the
    block (``GITPATCH_CRASH_HOW=pause``), then let it go on; the caller waits for it. Waiting
    for it to stop is the synchronisation: no timing is involved."""
    child, status = _stopped_at(argv, env, point, "pause", subprocess.PIPE)
    if not os.WIFSTOPPED(status):
        child.returncode = os.waitstatus_to_exitcode(status)
        raise AssertionError(f"{argv} never reached {point} (exit {child.returncode})")
    try:
        yield child
    finally:
        os.kill(child.pid, signal.SIGCONT)


def killed_at(argv: list[str], env: dict[str, str], point: str) -> int:
    """Run ``argv`` until it reaches crash point ``point``, then SIGKILL it there.

    The child stops itself at the point (``GITPATCH_CRASH_HOW=stop``); waiting for it to stop
    is the synchronisation, so no timing is involved. Returns ``-SIGKILL`` when it was killed
    there, else its exit status (it never reached the point)."""
    child, status = _stopped_at(argv, env, point, "stop", subprocess.DEVNULL)
    if os.WIFSTOPPED(status):
        os.kill(child.pid, signal.SIGKILL)
        _pid, status = os.waitpid(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    return child.returncode
