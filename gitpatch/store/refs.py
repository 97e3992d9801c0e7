"""Moving references by compare-and-swap only, with bounded retries on busy lock files.

A reference moves from the value the caller read (``old``) to ``new`` or not at all: creation
fails if the ref appeared meanwhile, an update fails if it moved, a deletion fails if it moved.
libgit2 does not wait for a busy ``.lock`` file, so lock contention is retried here with jittered
exponential backoff; a lock that outlives the retries and is older than ``STALE_LOCK_SECONDS`` is
left over from a killed process and is removed once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence

import pygit2

from gitpatch.errors import ConcurrentUpdate, InvalidArguments, RepositoryError
from gitpatch.retry import retry
from gitpatch.store._errors import git_errors

__all__ = [
    "LOCK_RETRIES",
    "STALE_LOCK_SECONDS",
    "RefUpdate",
    "current_target",
    "remove_stale_files",
    "update_ref",
    "update_refs",
]

#: How many times a busy lock is waited for before giving up (about 2.5 s in total).
LOCK_RETRIES = 30
#: A ref lock older than this is a leftover of a killed process: git holds one for microseconds.
STALE_LOCK_SECONDS = 10.0

RefUpdate = tuple[str, pygit2.Oid | None, pygit2.Oid | None]


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
    if new is None or old is None:
        # Not create_reference(force=False): libgit2 checks that the name is free BEFORE it
        # takes the lock, so two concurrent creators can both "succeed" (the race test saw
        # ~1.5% double winners). A transaction re-reads under the lock.
        _transaction(repo, [(name, new, old)], message)
        return
    ref = repo.references.get(name)
    if ref is None or ref.target != old:
        raise _lost(name, old, current_target(repo, name))
    # set_target compares against the value this Reference was loaded with.
    ref.set_target(new, message)


def _check_targets(repo: pygit2.Repository, updates: Sequence[RefUpdate]) -> None:
    # A transaction writes any id it is given; a ref to a missing object breaks the repository.
    for name, new, _old in updates:
        if new is not None and new not in repo:
            raise RepositoryError(
                f"cannot point {name!r} at {new}: no such object in the repository",
                hint="Write the commit first (Store.commit) and pass its id.",
                details={"ref": name, "target": str(new)},
            )


def _transaction(repo: pygit2.Repository, updates: Sequence[RefUpdate], message: str) -> None:
    _check_targets(repo, updates)
    with repo.transaction() as txn:
        for name, _new, _old in updates:
            txn.lock_ref(name)
        # Re-read under the locks: nobody can move these refs until the transaction ends.
        for name, _new, old in updates:
            actual = current_target(repo, name)
            if actual != old:
                raise _lost(name, old, actual)
        for name, new, old in updates:
            if new is not None:
                txn.set_target(name, new, message=message)
            elif old is not None:
                txn.remove(name)


def _lock_paths(repo: pygit2.Repository, names: Sequence[str]) -> list[str]:
    base = repo.path
    return [os.path.join(base, f"{n}.lock") for n in names] + [
        os.path.join(base, "packed-refs.lock")
    ]


def remove_stale_files(paths: Iterable[str], max_age: float) -> list[str]:
    """Remove those of ``paths`` not modified for ``max_age`` seconds; return them.

    For lock files a killed process left: a missing or unremovable one is passed over.
    """
    limit = time.time() - max_age
    removed: list[str] = []
    for path in paths:
        try:
            if os.lstat(path).st_mtime <= limit:
                os.unlink(path)
                removed.append(path)
        except OSError:
            continue
    return removed


def _break_stale_locks(repo: pygit2.Repository, names: Sequence[str]) -> bool:
    """Remove lock files older than ``STALE_LOCK_SECONDS``; True if one was removed."""
    return bool(remove_stale_files(_lock_paths(repo, names), STALE_LOCK_SECONDS))


def _with_lock_retries(
    repo: pygit2.Repository, names: Sequence[str], action: str, attempt: Callable[[], None]
) -> None:
    def once() -> None:
        with git_errors(action):
            attempt()

    try:
        retry(once, attempts=LOCK_RETRIES, catch=ConcurrentUpdate, when=_locked, cap=0.1)
    except ConcurrentUpdate as exc:
        if exc.reason != "locked" or not _break_stale_locks(repo, names):
            raise
        once()  # the lock was a killed process's leftover: one more try, now it is gone


def _locked(exc: ConcurrentUpdate) -> bool:
    return exc.reason == "locked"


def update_ref(
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


def update_refs(repo: pygit2.Repository, updates: Sequence[RefUpdate], message: str) -> None:
    """Move several refs together: all of them or none (one ``repo.transaction()``)."""
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
        lambda: _transaction(repo, updates, message),
    )
