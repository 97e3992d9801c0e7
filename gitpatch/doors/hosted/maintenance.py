"""Keeping a space's repository small: pack and prune on a schedule, and measure its disk use.

Every change of a space is counted; after ``pack_every_changes`` of them (``spaces.toml``) the
space is packed in a background thread, one run per space at a time. A run packs only what is
new (``pack_new``): the loose objects written since the last run go into one pack of their own
(``git pack-objects`` fed their ids, so its cost is theirs, not the history's), while the
space's writers go on; then, holding ``Space.packing``, ``git prune-packed`` deletes the loose
copies. Only that deletion excludes the writers: it removes empty object directories, and a
writer (libgit2 makes the directory, then renames its object file into it) may be about to
fill one. Once the space holds ``MAX_PACKS`` packs, the run is ``git gc`` (``pack``) instead,
under ``Space.packing`` as a whole: the packs become one (deltas between versions), refs are
packed, and unreachable objects older than ``PRUNE_GRACE`` are deleted: the objects of failed
writes (a lost compare-and-swap, a full disk) go there. The grace period keeps objects a write
in flight may still reference.

``disk_bytes`` is what the repository takes on disk (every file under it), measured at the
first change after a start, then in the background after a run and every ``REMEASURE_EVERY``
changes; ``SpaceStorage`` refuses growth past
``max_disk_bytes`` with it. git runs through ``gitpatch.checkout.gitbin``.
"""

from __future__ import annotations

import logging
import os
import re
import threading

from gitpatch.checkout import gitbin
from gitpatch.doors.hosted.spaces import Space, disk_bytes

__all__ = [
    "MAX_PACKS",
    "NO_INDEXES",
    "PRUNE_GRACE",
    "REMEASURE_EVERY",
    "Maintenance",
    "disk_bytes",
    "loose_objects",
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
#: A loose object's file: two hex digits of its id name the folder, the other 38 the file.
_LOOSE = re.compile(r"[0-9a-f]{38}")


class Maintenance:
    """Counts the changes of each space and packs it on schedule (module docstring)."""

    def __init__(self, grace: str = PRUNE_GRACE) -> None:
        self.grace = grace
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._running: dict[str, threading.Thread] = {}

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
            space.disk_used = disk_bytes(space.path)
        if job is not None:
            worker.start()

    def wait(self) -> None:
        """Wait for the runs under way (tests, shutdown)."""
        with self._lock:
            running = list(self._running.values())
        for worker in running:
            worker.join()

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
            space.disk_used = disk_bytes(space.path)
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
        space.disk_used = disk_bytes(space.path)

    def pack_new(self, space: Space) -> None:
        """The loose objects of ``space`` into a pack of their own while its writers go on,
        then their loose copies deleted (``git prune-packed``) while the writers wait; then
        the space measured again. An object deleted meanwhile (another process packing the
        space) makes this run write nothing: the next one packs what is left."""
        ids = loose_objects(space.path)
        if not ids:
            return
        stdin = "".join(f"{oid}\n" for oid in ids).encode("ascii")
        base = os.path.join(space.path, "objects", "pack", "pack")
        if self._git(space, ["pack-objects", "-q", "--local", base], stdin) is None:
            return
        with space.packing():
            self._git(space, ["prune-packed", "-q"])
        space.disk_used = disk_bytes(space.path)

    @staticmethod
    def _git(space: Space, args: list[str], stdin: bytes = b"") -> bytes | None:
        """``git args`` on the space; None when it failed (logged: packing later is fine,
        and a call is never lost to it)."""
        where = str(space.path)
        try:
            return gitbin.run(where, where, args, stdin)
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


def loose_objects(repo: os.PathLike[str] | str) -> list[str]:
    """The ids of the loose objects of the repository at ``repo`` (its object files; a
    writer's temporary files are not)."""
    objects = os.path.join(repo, "objects")
    found: list[str] = []
    try:
        folders = os.listdir(objects)
    except OSError:
        return found
    for folder in folders:
        if len(folder) != 2 or not all(c in "0123456789abcdef" for c in folder):
            continue
        try:
            names = os.listdir(os.path.join(objects, folder))
        except OSError:  # deleted meanwhile (packing in another process)
            continue
        found += [folder + name for name in names if _LOOSE.fullmatch(name)]
    return found
