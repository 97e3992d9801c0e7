"""A space's integer versions: commit <-> first-parent generation, with a kept index.

A version is ``main``'s first-parent generation number (1 for the first commit, +1 per
commit). A commit's generation never changes, so what was once walked is kept (in memory, for
every call of the process). The reverse, the commit of version ``n``, is answered from the
first-parent line of the newest head (``line[n - 1]``), so an ``expected_version`` thousands
of versions back costs a list lookup, not a walk over the commits in between.

The line is kept on disk as well, in ``gitpatch-generations`` in the repository (20 raw bytes
per commit, version 1 first), rewritten whole (atomically, no fsync: it is an index, not
data) once it grew by ``SAVE_EVERY`` commits. After a restart only the commits made since it
was written are walked. The file is checked when read (each entry's first parent is the entry
before it, for the last entries, and the first has no parent), and ignored when that fails or
it cannot be read: a bad or missing index only costs one walk. The older one-line seed
(``gitpatch-generation``: the head and its number) is still read.

When ``main`` is moved to a commit off the line (history rewritten by hand), the line is
rebuilt from the new head by one full walk.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

import pygit2

from gitpatch.errors import GitpatchError
from gitpatch.safety.atomic import write_atomic
from gitpatch.store import Store

__all__ = ["INDEX_FILE", "SAVE_EVERY", "SEED_FILE", "Generations"]

#: The index of the first-parent line (20 bytes per commit), in the repository directory.
INDEX_FILE = "gitpatch-generations"
#: The older hint: ``<head hex> <number>`` (read, no longer written).
SEED_FILE = "gitpatch-generation"
#: The index is rewritten once the line grew by this many commits since it was last written.
SAVE_EVERY = 64
#: How many of the last entries ``_load`` checks against the commits they name.
_CHECKED = 8


class Generations:
    """Integer versions of one space (module docstring); shared by every call and thread."""

    def __init__(self, store: Store, folder: Path | None = None) -> None:
        self.store = store
        self.folder = folder
        self._known: dict[pygit2.Oid, int] = {}
        #: The first-parent line of the newest head walked: ``_line[n - 1]`` is version n.
        self._line: list[pygit2.Oid] = []
        self._saved = 0
        self._lock = threading.Lock()
        if folder is not None:
            self._load(folder)

    # -- the kept index ----------------------------------------------------------------------

    def _load(self, folder: Path) -> None:
        with contextlib.suppress(OSError, ValueError):
            oid, number = (folder / SEED_FILE).read_text(encoding="ascii").split()
            self._known[pygit2.Oid(hex=oid)] = int(number)
        try:
            raw = (folder / INDEX_FILE).read_bytes()
        except OSError:
            return
        if not raw or len(raw) % 20:
            return
        line = [pygit2.Oid(raw=raw[i : i + 20]) for i in range(0, len(raw), 20)]
        if not self._consistent(line):
            return
        self._line = line
        self._saved = len(line)
        self._known.update((oid, n) for n, oid in enumerate(line, 1))

    def _consistent(self, line: list[pygit2.Oid]) -> bool:
        """True when the last entries chain by first parents and the first is a root."""
        try:
            for n in range(max(0, len(line) - _CHECKED), len(line)):
                parents = self.store.info(line[n]).parents
                if (parents[:1] != (line[n - 1],)) if n else bool(parents):
                    return False
        except (GitpatchError, KeyError, ValueError):  # a missing commit: not this line
            return False
        return True

    def _save(self) -> None:
        """Write the line when it grew enough (best effort: a lost write costs a walk)."""
        if self.folder is None or len(self._line) - self._saved < SAVE_EVERY:
            return
        data = b"".join(oid.raw for oid in self._line)
        with contextlib.suppress(OSError):
            write_atomic(self.folder / INDEX_FILE, data, 0o600, durable=False)
            self._saved = len(self._line)

    # -- lookups -----------------------------------------------------------------------------

    def of(self, commit: pygit2.Oid | None) -> int:
        """The generation of ``commit`` (0 for no commit)."""
        if commit is None:
            return 0
        with self._lock:
            return self._of(commit)

    def _of(self, commit: pygit2.Oid) -> int:
        found = self._known.get(commit)
        if found is not None:
            return found
        chain: list[pygit2.Oid] = []
        base = 0
        below: pygit2.Oid | None = None
        tip: pygit2.Oid | None = commit
        while tip is not None and not base:
            last = None
            for c in self.store.first_parents(tip):
                if c.id in self._known:
                    base, below = self._known[c.id], c.id
                    break
                chain.append(c.id)
                last = c
            tip = last.parents[0].id if last is not None and last.parents and not base else None
        for depth, oid in enumerate(reversed(chain), 1):
            self._known[oid] = base + depth
        if base == len(self._line) and (not base or self._line[-1] == below):
            self._line.extend(reversed(chain))  # the line goes on: keep it
            self._save()
        return self._known[commit]

    def commit_at(self, head: pygit2.Oid | None, version: int) -> pygit2.Oid | None:
        """The commit of ``version`` on the first-parent line of ``head`` (None: no such)."""
        if head is None:
            return None
        with self._lock:
            top = self._of(head)
            if not 1 <= version <= top:
                return None
            if len(self._line) < top or self._line[top - 1] != head:
                self._rebuild(head, top)
            return self._line[version - 1]

    def _rebuild(self, head: pygit2.Oid, top: int) -> None:
        """The line of ``head`` (``top`` commits) by one walk; it replaces the kept one."""
        line = [c.id for c in self.store.first_parents(head)]
        tip = line[-1] if line else None
        while len(line) < top and tip is not None:  # first_parents may stop at a depth cap
            parents = self.store.info(tip).parents
            if not parents:
                break
            more = [c.id for c in self.store.first_parents(parents[0])]
            line.extend(more)
            tip = more[-1] if more else None
        line.reverse()
        self._line, self._saved = line, 0
        self._save()
