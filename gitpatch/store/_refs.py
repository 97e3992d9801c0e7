"""Moving references by compare-and-swap only, with bounded retries on busy lock files.

A reference moves from the value the caller read (``old``) to ``new`` or not at all: creation
fails if the ref appeared meanwhile, an update fails if it moved, a deletion fails if it moved.
libgit2 does not wait for a busy ``.lock`` file, so lock contention is retried here with jittered
exponential backoff. Before any lock is taken, the operation's owner record lists the lock files
and the moves (``gitpatch.safety.owners``); a lock that outlives the retries is settled by
``gitpatch.safety.recovery`` when its owner is provably dead, and otherwise named, with its
holder, in the ``ConcurrentUpdate``.

A transaction may run a callback while it holds its locks, after its compare-and-swap checks
passed and before it commits (``while_locked``): a land writes the files and the index ahead of
its branch there, so no other writer (a person's ``git commit``) can move the branch between
the write-ahead and the move; the locks stay announced and proved in the owner record
throughout (``Record.keeping``), so a kill inside the callback is settled like any other.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pygit2

from gitpatch.core.retry import retry
from gitpatch.errors import ConcurrentUpdate, InvalidArguments, RepositoryError
from gitpatch.safety import owners, recovery
from gitpatch.safety.recovery import crash_requested, crashpoint
from gitpatch.store._repo import Repo, git_errors

__all__ = [
    "LOCK_RETRIES",
    "RefUpdate",
    "Refs",
    "current_target",
    "recover",
]

#: How many times a busy lock is waited for before giving up (about 2.5 s in total).
LOCK_RETRIES = 30

RefUpdate = tuple[str, pygit2.Oid | None, pygit2.Oid | None]
#: Run while a transaction holds its ref locks, its checks passed, before it commits.
WhileLocked = Callable[[], object] | None


def current_target(repo: pygit2.Repository, name: str) -> pygit2.Oid | None:
    """The commit ``name`` points to now (following a symbolic ref), None if missing/unborn."""
    with git_errors(f"read reference {name!r}"):
        ref = repo.references.get(name)
        if ref is None:
            return None
        if ref.type == pygit2.enums.ReferenceType.SYMBOLIC:
            try:
                ref = ref.resolve()
            except KeyError:
                return None
        target = ref.target
        assert isinstance(target, pygit2.Oid)
        return target


def _lost(name: str, expected: pygit2.Oid | None, actual: pygit2.Oid | None) -> ConcurrentUpdate:
    def show(oid: pygit2.Oid | None) -> str:
        return str(oid) if oid is not None else "(none)"

    return ConcurrentUpdate(
        f"reference {name!r} is at {show(actual)}, expected {show(expected)}: "
        "it was changed by someone else",
        hint="Read the current state again, rebuild the change on top of it, and retry.",
        details={
            "ref": name,
            "expected": None if expected is None else str(expected),
            "actual": None if actual is None else str(actual),
        },
        reason="changed",
    )


def _check_direct(repo: pygit2.Repository, name: str) -> None:
    ref = repo.references.get(name)
    if ref is not None and ref.type == pygit2.enums.ReferenceType.SYMBOLIC:
        raise RepositoryError(
            f"reference {name!r} is symbolic (points to {ref.target}); update its target instead",
            details={"ref": name},
        )


def _swap_once(
    repo: pygit2.Repository,
    name: str,
    new: pygit2.Oid | None,
    old: pygit2.Oid | None,
    message: str,
) -> None:
    _check_direct(repo, name)
    # Always a transaction: it re-reads under the lock (libgit2's create_reference checks that
    # the name is free BEFORE it locks, so two creators could both "succeed"), and its locks
    # are announced in the owner record, so a kill holding them is settled by recovery.
    _transaction(repo, [(name, new, old)], message)


def _check_targets(repo: pygit2.Repository, updates: Sequence[RefUpdate]) -> None:
    # A transaction writes any id it is given; a ref to a missing object breaks the repository.
    for name, new, old in updates:
        if new is not None and old is None:
            _refuse_shadowed(repo, name)
        if new is not None and not repo.odb.exists(new):
            raise RepositoryError(
                f"cannot point {name!r} at {new}: no such object in the repository",
                hint="Write the commit first (Store.commit) and pass its id.",
                details={"ref": name, "target": str(new)},
            )


def _refuse_shadowed(repo: pygit2.Repository, name: str) -> None:
    """A ref named like a folder of ``name`` (a person's branch ``gitpatch`` for
    ``refs/heads/gitpatch/<id>``) makes git unable to create it: say so, not libgit2's
    "parent is not directory"."""
    parts = name.split("/")
    for depth in range(3, len(parts)):
        prefix = "/".join(parts[:depth])
        if repo.references.get(prefix) is not None:
            short = prefix.removeprefix("refs/heads/")
            raise RepositoryError(
                f"cannot create {name}: the ref {prefix} exists, and git cannot keep a ref "
                f"and a folder of refs under the same name (a branch named {short!r}?); "
                "nothing was changed",
                hint=f"Ask the person to rename that branch (`git branch -m {short} "
                f"{short}-old`), then retry.",
                details={"ref": name, "blocking": prefix, "reason": "ref_conflict"},
            )


def _transaction(
    repo: pygit2.Repository,
    updates: Sequence[RefUpdate],
    message: str,
    while_locked: WhileLocked = None,
) -> None:
    _check_targets(repo, updates)
    names = [name for name, _new, _old in updates]
    deletes = any(new is None for _name, new, _old in updates)
    locks = recovery.lock_paths(repo, names, deletes)
    moves = [(n, _hex(old), _hex(new)) for n, new, old in updates]
    with owners.operation(repo.path) as record:
        record.announce(locks, moves)
        crashpoint("record.written")
        try:
            _locked_transaction(repo, updates, message, while_locked, record, locks, moves)
        finally:
            record.clear()


def _locked_transaction(
    repo: pygit2.Repository,
    updates: Sequence[RefUpdate],
    message: str,
    while_locked: WhileLocked = None,
    record: owners.Record | None = None,
    locks: Sequence[str] = (),
    moves: Sequence[tuple[str, str, str]] = (),
) -> None:
    _refuse_packing(repo, updates)
    with _freed(repo.transaction()) as txn:
        for name, _new, _old in updates:
            txn.lock_ref(name)
            # libgit2 took the lock and holds it: prove it ours, so recovery may free it
            owners.prove_lock(recovery.lock_paths(repo, [name], False)[0])
        crashpoint("refs.locked")
        # Re-read under the locks: nobody can move these refs until the transaction ends.
        for name, _new, old in updates:
            actual = current_target(repo, name)
            if actual != old:
                raise _lost(name, old, actual)
        if while_locked is not None:
            # nested announcements inside (the index lock's) keep these locks and moves
            with record.keeping(locks, moves) if record else contextlib.nullcontext():
                while_locked()
        for name, new, old in updates:
            if new is not None:
                txn.set_target(name, new, message=message)
            elif old is not None:
                txn.remove(name)
        for point in ("refs.partial", "refs.partial.last"):
            if crash_requested(point):
                _commit_one_and_die(repo, updates, point)
    _check_applied(repo, updates)
    crashpoint("refs.moved")


def _refuse_packing(repo: pygit2.Repository, updates: Sequence[RefUpdate]) -> None:
    """A delete rewrites ``packed-refs``: while ``git pack-refs`` / ``gc`` / ``maintenance``
    holds its lock, libgit2 may commit the other refs and report success without deleting
    the packed one. Wait for it (``locked``, retried) instead of moving anything."""
    if all(new is not None for _name, new, _old in updates):
        return
    lock = recovery.lock_paths(repo, [], True)[0]
    if os.path.exists(lock):
        raise ConcurrentUpdate(
            f"{lock} is held (git pack-refs, gc or maintenance is rewriting packed-refs)",
            hint="Retry when that git command has finished. Nothing was changed.",
            details={"path": lock},
            reason="locked",
        )


def _check_applied(repo: pygit2.Repository, updates: Sequence[RefUpdate]) -> None:
    """A ref the committed transaction deleted is gone: libgit2 may report success for a
    packed ref it could not delete (``packed-refs`` being rewritten meanwhile), and that must
    be said, not taken for done. (Only deletes: a ref set may already have moved on, by a
    writer that came after this transaction; a deleted one still at its old id did not.)"""
    wrong = [
        name
        for name, new, old in updates
        if new is None and old is not None and current_target(repo, name) == old
    ]
    if wrong:
        raise RepositoryError(
            f"git applied only part of a reference update: {', '.join(wrong)} did not move "
            "(another git command was rewriting the references)",
            hint="Run the call again once that git command has finished; it settles the rest.",
            details={"refs": wrong},
        )


@contextlib.contextmanager
def _freed(txn: pygit2.transaction.ReferenceTransaction) -> Iterator[Any]:
    """``txn`` committed at the end of the block, and freed whatever happens: pygit2's own
    ``with`` skips the free when the commit fails (a ``packed-refs.lock`` held by a running
    ``git pack-refs`` or ``gc``), leaving every ref lock taken in place until the object is
    collected, which blocks the retries and outlives the process."""
    try:
        yield txn
        txn.commit()
    finally:
        txn.__exit__(BaseException, None, None)  # with an exception: frees, commits nothing


def _commit_one_and_die(repo: pygit2.Repository, updates: Sequence[RefUpdate], point: str) -> None:
    """For the crash tests: what a kill inside libgit2's commit leaves (one ref moved, the
    others still locked: the first, or with ``.last`` the last, ref that is set), made the way
    libgit2 commits one ref, then the kill."""
    sets = [u for u in updates if u[1] is not None]
    name, new, _old = sets[-1] if point.endswith(".last") else sets[0]
    lock = recovery.lock_paths(repo, [name], False)[0]
    with open(lock, "w", encoding="ascii") as fh:
        fh.write(f"{new}\n")
    os.replace(lock, lock.removesuffix(".lock"))
    crashpoint(point)


def _hex(oid: pygit2.Oid | None) -> str:
    return "" if oid is None else str(oid)


def recover(repo: pygit2.Repository, *, sweep: bool = False) -> list[str]:
    """Settle what dead gitpatch processes left (see ``gitpatch.safety.recovery``)."""
    return recovery.recover_dead(
        repo, lambda moves, msg: _update_refs(repo, moves, msg), sweep=sweep
    )


def _busy(repo: pygit2.Repository, names: Sequence[str], exc: ConcurrentUpdate) -> ConcurrentUpdate:
    """The lock is still held after the retries: say which lock, and who holds it."""
    paths = [p for p in recovery.lock_paths(repo, names, True) if os.path.exists(p)]
    who = [h for p in paths for h in recovery.holders(repo.path, p)]
    held = ", ".join(paths) or "a lock file"
    by = f"gitpatch {', '.join(who)}" if who else "a process that is not gitpatch (a git command?)"
    return ConcurrentUpdate(
        f"the lock file {held} is held by {by}",
        hint="Retry shortly. If it stays, finish or stop that process; gitpatch removes the "
        "locks of its own killed processes by itself and never those of a live one.",
        details={**exc.details, "paths": paths, "holders": who},
        reason="locked",
    )


def _with_lock_retries(
    repo: pygit2.Repository, names: Sequence[str], action: str, attempt: Callable[[], None]
) -> None:
    def once() -> None:
        with git_errors(action):
            attempt()

    try:
        retry(once, attempts=LOCK_RETRIES, catch=ConcurrentUpdate, when=_locked, cap=0.1)
    except ConcurrentUpdate as exc:
        if exc.reason != "locked":
            raise
        if not recover(repo):
            raise _busy(repo, names, exc) from exc
        once()  # the lock was a killed process's leftover: one more try, now it is gone


def _locked(exc: ConcurrentUpdate) -> bool:
    return exc.reason == "locked"


def _update_ref(
    repo: pygit2.Repository,
    name: str,
    new: pygit2.Oid | None,
    old: pygit2.Oid | None,
    message: str,
) -> None:
    """Move ``name`` from ``old`` to ``new`` (None: absent) or raise ``ConcurrentUpdate``."""
    if new is None and old is None:
        if current_target(repo, name) is not None:
            raise _lost(name, None, current_target(repo, name))
        return

    def attempt() -> None:
        try:
            _swap_once(repo, name, new, old, message)
        except pygit2.AlreadyExistsError:
            raise _lost(name, old, current_target(repo, name)) from None
        except pygit2.GitError as exc:
            if "old reference value does not match" not in str(exc):
                raise
            raise _lost(name, old, current_target(repo, name)) from exc

    _with_lock_retries(repo, [name], f"update reference {name!r}", attempt)


def _update_refs(
    repo: pygit2.Repository,
    updates: Sequence[RefUpdate],
    message: str,
    while_locked: WhileLocked = None,
) -> None:
    """Move several refs together: all of them or none (one ``repo.transaction()``), running
    ``while_locked`` once their locks are held and checked (see the module)."""
    names = [name for name, _new, _old in updates]
    if len(set(names)) != len(names):
        raise InvalidArguments(
            f"the same reference appears twice in one update: {sorted(names)}",
            hint="Give each reference once.",
        )
    if not updates:
        return
    for name in names:
        with git_errors(f"read reference {name!r}"):
            _check_direct(repo, name)
    _with_lock_retries(
        repo,
        names,
        f"update references {', '.join(names)}",
        lambda: _transaction(repo, updates, message, while_locked),
    )


#: How old stat data must be before a listing keyed by it is kept (``flat_ref_names``).
_SETTLED_NS = 100_000_000


class Refs(Repo):
    """References: read, listed and moved by compare-and-swap; the part of ``Store`` for them."""

    #: prefix -> (stat data of its folder and of packed-refs, the names listed then)
    _flat: dict[str, tuple[tuple[Any, ...], list[str]]]

    def ref_target(self, name: str) -> pygit2.Oid | None:
        """The commit the full ref ``name`` points to, or None if it does not exist (or unborn)."""
        return current_target(self.repo, name)

    def head_branch(self) -> str | None:
        """The branch HEAD points to (``refs/heads/x``, even unborn), or None when detached."""
        with git_errors("read HEAD"):
            head = self.repo.references.get("HEAD")
            if head is None or head.type != pygit2.enums.ReferenceType.SYMBOLIC:
                return None
            target = head.target
            return target if isinstance(target, str) else None

    def update_ref(
        self, name: str, new: pygit2.Oid | None, old: pygit2.Oid | None, message: str
    ) -> None:
        """Compare-and-swap ``name`` from ``old`` to ``new`` (None = absent); see ``refs``."""
        _update_ref(self.repo, name, new, old, message)

    def update_refs(
        self, updates: Sequence[RefUpdate], message: str, *, while_locked: WhileLocked = None
    ) -> None:
        """Compare-and-swap several ``(name, new, old)`` refs at once, all or none; with
        ``while_locked``, that runs while their locks are held and checked, before the commit
        (an exception from it aborts the transaction: nothing moves)."""
        _update_refs(self.repo, updates, message, while_locked)

    def ref_names(self, prefix: str) -> list[str]:
        """The full names of the refs starting with ``prefix``, sorted."""
        with git_errors(f"list the references under {prefix}"):
            return sorted(
                r.name for r in self.repo.references.iterator() if r.name.startswith(prefix)
            )

    def flat_ref_names(self, prefix: str) -> list[str]:
        """``ref_names(prefix)`` for a folder of refs one level deep (``prefix`` ends with
        ``/``), listed again only when the stat data of that folder or of ``packed-refs``
        changed since the last listing. libgit2 lists every ref to find a few (it reads each
        loose ref file): with 1,000 open proposals that is ~10 ms. Like git's own stat checks
        this trusts only settled stat data (changed over 0.1 s before the look), and a listing
        with a name below a deeper folder is never kept."""
        stamp = self._refs_stamp(prefix)
        kept = self._flat.get(prefix)
        if stamp is not None and kept is not None and kept[0] == stamp:
            return list(kept[1])
        names = self.ref_names(prefix)
        self._flat.pop(prefix, None)
        if stamp is not None and not any("/" in n[len(prefix) :] for n in names):
            self._flat[prefix] = (stamp, names)
        return list(names)

    def _refs_stamp(self, prefix: str) -> tuple[Any, ...] | None:
        """Stat data of ``prefix``'s folder and of ``packed-refs`` (None for one that does not
        exist), or None when either changed too recently to be trusted."""
        common = owners.common_dir(self.repo.path)
        now = time.time_ns()
        stamp: list[Any] = []
        for path in (common / prefix.rstrip("/"), common / "packed-refs"):
            try:
                st = os.stat(path)
            except FileNotFoundError:
                stamp.append(None)
                continue
            except OSError:
                return None
            if now - max(st.st_mtime_ns, st.st_ctime_ns) < _SETTLED_NS:
                return None
            stamp.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        return tuple(stamp)

    def set_head(self, ref: str) -> None:
        """Point HEAD at the branch ``ref``; ``ConcurrentUpdate`` (reason ``locked``) while
        HEAD.lock is held by another process (announced in an owner record first, so recovery
        can remove the lock if this process is killed holding it)."""
        with owners.holding(self.repo.path, [os.path.join(self.repo.path, "HEAD.lock")]):
            try:
                self.repo.references.create("HEAD", ref, force=True)
            except OSError as exc:
                raise ConcurrentUpdate("HEAD is locked", reason="locked") from exc

    def recover(self, *, sweep: bool = False) -> list[str]:
        """Finish or undo what killed gitpatch processes left; the lock files removed (with
        ``sweep``, also libgit2's half-written object files no live process owns; see
        ``gitpatch.safety.recovery``). Returns the lock files removed."""
        with git_errors("recover what a killed gitpatch process left"):
            return recover(self.repo, sweep=sweep)
