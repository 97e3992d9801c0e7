"""Finishing what a killed gitpatch process left, without a person.

``recover_dead`` reads every owner record (``gitpatch.safety.owners``) and, for each owner that
is provably dead on this host:

- a ref transaction it was committing is finished when any ref it moved to a new commit got
  there (libgit2 renames one lock file at a time, so a kill can land in between), and is
  otherwise left undone;
- exactly the lock files it provably took are removed: those its record listed AND whose
  proof (a hard link next to the record, ``gitpatch.safety.owners``) is the lock file itself,
  or, for a ref lock a kill caught inside libgit2's ``lock_ref`` before the proof, one made
  after the record and still empty (libgit2 writes a ref lock only when it commits it; git
  writes the new value as soon as it takes one). Any other lock it only announced may be a
  person's git, taken after the kill: it stays, whatever its age, and the next call that
  needs it refuses and names it;
- its record and its proofs go.

libgit2's half-written object files (``objects/tmp_object_git2_*``) are removed when no live
gitpatch operation is active that could be writing one. Recovery runs under an ``flock`` so two
processes never recover the same record at once.

The land journal (``Journal``), the land's write-ahead record, lives here too: what an
interrupted land was doing, for ``WorkingTree`` to finish it. It lives at
``.git/gitpatch/journal.json`` while a land runs (under the land lock). A land goes in git's own
order: journal, files, index, and the branch last; the journal is removed once the branch moved
(or, when the ref transaction failed, once the files and the index are put back). Recovery
reads it the same way: the branch at ``new`` (or past it) means the land is finished forward,
the branch anywhere else means it never landed, and what was written ahead is put back
(``backwards``). It names its owner (see ``gitpatch.safety.owners``); it is fsynced, file and
directory, when git is asked to fsync refs or objects, since the ref it guards is fsynced then
too and must never be ahead of it.

What recovery is proved against lives here too: the test suite's kill switch,
``crashpoint(name)`` at every step boundary of a land. Inert in normal use: it reads
``GITPATCH_CRASH_AT`` / ``GITPATCH_CRASH_LOG``, which only the crash tests set, and returns.
The points are named in ``POINTS`` (README, "Crash safety"). How the process dies there:
``os._exit(137)`` by default; with ``GITPATCH_CRASH_HOW=stop`` it stops itself (``SIGSTOP``)
so that the test, its parent, sees it stopped at exactly that point and kills it with a real
``SIGKILL`` (``tests/safety/proofkit.killed_at``). With ``GITPATCH_CRASH_HOW=pause`` it stops
the same way but goes on when the test sends ``SIGCONT``: the test runs a person's git command
at exactly that point of a land (``proofkit.paused_at``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from gitpatch.errors import ConcurrentUpdate
from gitpatch.safety.atomic import write_atomic
from gitpatch.safety.owners import (
    Record,
    common_dir,
    current,
    flocked,
    read_records,
    record_owners,
)

__all__ = [
    "POINTS",
    "Journal",
    "adopt_index_lock",
    "crash_requested",
    "crashpoint",
    "holders",
    "lock_paths",
    "recover_dead",
    "remove_object_temps",
]

RefMove = tuple[str, pygit2.Oid | None, pygit2.Oid | None]
Mover = Callable[[Sequence[RefMove], str], None]

_OBJECT_TEMP = "tmp_object_git2_"


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
            # a lock a live owner proves is its own (one that took it over from this dead
            # owner, killed before it dropped the dead one's proof): never freed here
            theirs = {p for r in live for p in r.plan.get("locks", ()) if r.owns(p)}
            for record in records:
                if record.owner.dead():
                    keep, elsewhere = _unsettled_land(repo, record, gitdir)
                    listed = record.plan.get("locks", ())
                    keep = [*keep, *(p for p in listed if p in theirs and p not in keep)]
                    if elsewhere:  # that worktree's own recovery settles it, locks still held
                        removed += _free_all_but(record, keep)
                        continue
                    removed += _finish(repo, record, move, keep)
                    if keep:  # this worktree's recovery adopts it (``adopt_index_lock``)
                        record.narrow(keep, settled=True)
                    else:
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


def _finish(
    repo: pygit2.Repository, record: Record, move: Mover, keep: Sequence[str] = ()
) -> list[str]:
    """Settle one dead owner's record: roll its refs forward or leave them, free its locks
    but ``keep``."""
    plan = record.plan
    refs = [(str(n), _oid(o), _oid(w)) for n, o, w in plan.get("refs", ())]
    pending: list[RefMove] = []
    if any(new is not None and _target(repo, name) == new for name, _old, new in refs):
        pending = [(n, new, old) for n, old, new in refs if _target(repo, n) == old != new]
    # Proved, or left alone: a lock only announced may be a person's git, taken after the kill.
    removed = [
        p
        for p in plan.get("locks", ())
        if p not in keep and (record.owns(p) or _unwritten_ref_lock(p, record))
    ]
    for path in removed:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    kept = {record.proof(p) for p in keep}
    for proof in record.proofs():
        if proof not in kept:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(proof)
    if pending:
        move(pending, "gitpatch: finish the transaction of a killed process")
    return removed


def _unsettled_land(repo: pygit2.Repository, record: Record, gitdir: str) -> tuple[list[str], bool]:
    """The locks to leave held when ``record``'s dead owner was landing in a worktree whose
    land journal is still there, and whether that worktree is another than ``gitdir``'s.

    Freed before that worktree's own recovery put back what the land wrote ahead, the
    worktree's ``index.lock`` would let a person's ``git commit`` there commit it, and the
    recovery then stage its revert. Another worktree's call leaves that ``index.lock`` and the
    lock of the branch the journal lands; the land's own worktree's call settles the rest of
    the record (its ref moves included) and leaves only the ``index.lock``, which its working
    tree's recovery adopts (``adopt_index_lock``) instead of freeing and retaking it.
    ``([], False)`` when there is no such land. Another worktree's land is settled here as
    any dead owner's when its transaction had begun to commit (a ref reached its new commit:
    rolled forward now, before another writer moves the notes ref on and hides that). When
    that worktree's folder is missing (moved by hand, on a drive not mounted), its branch lock
    is freed but its ``index.lock`` stays: no git can run there meanwhile, and `git worktree
    repair` brings back a checkout whose own next call settles the journal."""
    refs = [(str(n), _oid(w)) for n, _o, w in record.plan.get("refs", ())]
    committing = any(new is not None and _target(repo, name) == new for name, new in refs)
    mine = os.path.realpath(gitdir)
    for lock in record.plan.get("locks", ()):
        if not isinstance(lock, str) or os.path.basename(lock) != "index.lock":
            continue
        if not record.owns(lock):
            continue
        where = os.path.dirname(lock)
        try:
            with open(os.path.join(where, "gitpatch", "journal.json"), encoding="utf-8") as fh:
                ref = str(json.load(fh)["ref"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if os.path.realpath(where) == mine:
            return [lock], False
        if committing:
            return [], False
        if not _worktree_exists(where):  # moved by hand, or unmounted: no git runs there,
            return [lock], True  # but its index stays locked until it is back (or pruned)
        common = str(common_dir(where))
        ref = ref or "HEAD"
        return [lock, os.path.join(where if ref == "HEAD" else common, f"{ref}.lock")], True
    return [], False


def _worktree_exists(gitdir: str) -> bool:
    """True unless ``gitdir`` is a linked worktree's whose ``.git`` file is not where git's
    ``gitdir`` file there says (a relative one is the admin folder's)."""
    try:
        with open(os.path.join(gitdir, "gitdir"), encoding="utf-8") as fh:
            dotgit = fh.read().strip()
    except OSError:
        return True  # the main worktree's git dir (or unreadable: keep it safe)
    return os.path.exists(os.path.join(gitdir, dotgit))


def adopt_index_lock(gitdir: str, record: Record) -> int:
    """Take ``gitdir``'s ``index.lock`` over from the dead owner whose record still holds it
    (a land killed with its journal unsettled), for ``record``: the lock file is never free
    in between. Returns a write descriptor on it, or -1 when no dead owner holds it.

    ``ConcurrentUpdate`` when the dead owner's ref moves are not settled yet: the store's
    recovery settles them first, and this call ran the working tree's alone (the land was
    killed after the call's store recovery began); the next call settles both, in order."""
    with flocked(common_dir(gitdir) / "gitpatch" / "recover.lock"):
        for dead in read_records(gitdir):
            locks = [p for p in dead.plan.get("locks", ()) if isinstance(p, str)]
            held = [p for p in locks if os.path.basename(p) == "index.lock"]
            if not held or not dead.owner.dead():
                continue
            if os.path.realpath(os.path.dirname(held[0])) != os.path.realpath(gitdir):
                continue
            if not dead.owns(held[0]):
                continue
            if dead.plan.get("refs"):  # its ref transaction is the store's to settle first
                raise ConcurrentUpdate(
                    f"a killed gitpatch land still holds {held[0]}: it is being settled, its "
                    "branch first, then what it wrote to the working tree",
                    hint="Retry the call: the next one settles the killed land and goes on. "
                    "Nothing was changed.",
                    details={"lock": held[0]},
                    reason="changed",  # a retry helps: the next call settles it
                )
            fd = record.adopt(held[0], dead.proof(held[0]))
            rest = [p for p in locks if p != held[0]]
            if rest:
                dead.narrow(rest)
            else:
                dead.drop()
            return fd
    return -1


def _free_all_but(record: Record, keep: Sequence[str]) -> list[str]:
    """Free a dead owner's locks but ``keep`` (other worktrees' writers must not wait on its
    notes lock), and narrow its record to them, so that no later recovery takes a live
    process's lock of the same name for one of the freed."""
    removed = [
        p
        for p in record.plan.get("locks", ())
        if p not in keep and (record.owns(p) or _unwritten_ref_lock(p, record))
    ]
    for path in removed:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(record.proof(path))
    record.narrow(keep)
    return removed


def _unwritten_ref_lock(path: str, record: Record) -> bool:
    """A ref lock (``refs/...``, ``HEAD``) a kill caught inside libgit2's locking call, before
    it could be proved: libgit2 leaves a ref lock empty until it commits, git writes the new
    value the moment it takes one, so an empty ref lock made after the announcement is the
    dead owner's. No such rule exists for index, config or packed-refs locks."""
    name = os.path.basename(path)
    if f"{os.sep}refs{os.sep}" not in path and name != "HEAD.lock":
        return False
    try:
        st = os.lstat(path)
        since = record.written_ns()
    except FileNotFoundError:
        return False
    return st.st_size == 0 and st.st_mtime_ns >= since


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
    gitdir = repo.path
    common = str(common_dir(gitdir))
    out = [os.path.join(gitdir if n == "HEAD" else common, f"{n}.lock") for n in names]
    if deletes:
        out.append(os.path.join(common, "packed-refs.lock"))
    return out


#: Every step boundary, in the order a land passes them.
POINTS = (
    "objects.written",  # the proposal's (or step's) commits are in the object store
    "journal.written",  # the land journal names ref, old, new, paths and notes
    "files.staged",  # the new files are written (fsynced) next to their places, refs not moved
    "file.deleted",  # one path deleted on disk, refs not moved (:n for the n-th)
    "file.kept",  # a file's new content named for the file it will replace, not yet swapped
    "file.renamed",  # one file renamed into place, refs not moved (:n for the n-th)
    "index.skip_worktree",  # skip-worktree entries set in the scratch index, their bits not yet
    "index.written",  # the index names the new blobs (index.lock held), refs not moved
    "record.written",  # the owner record lists the lock files and refs about to be taken
    "refs.locked",  # every ref lock of the transaction is held, nothing moved
    "refs.partial",  # the first ref moved, the others still locked (a kill inside the commit)
    "refs.partial.last",  # the same with the last ref (the notes ref) moved first
    "refs.moved",  # refs and notes moved together
    "land.put_back",  # the ref transaction failed: files and index are back, journal not dropped
    "head.moved",  # HEAD points at the session branch
    "config.written",  # the session's target is remembered in git config
    "saves.settled",  # the files the land replaced checked once more, the journal not dropped
    "journal.dropped",  # the land is complete
    "checkpoint.staged",  # a checkpoint's changes are in its worktree's index, nothing published
    "checkpoint.published",  # its proposal ref (or session branch) and note moved, HEAD not yet
    "worktree.added",  # a session's worktree is recorded by git, its files not written yet
    "worktree.filled",  # its files are written, the marker saying it is being made remains
    "session.set_aside",  # an ending session's worktree folder is renamed aside, not removed
    "session.removed",  # that folder is removed; git's record of it and the branch remain
)

_CRASH_ENV = "GITPATCH_CRASH_AT"
_LOG_ENV = "GITPATCH_CRASH_LOG"
_HOW_ENV = "GITPATCH_CRASH_HOW"
_passed: dict[str, int] = {}


def crashpoint(name: str) -> None:
    """Die at step boundary ``name`` when the crash tests ask for it (see the module).

    ``GITPATCH_CRASH_AT=<name>[:<n>]`` kills at the n-th time the point is passed (default the
    first); with ``GITPATCH_CRASH_LOG=<file>`` every point passed is appended there.
    """
    spec = os.environ.get(_CRASH_ENV)
    log = os.environ.get(_LOG_ENV)
    if spec is None and log is None:
        return
    count = _passed[name] = _passed.get(name, 0) + 1
    if log is not None:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{name}:{count}\n")
    if spec is not None and _asked(spec, name, count):
        how = os.environ.get(_HOW_ENV)
        if how in ("stop", "pause"):
            os.kill(os.getpid(), signal.SIGSTOP)  # the parent SIGKILLs it here, or goes on
            if how == "pause":
                return
        os._exit(137)


def crash_requested(name: str) -> bool:
    """True when the next pass of ``name`` is to be a kill (for a simulated partial step)."""
    spec = os.environ.get(_CRASH_ENV)
    return spec is not None and _asked(spec, name, _passed.get(name, 0) + 1)


def _asked(spec: str, name: str, count: int) -> bool:
    point, _, nth = spec.partition(":")
    return point == name and count == int(nth or "1")
