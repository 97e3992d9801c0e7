"""Keeping a space's repository small: pack and prune on a schedule, and measure its disk use.

Every change of a space is counted; after ``pack_every_changes`` of them (``spaces.toml``) the
space is packed in a background thread, one run per space at a time. A run packs what is new
(``pack_new``): the objects ``main`` gained since the run before that are still loose go into
one pack of their own (``git pack-objects`` walks only the commits made since), while the
space's writers go on; then, holding ``Space.packing``, ``git prune-packed`` deletes their
loose copies. Only that deletion excludes the writers: it removes empty object directories,
and a writer (libgit2 makes the directory, then renames its object file into it) may be about
to fill one. Objects ``main`` does not reach (a lost compare-and-swap's, a full disk's) are
never packed there: they keep their age. Once the space holds ``MAX_PACKS`` packs, the run is
``git gc`` (``pack``) instead, under ``Space.packing`` as a whole: the packs become one (deltas
between versions), refs are packed, and unreachable objects older than ``PRUNE_GRACE`` are
deleted. The grace period keeps objects a write in flight may still reference.

``disk_bytes`` is what the repository takes on disk (every file under it), measured at the
first change after a start, then in the background after a run and every ``REMEASURE_EVERY``
changes; ``SpaceStorage`` refuses growth past
``max_disk_bytes`` with it. git runs through ``gitpatch.checkout.gitbin``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import BinaryIO

import pygit2

from gitpatch.checkout import gitbin
from gitpatch.doors.hosted.spaces import Space, disk_bytes

__all__ = [
    "MAX_PACKS",
    "NO_INDEXES",
    "PRUNE_GRACE",
    "REMEASURE_EVERY",
    "Maintenance",
    "disk_bytes",
    "packs",
]

_log = logging.getLogger("gitpatch.doors.hosted")

#: Unreachable objects younger than this are kept (a write in flight elsewhere may need them).
PRUNE_GRACE = "1.hour.ago"
#: What ``git gc`` leaves out: a commit-graph and reachability bitmaps speed up git's own
#: walks and clones, which the service does not run (its versions have their index,
#: ``gitpatch.doors.hosted.generations``), for about 80 bytes per change on disk.
NO_INDEXES = ("-c", "gc.writeCommitGraph=false", "-c", "repack.writeBitmaps=false")
#: A space's disk use is measured again after this many changes (and after every packing);
#: in between it grows by what each change writes. A measure walks every file of the
#: repository (its loose objects: about three per change until the next packing), which at
#: 32 was about 3% of a busy server's CPU.
REMEASURE_EVERY = 128
#: A run that finds this many packs in the space makes them one (``git gc``) instead of adding
#: another: an object looked up and not found (each new object, before it is written) is
#: looked for in every pack's index.
MAX_PACKS = 16
#: The pack of a run (``pack_new``): the objects the revisions on its input reach that are in
#: no pack yet, onto its output; nothing at all when there is none.
_PACK_NEW = [
    "pack-objects",
    "--revs",
    "--unpacked",
    "--incremental",
    "--local",
    "--non-empty",
    "-q",
    "--stdout",
]
#: A run's work folder in the repository directory (its name's start).
_WORK = "gitpatch-packing-"
#: ``PRUNE_GRACE`` in seconds: what a killed run left is removed after it.
_GRACE_SECONDS = 3600


class Maintenance:
    """Counts the changes of each space and packs it on schedule (module docstring)."""

    def __init__(self, grace: str = PRUNE_GRACE) -> None:
        self.grace = grace
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._running: dict[str, threading.Thread] = {}
        #: Per space, the head its last ``pack_new`` packed up to (what it reached is packed).
        self._since: dict[str, pygit2.Oid] = {}

    def changed(self, space: Space) -> None:
        """Count one change of ``space``; start packing it when it is due, or measuring it
        (both in the background: a measure lets go of the interpreter for every file, which
        a busy server's other threads take each time)."""
        with self._lock:
            count = self._counts.get(space.name, 0) + 1
            idle = space.name not in self._running
            due = count >= space.settings.pack_every_changes and idle
            self._counts[space.name] = 0 if due else count
            measure = idle and count % REMEASURE_EVERY == 0
            job = self._run if due else self._measure if measure else None
            if job is not None:
                worker = threading.Thread(target=job, args=(space,), daemon=True)
                self._running[space.name] = worker
        if space.disk_used is None:  # the first change since a start: its quota needs it now
            space.measure()
        if job is not None:
            worker.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the runs under way (tests; a stopping service, which bounds it by
        ``timeout`` seconds); False when one still runs at the bound (its ``git`` finishes
        on its own, and a later run sweeps what it leaves)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            running = list(self._running.values())
        for worker in running:
            worker.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not any(worker.is_alive() for worker in running)

    def _run(self, space: Space) -> None:
        try:
            if packs(space) >= MAX_PACKS:
                self.pack(space)
            else:
                self.pack_new(space)
        finally:
            self._done(space)

    def _measure(self, space: Space) -> None:
        try:
            space.measure()
        finally:
            self._done(space)

    def _done(self, space: Space) -> None:
        with self._lock:
            self._running.pop(space.name, None)

    def pack(self, space: Space) -> None:
        """Pack and prune ``space`` now (``git gc``: every pack into one), then measure it
        again. The space's writers wait for it (``Space.packing``)."""
        with space.packing():
            self._git(space, [*NO_INDEXES, "gc", "--quiet", f"--prune={self.grace}"])
        space.measure()

    def pack_new(self, space: Space) -> None:
        """The objects ``main`` gained since this process's last run (all it reaches, after a
        start) that are still loose, into a pack of their own while the space's writers go
        on; then their loose copies deleted (``git prune-packed``) while the writers wait;
        then the space measured again. Objects nothing reaches (a failed write's) stay loose,
        with their age, for ``git gc`` to prune once past the grace period. The pack is
        written in a folder of the run's own and moved into place whole, so a run that fails
        or is killed leaves nothing in ``objects/pack`` (``_sweep`` removes a killed run's
        folder once it is older than the grace period)."""
        head = space.head()
        if head is None:
            return
        self._sweep(space)
        since = self._since.get(space.name)
        revs = f"{head}\n" + ("" if since is None else f"^{since}\n")
        work = Path(tempfile.mkdtemp(prefix=_WORK, dir=space.path))
        try:
            pack = work / "new.pack"
            with pack.open("wb") as out:
                if self._git(space, _PACK_NEW, revs.encode("ascii"), out) is None:
                    return
            if pack.stat().st_size:
                made = self._git(space, ["index-pack", str(pack)])
                if made is None:
                    return
                final = Path(space.path, "objects", "pack", f"pack-{made.decode().strip()}")
                os.replace(pack, final.with_suffix(".pack"))
                if (work / "new.rev").exists():  # a newer git writes a reverse index too
                    os.replace(work / "new.rev", final.with_suffix(".rev"))
                # the index last: readers find a pack by its index
                os.replace(work / "new.idx", final.with_suffix(".idx"))
        except OSError as exc:
            _log.warning("packing %s failed: %s", space.name, exc)
            return
        finally:
            shutil.rmtree(work, ignore_errors=True)
        with space.packing():
            self._git(space, ["prune-packed", "-q"])
        self._since[space.name] = head
        space.measure()

    def _sweep(self, space: Space) -> None:
        """Remove what killed runs left (their work folders, a pack moved without its index)
        once it is older than the grace period: a run in another process may own a younger
        one."""
        cutoff = time.time() - _GRACE_SECONDS
        packdir = os.path.join(space.path, "objects", "pack")
        with contextlib.suppress(OSError):
            for entry in os.scandir(space.path):
                if entry.name.startswith(_WORK) and entry.stat().st_mtime < cutoff:
                    shutil.rmtree(entry.path, ignore_errors=True)
            names = set(os.listdir(packdir))
            for name in names:
                alone = name.endswith(".pack") and name[:-5] + ".idx" not in names
                if alone and os.stat(os.path.join(packdir, name)).st_mtime < cutoff:
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(packdir, name))

    @staticmethod
    def _git(
        space: Space, args: list[str], stdin: bytes = b"", out: BinaryIO | None = None
    ) -> bytes | None:
        """``git args`` on the space (its output into ``out`` when given); None when it
        failed (logged: packing later is fine, and a call is never lost to it)."""
        where = str(space.path)
        try:
            return gitbin.run(where, where, args, stdin, out=out)
        except (gitbin.GitFailed, OSError) as exc:
            _log.warning("packing %s failed: %s", space.name, exc)
            return None


def packs(space: Space) -> int:
    """How many packs ``space``'s repository holds."""
    try:
        names = os.listdir(os.path.join(space.path, "objects", "pack"))
    except OSError:
        return 0
    return sum(1 for name in names if name.endswith(".pack"))
