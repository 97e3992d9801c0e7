"""The one attempt loop: a proposal's commit built on its branch's head, rebuilt after a lost race.

Every write of an agent's change goes through here, and only here is an attempt repeated:

- ``land``: one change on one ref (``Workspace.propose``) or on several at once (ordinary paths
  plus ``work://`` / ``memory://`` roots, ``tools.storage.scratch``). Each ref's share is an
  ``Attempt``, so every rule holds for every ref a change touches: paths checked on the first
  attempt, a disk edit since the caller's read refused, a change by another writer since the
  first attempt refused, the touched files' uncommitted content recorded first, and git's
  conversions (autocrlf, eol, filter drivers) applied as ``git add`` and ``git checkout``
  would. Every ref and note then moves in one transition of the one publisher.
- ``land_batch``: a batch of changes on one ref, each built on the one before, the ref moved
  once for all of them with no note (the hosted service's write queue).

Both rebuild after a lost compare-and-swap through ``retried``, at most ``MAX_ATTEMPTS`` times.

``preview`` is the dry run the doors show (a CLI ``--dry-run``, a hosted space's size limits
and its queued writes): the engine applied to what a proposal would apply to, nothing built.

The one publisher is here too: refs and notes move in one transaction, the checked-out disk goes
first. Everything gitpatch makes visible goes through ``publish``: a proposal (its branch or
proposal ref plus its note), an approval, a rejection, an undo. Each is described as a
``Transition``; ``publish`` moves its refs together with a new commit of ``refs/notes/gitpatch``
in a single reference transaction. When the moving branch is checked out, that transaction is
the last step of ``WorkingTree.land``, which writes the files and the index first, as git does,
while that transaction holds its ref locks (journaled, so a kill in between is finished or put
back by the next call; a lost compare-and-swap writes nothing), after refusing local changes it
would overwrite.

The publisher does not decide what to publish, and it does not retry a lost race on the refs
themselves: callers rebuild their step and call again (see ``gitpatch.core.retry``). Only a lost
race on the notes ref, when rebuilding the notes commit gives the same notes, is absorbed here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, TypeVar

import pygit2

from gitpatch import engine
from gitpatch.checkout import preflight as checkout
from gitpatch.checkout.worktree import WorkingTree
from gitpatch.core.model import Changeset, Proposal
from gitpatch.core.retry import lost_race, retry
from gitpatch.errors import ConcurrentUpdate, DirtyWorktree, InternalError, SigningRequired
from gitpatch.safety.recovery import crashpoint
from gitpatch.store import NOTES_REF, NoteChange, RefUpdate, Store, notes_update
from gitpatch.workspace import _carry as carry
from gitpatch.workspace import _guards as guards
from gitpatch.workspace import _stack as stack
from gitpatch.workspace import _versions as versions
from gitpatch.workspace import gate
from gitpatch.workspace._build import (
    Built,
    Context,
    build,
    carried,
    proposal_result,
    record_dirty,
)
from gitpatch.workspace.results import ProposalResult, now_iso
from gitpatch.workspace.sessions import PROPOSAL_PREFIX, short

__all__ = [
    "MAX_ATTEMPTS",
    "NOTES_ATTEMPTS",
    "REPLAYED",
    "STEP_ATTEMPTS",
    "Attempt",
    "Head",
    "Moved",
    "NoteChange",
    "Preview",
    "Transition",
    "check_paths",
    "consistent_view",
    "disk",
    "land",
    "land_batch",
    "note",
    "preview",
    "publish",
    "retried",
    "view",
]

#: Lost compare-and-swaps absorbed before ``concurrent_update`` (each costs one rebuild).
MAX_ATTEMPTS = 60

_R = TypeVar("_R")

#: What ``preview`` applies a proposal to: the branch as it is now, or a commit (None: empty).
Head = pygit2.Oid | None | Literal["branch"]

#: (the head a batch's first attempt saw, the head another writer left) on a rebuild.
Moved = tuple[pygit2.Oid | None, pygit2.Oid | None]


#: What a proposal's note keeps of a tool call's result for its retries
#: (``Workspace.plumbing.replayed``): what the note and the branch do not already say.
REPLAYED = frozenset({"files", "edits", "message", "worktree", "recorded", "carried"})


@dataclasses.dataclass
class Attempt:
    """One ref's share of a proposal across its attempts.

    ``read_as`` is the version the caller read (a pin of uncommitted disk content included),
    ``expected`` the commit it stands for; without them, the head the first attempt saw is the
    reference a later attempt compares with. ``head`` and ``built`` are the latest attempt's.
    """

    ctx: Context
    proposal: Proposal
    pid: str
    revision: bool = False
    read_as: pygit2.Oid | None = None
    expected: pygit2.Oid | None = None
    first: pygit2.Oid | None = None
    started: bool = False
    head: pygit2.Oid | None = None
    built: Built | None = None
    #: The person's files whose uncommitted work was committed first (``record``), or that get
    #: the change merged in and stay uncommitted (``carry``), in the latest attempt.
    recorded: list[str] = dataclasses.field(default_factory=list)
    kept: list[str] = dataclasses.field(default_factory=list)
    #: The digest of the tool call that makes it (``Proposal.call``): kept in the note with
    #: the call's result (``REPLAYED``), so a retry of that call gets the same result.
    call: str = ""
    _result: ProposalResult | None = dataclasses.field(default=None, repr=False)

    def build(self) -> Built:
        """Build the proposal's commit on the branch's current head (no ref moves).

        After a lost race the proposal is simply rebuilt on the new head, unless another
        writer changed one of its paths: then ``resource_conflict`` (see ``guards``).
        """
        ctx, paths = self.ctx, self.proposal.paths
        with consistent_view(ctx):
            # in review mode with a session: built on the session's open proposals (their top)
            seen = view(ctx)
            head = seen.head
            loose = [p for p in paths if p not in seen.stacked]
            if not self.started:
                self.started, self.first = True, head
                check_paths(ctx, head, paths, self.proposal)
                if self.read_as is not None:  # a version read: its files still on disk?
                    versions.check_disk(ctx.store, disk(ctx), self.read_as, loose)
            since = self.expected is not None
            reference = self.expected if since else self.first
            guards.check_unchanged(
                ctx.store,
                reference,
                head,
                paths,
                since_version=since,
                branch=ctx.branch,
                read=self.read_as if self.read_as != self.expected else None,
            )
            base, recorded = _record_dirty(ctx, head, loose, self.pid)
        filters = ctx.worktree.filters if ctx.worktree is not None else None
        by = (ctx.agent_signature(), ctx.session_label())
        built = build(
            ctx.store,
            self.proposal,
            base,
            recorded,
            self.pid,
            self.revision,
            filters,
            by,
            max_bytes=ctx.max_file_bytes,
        )
        kept: list[str] = []
        if recorded and ctx.dirty == "carry":
            built = carried(ctx.store, self.proposal, built, head, self.pid, by)
            kept, recorded = recorded, []
        self.head, self.built, self.recorded, self.kept = head, built, recorded, kept
        return built

    def note(self, tool: str) -> dict[str, Any]:
        """The note of the commit the latest attempt built (see ``note``)."""
        assert self.built is not None
        written = note(self.ctx, self.built, self.pid, tool, self.revision)
        if self.call:
            written["call"] = self.call
            written["result"] = self.result().model_dump(mode="json", include=set(REPLAYED))
        return written

    def result(self) -> ProposalResult:
        """What ``propose`` returns for the latest attempt (worked out once per attempt)."""
        built = self.built
        assert built is not None
        if self._result is None or self._result.version != str(built.commit):
            self._result = proposal_result(
                self.ctx, built, self.pid, recorded=self.recorded, carried=self.kept
            )
        return self._result


def land(
    ctx: Context,
    attempts: Sequence[Attempt],
    tool: str,
    *,
    before_write: Callable[[], None] | None = None,
    revised: tuple[str, pygit2.Oid] | None = None,
) -> None:
    """Build every attempt on its ref's head and publish them all in one transition, again
    after a lost race (the one attempt loop). ``ctx`` is the Workspace's: its branch follows
    on disk when it is checked out and moves in auto mode. ``before_write`` runs once, after
    the first build and before anything is written; ``revised`` is (id, commit) of the
    proposal the first attempt revises, whose note then points at it."""
    called: list[bool] = []

    def attempt() -> None:
        for one in attempts:
            one.build()
        if before_write is not None and not called:
            before_write()
            called.append(True)
        publish(ctx, _transition(ctx, attempts, tool, revised))

    retried(attempt, ctx.branch)


def _transition(
    ctx: Context,
    attempts: Sequence[Attempt],
    tool: str,
    revised: tuple[str, pygit2.Oid] | None,
) -> Transition:
    """Every attempt's ref and note in one step: in auto mode its branch moves, in review
    mode its proposal ref is created; ``ctx``'s branch (auto) is landed on disk."""
    notes: dict[pygit2.Oid, NoteChange] = {}
    refs: list[RefUpdate] = []
    checkout: tuple[str, pygit2.Oid | None, pygit2.Oid] | None = None
    paths: tuple[str, ...] | None = None
    checked = True  # False: the change was carried onto a person's uncommitted work
    for one in attempts:
        built, auto = one.built, one.ctx.mode == "auto"
        assert built is not None
        if auto and one.ctx.branch in one.ctx.protected:
            raise InternalError("refusing to land an agent commit on a protected branch")
        written = one.note(tool)
        if revised is not None and one is attempts[0]:
            written["revises"] = revised[0]
        notes[built.commit] = _constant(written)
        ref = one.ctx.branch if auto else PROPOSAL_PREFIX + one.pid
        refs.append((ref, built.commit, one.head if auto else None))
        if one.ctx is ctx:
            checkout = (ctx.branch, built.base, built.commit) if auto else None
            paths, checked = built.land_paths, not one.kept
    if revised is not None:
        notes[revised[1]] = _revised_by(attempts[0].pid)
    return Transition(
        refs=tuple(refs),
        notes=notes,
        message=f"gitpatch: {tool or 'propose'} {attempts[0].pid}",
        checkout=checkout,
        paths=paths,
        disk_checked=checked,
    )


def _constant(note: dict[str, Any]) -> NoteChange:
    return lambda _old: note


def _revised_by(pid: str) -> NoteChange:
    return lambda old: {**(old or {}), "revised_by": pid}


def land_batch(
    store: Store,
    branch: str,
    build: Callable[[pygit2.Oid | None, Moved | None], pygit2.Oid | None],
    message: Callable[[], str],
) -> None:
    """Build a batch of changes on ``branch``'s head and move it once to the batch's tip
    (no note, no disk: the hosted service's write queue), again after a lost race.

    ``build(head, moved)`` builds the batch on ``head`` and returns its tip (None: nothing
    to land); ``moved`` is (the head the first attempt saw, ``head``) on a rebuild, so a
    change whose paths the other writer touched can be refused (``guards``)."""
    start: list[pygit2.Oid | None] = []

    def attempt() -> None:
        head = store.ref_target(branch)
        moved = (start[0], head) if start else None
        if not start:
            start.append(head)
        tip = build(head, moved)
        if tip is not None:
            store.update_refs([(branch, tip, head)], message())

    retried(attempt, branch)


def view(ctx: Context) -> stack.View:
    """What a call reads and builds on: in review mode with a session, the target plus the
    session's open proposals (their top), else the branch head."""
    session = ctx.session if ctx.mode == "review" else None
    return stack.view(ctx.store, ctx.branch, session, ctx.target)


def retried(attempt: Callable[[], _R], branch: str) -> _R:
    """``attempt()`` until it does not lose a compare-and-swap, at most ``MAX_ATTEMPTS`` times."""
    return retry(
        attempt,
        attempts=MAX_ATTEMPTS,
        catch=ConcurrentUpdate,
        when=lost_race,
        exhausted=lambda _exc: ConcurrentUpdate(
            f"{short(branch)} kept moving: {MAX_ATTEMPTS} attempts to land the "
            "proposal lost to other writers",
            hint="The branch is very busy; retry the call.",
            details={"branch": branch},
            reason="changed",
        ),
    )


@contextlib.contextmanager
def consistent_view(ctx: Context) -> Iterator[None]:
    """While reading head and disk together, no land may run (see ``WorkingTree.reading``)."""
    if ctx.worktree is None or not ctx.tracks_disk():
        yield
        return
    with ctx.worktree.reading():
        yield


def disk(ctx: Context) -> WorkingTree | None:
    """The working tree when it shows the branch (its content is then the base)."""
    return ctx.worktree if ctx.tracks_disk() else None


def check_paths(
    ctx: Context,
    head: pygit2.Oid | None,
    paths: Sequence[str],
    proposal: Proposal | None = None,
) -> None:
    """Refuse unsafe or ignored paths, and paths whose parent is a file (``guards``). With
    ``proposal``: a directory it empties may become a file, one it leaves files in may not,
    and with core.ignorecase a new path that differs from a tracked one only in case is
    refused."""
    tree = disk(ctx)
    check_ignored = ctx.worktree is not None and not ctx.allow_ignored
    root = tree.root if tree is not None else None
    replaced: set[str] = set()
    if proposal is not None:  # a directory it empties may become a file
        replaced, kept = guards.replaced_directories(ctx.store, head, proposal)
        guards.refuse_half_replaced(kept)
        guards.refuse_case_twins(ctx.store, head, proposal)
    guards.check_paths(
        ctx.store, head, paths, disk=root, check_ignored=check_ignored, replaced=replaced
    )


def _record_dirty(
    ctx: Context, head: pygit2.Oid | None, paths: Sequence[str], pid: str
) -> tuple[pygit2.Oid | None, list[str]]:
    """Record touched files' uncommitted disk content first, when the branch is on disk."""
    tree = disk(ctx)
    if tree is None:
        return head, []
    return record_dirty(ctx.store, tree, head, paths, pid, ctx.dirty)


def note(ctx: Context, built: Built, pid: str, tool: str, revision: bool) -> dict[str, Any]:
    """The status note a proposal commit is published with (``refs/notes/gitpatch``)."""
    auto = ctx.mode == "auto"
    return {
        "id": pid,
        "status": "applied" if auto else "proposed",
        "tool": tool or "propose",
        "target": ctx.target,
        "branch": ctx.branch if auto else PROPOSAL_PREFIX + pid,
        "base": str(built.base) if built.base is not None else None,
        "fingerprint": built.fingerprint,
        "author": ctx.proposed_by(),
        "created_at": now_iso(),
        "created_ns": time.time_ns(),  # orders calls made within one second
        "revision": revision,
        **({"session": ctx.session} if ctx.session is not None else {}),
    }


@dataclasses.dataclass(frozen=True)
class Preview:
    """What a proposal would do, nothing written: the changeset and, for each path it reads,
    the content it applies to (absent: no such file)."""

    changeset: Changeset
    before: Mapping[str, bytes]


def preview(ctx: Context | None, proposal: Proposal, *, on: Head = "branch") -> Preview:
    """Apply ``proposal`` (paths already normalized) to the branch's content: the disk when it
    shows the branch, else the head; ``on``: a commit to apply it to instead (one ``main``
    may not point at yet: a queued batch's). ``ctx`` None stands for an empty repository."""
    before: dict[str, bytes] = {}
    if ctx is not None:
        with consistent_view(ctx) if isinstance(on, str) else contextlib.nullcontext():
            head = ctx.store.ref_target(ctx.branch) if isinstance(on, str) else on
            check_paths(ctx, head, proposal.paths, proposal)
            tree = disk(ctx) if isinstance(on, str) else None
            for path in proposal.paths:
                data = tree.read(path) if tree is not None else None
                if tree is None and head is not None:
                    data = ctx.store.read(head, path)
                if data is not None:
                    before[path] = data
    return Preview(engine.apply(proposal, before), before)


#: Lost compare-and-swaps a review step (approve, reject, undo) absorbs before
#: ``concurrent_update``; each costs rebuilding the step.
STEP_ATTEMPTS = 20
#: Lost races on the notes ref alone absorbed while publishing (each rebuilds one notes commit).
NOTES_ATTEMPTS = 60


@dataclasses.dataclass(frozen=True)
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
