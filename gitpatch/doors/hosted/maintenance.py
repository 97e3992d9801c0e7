"""Keeping a space's repository small: pack and prune on a schedule, and measure its disk use.

Every change of a space is counted; after ``pack_every_changes`` of them (``spaces.toml``) the
space is packed in a background thread, one run per space at a time, with ``git gc``: loose
objects go into packs (deltas between versions), refs are packed, and unreachable objects older
than ``PRUNE_GRACE`` are deleted: the objects of failed writes (a lost compare-and-swap, a full
disk) go there. Packing holds ``Space.packing``, exclusive against the space's writers in
every process (``git gc`` removes empty object directories a writer may be filling), so a
space's writes wait for its packing; the grace period keeps objects a write in flight may
still reference.

``disk_bytes`` is what the repository takes on disk (every file under it), refreshed after a
run and every ``REMEASURE_EVERY`` changes; ``SpaceStorage`` refuses growth past
``max_disk_bytes`` with it. git runs through ``gitpatch.checkout.gitbin``.
"""

from __future__ import annotations

import logging
import threading

from gitpatch.checkout import gitbin
from gitpatch.doors.hosted.spaces import Space, disk_bytes

__all__ = ["NO_INDEXES", "PRUNE_GRACE", "REMEASURE_EVERY", "Maintenance", "disk_bytes"]

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


class Maintenance:
    """Counts the changes of each space and packs it on schedule (module docstring)."""

    def __init__(self, grace: str = PRUNE_GRACE) -> None:
        self.grace = grace
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._running: dict[str, threading.Thread] = {}

    def changed(self, space: Space) -> None:
        """Count one change of ``space``; start packing it when it is due."""
        with self._lock:
            count = self._counts.get(space.name, 0) + 1
            due = count >= space.settings.pack_every_changes and space.name not in self._running
            self._counts[space.name] = 0 if due else count
            if due:
                worker = threading.Thread(target=self._run, args=(space,), daemon=True)
                self._running[space.name] = worker
        if count % REMEASURE_EVERY == 0 or space.disk_used is None:
            space.disk_used = disk_bytes(space.path)
        if due:
            worker.start()

    def wait(self) -> None:
        """Wait for the runs under way (tests, shutdown)."""
        with self._lock:
            running = list(self._running.values())
        for worker in running:
            worker.join()

    def _run(self, space: Space) -> None:
        try:
            self.pack(space)
        finally:
            with self._lock:
                self._running.pop(space.name, None)

    def pack(self, space: Space) -> None:
        """Pack and prune ``space`` now (``git gc``), then measure it again."""
        where = str(space.path)
        with space.packing():
            self._gc(space, where)
        space.disk_used = disk_bytes(space.path)

    def _gc(self, space: Space, where: str) -> None:
        try:
            gitbin.run(where, where, [*NO_INDEXES, "gc", "--quiet", f"--prune={self.grace}"])
        except (gitbin.GitFailed, OSError) as exc:  # packing later is fine; never lose a call
            _log.warning("packing %s failed: %s", space.name, exc)
