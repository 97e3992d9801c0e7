"""Real dead and live lock holders for the recovery tests: forked processes, no fakes.

``killed_holding`` forks a process that does what a gitpatch operation does before it is
killed (announce the lock files in its owner record, then take them with their proofs, as
gitpatch does) and dies; ``LiveHolder`` does the same and stays alive until closed.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _take(gitdir: str, locks: Sequence[str], take: bool = True) -> None:
    from gitpatch.safety.owners import Record

    record = Record.create(gitdir)
    record.announce(list(locks))
    for lock in locks if take else ():
        Path(lock).parent.mkdir(parents=True, exist_ok=True)
        os.close(record.take(lock))  # as gitpatch takes a lock: proved its own


def _take_and_die(gitdir: str, locks: Sequence[str]) -> None:
    _take(gitdir, locks)
    os._exit(0)


def _take_and_wait(gitdir: str, locks: Sequence[str], conn: Any, take: bool) -> None:
    _take(gitdir, locks, take)
    conn.send("holding")
    conn.recv()  # until the test closes the pipe or says so
    os._exit(0)


def killed_holding(gitdir: Path, locks: Sequence[Path]) -> None:
    """A process announces and takes ``locks``, then dies without releasing them."""
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=_take_and_die, args=(str(gitdir), [str(p) for p in locks]))
    child.start()
    child.join()


class LiveHolder:
    """A live gitpatch-like process holding ``locks`` (announced in its record) until closed;
    with ``take=False`` it only announces them (as one waiting for them does)."""

    def __init__(self, gitdir: Path, locks: Sequence[Path], take: bool = True) -> None:
        ctx = multiprocessing.get_context("fork")
        self._conn, theirs = ctx.Pipe()
        self.process = ctx.Process(
            target=_take_and_wait, args=(str(gitdir), [str(p) for p in locks], theirs, take)
        )
        self.process.start()
        theirs.close()
        assert self._conn.recv() == "holding"

    @property
    def pid(self) -> int:
        """The holder's process id."""
        assert self.process.pid is not None
        return self.process.pid

    def close(self) -> None:
        """Let the holder exit (its lock files and record stay, as after a kill)."""
        self._conn.send("go")
        self.process.join()
        self._conn.close()
