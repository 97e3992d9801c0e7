"""Finishing what a killed gitpatch process left, without a person.

``recover_dead`` reads every owner record (``gitpatch.safety.owners``) and, for each owner that
is provably dead on this host:

- a ref transaction it was committing is finished when any ref it moved to a new commit got
  there (libgit2 renames one lock file at a time, so a kill can land in between), and is
  otherwise left undone;
- exactly the lock files it had taken are removed: those its record listed before taking them,
  created after the record was written and before any live owner announced them (an owner
  announces before it takes) and, for a ref lock, still empty (libgit2 writes a ref lock only
  when it commits it; git writes the new value as soon as it takes one, so a person's git lock
  is never empty);
- its record goes.

libgit2's half-written object files (``objects/tmp_object_git2_*``) are removed when no live
gitpatch operation is active that could be writing one. Recovery runs under an ``flock`` so two
processes never recover the same record at once.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pygit2

from gitpatch.safety.owners import (
    Record,
    common_dir,
    current,
    flocked,
    read_records,
    record_owners,
)

__all__ = ["holders", "lock_paths", "recover_dead", "remove_object_temps"]

RefMove = tuple[str, pygit2.Oid | None, pygit2.Oid | None]
Mover = Callable[[Sequence[RefMove], str], None]

_OBJECT_TEMP = "tmp_object_git2_"


def recover_dead(repo: pygit2.Repository, move: Mover, *, sweep: bool = False) -> list[str]:
    """Finish or undo the transactions of dead owners; return the lock files removed.

    ``move`` moves refs (a compare-and-swap transaction); ``sweep`` also removes libgit2's
    object temp files when no live operation could own them (done at open).
    """
    gitdir = repo.path
    dead = [path for path, owner in record_owners(gitdir) if owner.dead()]
    if (not dead and not sweep) or getattr(_local, "busy", False):
        return []  # nothing to do, or called again from inside a recovery's own ref move
    removed: list[str] = []
    folder = common_dir(gitdir) / "gitpatch"
    _local.busy = True
    try:
        with flocked(folder / "recover.lock"):
            scan_ns = time.time_ns()
            records = list(read_records(gitdir))  # again, under the lock
            live = [r for r in records if not r.owner.dead()]
            claims = _claims(live)
            for record in records:
                if record.owner.dead():
                    removed += _finish(repo, record, claims, move)
                    record.drop()
            mine = current()
            active = [
                r for r in live if r.plan.get("active") and (mine is None or r.path != mine.path)
            ]
            if sweep and not active:
                remove_object_temps(gitdir, scan_ns)
    finally:
        _local.busy = False
    return removed


_local = threading.local()


def _claims(live: Sequence[Record]) -> dict[str, int]:
    """Lock path -> the earliest time a live owner announced it: a lock file made before that
    cannot be that owner's (it announces before it takes)."""
    out: dict[str, int] = {}
    for record in live:
        try:
            since = record.written_ns()
        except FileNotFoundError:
            continue
        for lock in record.plan.get("locks", ()):
            out[lock] = min(out.get(lock, since), since)
    return out


def _finish(
    repo: pygit2.Repository, record: Record, claims: dict[str, int], move: Mover
) -> list[str]:
    """Settle one dead owner's record: roll its refs forward or leave them, free its locks."""
    plan = record.plan
    try:
        since = record.written_ns()
    except FileNotFoundError:
        return []
    refs = [(str(n), _oid(o), _oid(w)) for n, o, w in plan.get("refs", ())]
    pending: list[RefMove] = []
    if any(new is not None and _target(repo, name) == new for name, _old, new in refs):
        pending = [(n, new, old) for n, old, new in refs if _target(repo, n) == old != new]
    removed = [p for p in plan.get("locks", ()) if _taken_by_dead(p, since, claims)]
    for path in removed:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    if pending:
        move(pending, "gitpatch: finish the transaction of a killed process")
    return removed


def _taken_by_dead(path: str, since: int, claims: dict[str, int]) -> bool:
    """Whether the lock file ``path`` is provably the dead owner's (see the module doc)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if st.st_mtime_ns < since or st.st_mtime_ns >= claims.get(path, st.st_mtime_ns + 1):
        return False
    is_ref_lock = f"{os.sep}refs{os.sep}" in path
    return not is_ref_lock or st.st_size == 0


def remove_object_temps(gitdir: str, before_ns: int) -> list[str]:
    """Remove libgit2's object temp files older than ``before_ns`` (no live writer owns them)."""
    objects = common_dir(gitdir) / "objects"
    removed: list[str] = []
    try:
        entries = list(os.scandir(objects))
    except FileNotFoundError:
        return removed
    for entry in entries:
        if entry.name.startswith(_OBJECT_TEMP):
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_ctime_ns < before_ns:
                    os.unlink(entry.path)
                    removed.append(entry.path)
    return removed


def holders(gitdir: str, path: str) -> list[str]:
    """The live gitpatch owners whose record lists the lock file ``path`` (for messages)."""
    return [
        r.owner.describe()
        for r in read_records(gitdir)
        if path in r.plan.get("locks", ()) and not r.owner.dead()
    ]


def _oid(text: object) -> pygit2.Oid | None:
    return pygit2.Oid(hex=text) if isinstance(text, str) and text else None


def _target(repo: pygit2.Repository, name: str) -> pygit2.Oid | None:
    ref = repo.references.get(name)
    if ref is None:
        return None
    with contextlib.suppress(KeyError):
        ref = ref.resolve()
        target = ref.target
        return target if isinstance(target, pygit2.Oid) else None
    return None


def lock_paths(repo: pygit2.Repository, names: Sequence[str], deletes: bool) -> list[str]:
    """The lock files a transaction on ``names`` takes (``packed-refs.lock`` for deletions)."""
    gitdir = Path(repo.path)
    common = common_dir(repo.path)
    out = [str((gitdir if n == "HEAD" else common) / f"{n}.lock") for n in names]
    if deletes:
        out.append(str(common / "packed-refs.lock"))
    return out
