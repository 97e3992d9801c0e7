"""One review step applied atomically: refs and notes in one transaction, the disk following.

``gitpatch.review`` describes each approve, reject or undo as a ``Transition``; ``run`` moves
its refs together with a new commit of ``refs/notes/gitpatch`` in a single reference
transaction and, when the moving branch is checked out, lands the change through
``WorkingTree.land`` after refusing local changes it would overwrite.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import pygit2

from gitpatch import gate
from gitpatch.errors import ConcurrentUpdate, MergeConflict
from gitpatch.sessions import short
from gitpatch.store import RefUpdate
from gitpatch.store.notes import NoteChange, notes_update
from gitpatch.store.refs import backoff

if TYPE_CHECKING:
    from gitpatch.workspace import Workspace

__all__ = ["ATTEMPTS", "NoteChange", "Transition", "retry", "run"]

T = TypeVar("T")
#: Lost compare-and-swaps (target, proposal, notes, disk) absorbed before ``concurrent_update``.
ATTEMPTS = 20


@dataclass(frozen=True)
class Transition:
    """One atomic step: refs to move, notes to change, and the checkout that must follow.

    ``checkout`` is (branch, old, new): if that branch is checked out, the working tree moves
    from ``old`` to ``new``; a path whose disk content is neither its content at ``old``, at
    ``new`` nor at one of ``keep`` is a local change and refuses the whole step.
    """

    refs: tuple[RefUpdate, ...]
    notes: Mapping[pygit2.Oid, NoteChange]
    message: str
    checkout: tuple[str, pygit2.Oid | None, pygit2.Oid] | None = None
    keep: tuple[pygit2.Oid, ...] = ()


def run(ws: Workspace, step: Transition) -> None:
    """Move the refs and the notes ref in one transaction; land on disk when checked out."""
    store = ws.store
    notes, written = notes_update(store, step.notes)
    updates = [*step.refs, notes]
    for ref, new, old in step.refs:  # the approval gate the git hooks also enforce
        gate.check_update(store, ref, old, new, protected=ws.protected, notes_tip=notes[1])

    def move() -> None:
        store.update_refs(updates, step.message)

    if step.checkout is None or ws.worktree is None:
        move()
        return
    branch, old, new = step.checkout
    if store.head_branch() != branch or old == new:
        move()
        return
    paths = store.changed_paths(old, new)
    at_old = _refuse_local_changes(ws, branch, old, new, paths, step.keep)
    # Read only on this path: the journal needs them to mend notes a kill separates from the ref.
    before = {commit: store.read_note(commit) for commit in written}
    # verify: re-checked under the land lock, so an edit made since the check above is never
    # overwritten; the retry then reports it as a local change.
    ws.worktree.land(
        str(old) if old is not None else None,
        str(new),
        paths,
        move,
        ref=branch,
        verify=at_old,
        notes={str(c): (before[c], note) for c, note in written.items()},
    )


def _refuse_local_changes(
    ws: Workspace,
    branch: str,
    old: pygit2.Oid | None,
    new: pygit2.Oid,
    paths: Sequence[str],
    keep: Sequence[pygit2.Oid],
) -> bool:
    """Refuse paths whose disk content is none of old, new or keep; True if all are at old."""
    assert ws.worktree is not None
    local = ws.worktree.modified(str(old) if old is not None else None, paths)
    at_old = not local
    for fine in (new, *keep):
        if not local:
            return at_old
        local = ws.worktree.modified(str(fine), local)
    if local:
        raise MergeConflict(
            f"{short(branch)} is checked out and {', '.join(local)} has local changes that "
            "are not committed; landing this change would overwrite them",
            hint="Commit, stash or discard your changes to those files, then try again. "
            "Nothing was changed.",
            details={"paths": local, "branch": branch},
        )
    return at_old


def retry(action: Callable[[], T]) -> T:
    """Run ``action``, again from the start when another writer moved a ref first."""
    for attempt in range(ATTEMPTS):
        try:
            return action()
        except ConcurrentUpdate as exc:
            if exc.details.get("reason") == "locked" or attempt == ATTEMPTS - 1:
                raise
            backoff(min(attempt, 6))
    raise AssertionError("unreachable")
