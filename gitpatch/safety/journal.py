"""The land journal: what an interrupted land was doing, for ``WorkingTree`` to finish it.

It lives at ``.git/gitpatch/journal.json`` while a land runs (under the land lock). A land goes
in git's own order: journal, files, index, and the branch last; the journal is removed once the
branch moved (or, when the ref transaction failed, once the files and the index are put back).
Recovery reads it the same way: the branch at ``new`` (or past it) means the land is finished
forward, the branch anywhere else means it never landed, and what was written ahead is put back
(``backwards``). It names its owner (see
``gitpatch.safety.owners``); it is fsynced, file and directory, when git is asked to fsync refs
or objects, since the ref it guards is fsynced then too and must never be ahead of it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gitpatch.safety.atomic import fsync_dir, write_atomic

__all__ = ["Journal", "fsync_dir"]


@dataclass(frozen=True)
class Journal:
    """An interrupted land: ``ref`` was to move ``old`` -> ``new`` and rewrite ``paths``.

    ``notes`` (commit hex, note before as JSON or ``"null"``, note after as JSON) are the notes
    that move with the ref in the same ref transaction. libgit2 commits a transaction one lock
    file at a time, so a process killed in between can leave one moved without the other;
    recovery completes the notes when the ref moved and puts them back when it did not.
    """

    ref: str
    old: str | None
    new: str
    paths: tuple[str, ...]
    notes: tuple[tuple[str, str, str], ...] = ()
    owner: str = ""
    #: A land that carries onto a person's uncommitted work: (tree on disk before, tree on
    #: disk after, tree the index entries get), each a hex id; None when disk and index
    #: simply go from ``old`` to ``new``.
    carry: tuple[str, str, str] | None = None

    def backwards(self) -> Journal:
        """The land that puts back what this one wrote ahead of its branch: disk and index
        from ``new`` to ``old`` (an unborn ``old`` is ``""``: every path goes). Never written
        to disk: recovery derives it from the journal whenever the branch did not move."""
        carry = self.carry
        return Journal(
            self.ref,
            self.new,
            self.old or "",
            self.paths,
            (),
            self.owner,
            (carry[1], carry[0], self.old or "") if carry else None,
        )

    def to_json(self) -> str:
        """Serialise for ``.git/gitpatch/journal.json``."""
        return json.dumps(
            {
                "ref": self.ref,
                "old": self.old,
                "new": self.new,
                "paths": list(self.paths),
                "notes": [list(n) for n in self.notes],
                "owner": self.owner,
                "carry": list(self.carry) if self.carry else None,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Journal:
        """Parse a journal file; raises ValueError when it is not one."""
        data: Any = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("new"), str):
            raise ValueError("not a gitpatch journal")
        notes = data.get("notes") or []
        carry = data.get("carry")
        return cls(
            str(data["ref"]),
            data.get("old"),
            data["new"],
            tuple(data.get("paths", ())),
            tuple((str(c), str(b), str(a)) for c, b, a in notes),
            str(data.get("owner") or ""),
            (str(carry[0]), str(carry[1]), str(carry[2])) if carry else None,
        )

    def write(self, path: Path, *, durable: bool) -> None:
        """Write to ``path`` by temp file and rename (fsynced with its directory if durable)."""
        write_atomic(path, self.to_json().encode(), durable=durable)
