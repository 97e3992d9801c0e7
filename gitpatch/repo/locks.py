"""Locks around the working tree for ``gitpatch.repo.worktree``: the land lock and git's lock files.

The land lock is an ``flock`` on ``.git/gitpatch/land.lock``: the kernel drops it when a process
dies, so it never goes stale. git's own ``*.lock`` files do go stale when a process is killed
holding one; ``remove_stale_locks`` removes those older than a limit, and ``retry_locked``
waits out a live one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from gitpatch.errors import ConcurrentUpdate
from gitpatch.retry import retry
from gitpatch.store.refs import remove_stale_files

__all__ = ["LOCK_WAIT_SECONDS", "land_lock", "remove_stale_locks", "retry_locked"]

#: How long a land waits for another process's land before ``ConcurrentUpdate`` (locked).
LOCK_WAIT_SECONDS = 30.0


@contextlib.contextmanager
def land_lock(state_dir: Path, *, shared: bool = False) -> Iterator[None]:
    """Hold ``state_dir/land.lock``: alone for a land, ``shared`` among readers."""
    state_dir.mkdir(exist_ok=True)
    fd = os.open(state_dir / "land.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        delay = 0.0005
        kind = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        while True:
            try:
                fcntl.flock(fd, kind | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ConcurrentUpdate(
                        "another gitpatch process kept the working tree busy for "
                        f"{LOCK_WAIT_SECONDS:.0f} s",
                        hint="Retry the call; if it keeps failing, look for a hung process.",
                        reason="locked",
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.01)
        yield
    finally:
        os.close(fd)


def remove_stale_locks(gitdir: Path, refs: Sequence[str] | None, stale_seconds: float) -> list[str]:
    """Remove ``*.lock`` files older than ``stale_seconds``: at the top of ``gitdir`` and, for
    ``refs`` None, anywhere under ``gitdir/refs``, else only those of ``refs``."""
    candidates = [e.path for e in _lock_files(gitdir, recurse=refs is None)]
    candidates += [str(gitdir / f"{ref}.lock") for ref in refs or ()]
    return remove_stale_files(candidates, stale_seconds)


def _lock_files(gitdir: Path, *, recurse: bool) -> Iterator[os.DirEntry[str]]:
    """``*.lock`` files at the top of ``gitdir`` and, with ``recurse``, under ``gitdir/refs``.

    ``gitdir/gitpatch/land.lock`` is an flock target, never stale, so it is not looked at.
    """
    stack: list[tuple[str, bool]] = [(str(gitdir), False)]
    if recurse:
        stack.append((str(gitdir / "refs"), True))
    while stack:
        folder, deeper = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".lock") and entry.is_file(follow_symlinks=False):
                yield entry
            elif deeper and entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, True))


def retry_locked(action: Callable[[], object], attempts: int = 50) -> None:
    """Run ``action``, retrying while git's own lock file is held by another process."""
    retry(action, attempts=attempts, catch=OSError, cap=0.1)
