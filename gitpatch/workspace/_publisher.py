"""The one publisher: refs and notes move in one transaction, the checked-out disk goes first.

Everything gitpatch makes visible goes through ``publish``: a proposal (its branch or proposal
ref plus its note), an approval, a rejection, an undo. Each is described as a ``Transition``;
``publish`` moves its refs together with a new commit of ``refs/notes/gitpatch`` in a single
reference transaction. When the moving branch is checked out, that transaction is the last
step of ``WorkingTree.land``, which writes the files and the index first, as git does, while
that transaction holds its ref locks (journaled, so a kill in between is finished or put back
by the next call; a lost compare-and-swap writes nothing), after refusing local changes it would
overwrite.

It does not decide what to publish, and it does not retry a lost race on the refs themselves:
callers rebuild their step and call again (see ``gitpatch.core.retry``). Only a lost race on the
notes ref, when rebuilding the notes commit gives the same notes, is absorbed here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pygit2

from gitpatch.checkout import preflight as checkout
from gitpatch.core.retry import retry
from gitpatch.errors import ConcurrentUpdate, DirtyWorktree, SigningRequired
from gitpatch.safety.recovery import crashpoint
from gitpatch.store import NOTES_REF, NoteChange, RefUpdate, Store, notes_update
from gitpatch.workspace import _carry as carry
from gitpatch.workspace import gate
from gitpatch.workspace.sessions import short

if TYPE_CHECKING:
    from gitpatch.workspace._context import Context

__all__ = ["NOTES_ATTEMPTS", "STEP_ATTEMPTS", "NoteChange", "Transition", "publish"]

#: Lost compare-and-swaps a review step (approve, reject, undo) absorbs before
#: ``concurrent_update``; each costs rebuilding the step.
STEP_ATTEMPTS = 20
#: Lost races on the notes ref alone absorbed while publishing (each rebuilds one notes commit).
NOTES_ATTEMPTS = 60


@dataclass(frozen=True)
class Transition:
    """One atomic step: refs to move, notes to change, and the checkout that must follow.

    ``checkout`` is (branch, old, new): if that branch is checked out, the working tree moves
    from ``old`` to ``new`` for ``paths`` (default: every path that differs between them). A
    path whose disk content is neither its content at ``old``, at ``new`` nor at one of
    ``keep`` is a local change: with ``dirty='carry'`` the change is merged into it (see
    ``carry``), else it refuses the whole step; ``disk_checked`` says the caller
    has just made disk match ``old`` (a proposal records local changes first), so only the
    land's own re-check under its lock runs.
    """

    refs: tuple[RefUpdate, ...]
    notes: Mapping[pygit2.Oid, NoteChange]
    message: str
    checkout: tuple[str, pygit2.Oid | None, pygit2.Oid] | None = None
    keep: tuple[pygit2.Oid, ...] = ()
    paths: tuple[str, ...] | None = None
    disk_checked: bool = False


def publish(ctx: Context, step: Transition) -> None:
    """Move the refs and the notes ref in one transaction; land on disk when checked out."""
    store = ctx.store
    _refuse_unsigned(store, step.refs)
    checkout.check_refs(store.git_dir, store.is_bare, step.refs)
    update, written = notes_update(store, step.notes)
    for ref, new, old in step.refs:  # the approval gate the git hooks also enforce
        if ref in ctx.protected and new is not None:  # else it lets the move pass
            gate.check_update(store, ref, old, new, protected=ctx.protected, notes_tip=update[1])
    crashpoint("objects.written")

    def move(ahead: Callable[[], None] | None = None) -> None:
        _move(store, step, update, written, ahead)

    landing = _landing(ctx, step)
    if landing is None:
        move()
        return
    worktree = ctx.worktree
    assert worktree is not None
    branch, old, new = landing
    paths = list(step.paths) if step.paths is not None else store.changed_paths(old, new)
    plan = None
    if not step.disk_checked and ctx.dirty == "carry":
        # what the land refuses anyway (staged work on a path, an operation in progress)
        # is refused as such, before the person's work is merged with anything
        checkout.preflight(store, worktree, branch, new, paths)
        plan = carry.onto_disk(store, worktree, old, new, paths, step.keep)
    verify = (
        step.disk_checked
        or plan is not None
        or _refuse_local_changes(ctx, branch, old, new, paths, step.keep)
    )
    # Read only on this path: the journal needs them to mend notes a kill separates from the ref.
    before = {commit: store.read_note(commit) for commit in written}
    # verify: re-checked under the land lock, so an edit made since the check above is never
    # overwritten; the caller's retry then reports it as a local change.
    worktree.land(
        str(old) if old is not None else None,
        str(new),
        paths,
        move,
        ref=branch,
        verify=verify,
        notes={str(c): (before[c], note) for c, note in written.items()},
        preflight=lambda: checkout.preflight(store, worktree, branch, new, paths),
        carry=plan,
        unmoved=lambda: all(store.ref_target(ref) == was for ref, _new, was in step.refs),
    )


def _refuse_unsigned(store: Store, refs: Sequence[RefUpdate]) -> None:
    """libgit2 signs nothing: with ``commit.gpgsign`` no branch gets a gitpatch commit, unless
    ``gitpatch.allowUnsigned`` says the person accepts unsigned agent commits."""
    if not any(ref.startswith("refs/heads/") and new is not None for ref, new, _old in refs):
        return
    if store.config_bool("commit.gpgsign") and not store.config_bool("gitpatch.allowUnsigned"):
        raise SigningRequired(
            "commit.gpgsign is set and gitpatch cannot sign commits (libgit2 runs neither gpg "
            "nor ssh signing); nothing was committed",
            hint="Ask the person to allow unsigned agent commits (git config "
            "gitpatch.allowUnsigned true) and sign when merging, or turn commit.gpgsign off "
            "for this repository.",
            details={"setting": "commit.gpgsign"},
        )


def _landing(ctx: Context, step: Transition) -> tuple[str, pygit2.Oid | None, pygit2.Oid] | None:
    """The checkout to carry out, None when the moving branch is not on disk or does not move."""
    if step.checkout is None or ctx.worktree is None:
        return None
    branch, old, new = step.checkout
    if ctx.store.head_branch() != branch or old == new:
        return None
    return step.checkout


def _move(
    store: Store,
    step: Transition,
    update: RefUpdate,
    written: Mapping[pygit2.Oid, dict[str, Any]],
    ahead: Callable[[], None] | None = None,
) -> None:
    """The ref transaction; another writer's note elsewhere costs only a new notes commit.
    ``ahead`` (a land's write-ahead) runs while the transaction holds its ref locks.

    When rebuilding the notes commit would change a note this step writes (its writer changed
    that very note), the journal's copy would be stale: the step fails and is rebuilt instead.
    """
    pending = [update]

    def once() -> None:
        if not pending:
            again, notes = notes_update(store, step.notes)
            if notes != written:
                raise ConcurrentUpdate(
                    "a note this change writes was changed by another writer meanwhile",
                    hint="Retry the call.",
                    reason="changed",
                )
            pending.append(again)
        store.update_refs([*step.refs, pending.pop()], step.message, while_locked=ahead)

    retry(
        once,
        attempts=NOTES_ATTEMPTS,
        catch=ConcurrentUpdate,
        when=lambda exc: exc.details.get("ref") == NOTES_REF,
    )


def _refuse_local_changes(
    ctx: Context,
    branch: str,
    old: pygit2.Oid | None,
    new: pygit2.Oid,
    paths: Sequence[str],
    keep: Sequence[pygit2.Oid],
) -> bool:
    """Refuse paths whose disk content is none of old, new or keep; True if all are at old."""
    assert ctx.worktree is not None
    checkout.check_assumed(ctx.worktree, paths)  # hidden local changes: say so
    local = ctx.worktree.modified(str(old) if old is not None else None, paths)
    at_old = not local
    for fine in (new, *keep):
        if not local:
            return at_old
        local = ctx.worktree.modified(str(fine), local)
    # a directory of untracked files where a file goes is no local change: the pre-flight
    # refuses it as resource_exists, naming the directory
    local = [p for p in local if ctx.worktree.disk_blob(p) != "<directory>"]
    if local:
        # the person's edit, not two commits clashing: dirty_worktree, as for a proposal
        raise DirtyWorktree(
            f"{short(branch)} is checked out and {', '.join(local)} has local changes that "
            "are not committed; landing this change would overwrite them",
            hint="Commit, stash or discard your changes to those files, then try again. "
            "Nothing was changed.",
            details={"paths": local, "branch": branch},
        )
    return at_old
