"""Locks around the working tree for ``gitpatch.checkout.worktree``: the land lock and index.lock.

The land lock is an ``flock`` on ``.git/gitpatch/land.lock`` (``gitpatch.safety.owners.flocked``):
the kernel drops it when a process dies, so it never goes stale, and its last holder removes the
file. git's own ``*.lock`` files (index.lock here) are announced in the operation's owner record
before they are taken, so recovery can remove those of a killed process, and only those;
``retry_locked`` waits out a live one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from gitpatch.core.retry import retry
from gitpatch.safety.owners import flocked

__all__ = ["LOCK_WAIT_SECONDS", "land_lock", "retry_locked"]

#: How long a land waits for another process's land before ``ConcurrentUpdate`` (locked).
LOCK_WAIT_SECONDS = 30.0


@contextlib.contextmanager
def land_lock(state_dir: Path, *, shared: bool = False) -> Iterator[None]:
    """Hold ``state_dir/land.lock``: alone for a land, ``shared`` among readers."""
    with flocked(state_dir / "land.lock", shared=shared, wait=LOCK_WAIT_SECONDS):
        yield


def retry_locked(action: Callable[[], object], attempts: int = 50) -> None:
    """Run ``action``, retrying while git's own lock file is held by another process."""
    retry(action, attempts=attempts, catch=OSError, cap=0.1)
