"""The approval queue: approvals land one at a time, each on the result of the one before.

Every approval (one ID, several at once, from the CLI, the page or Python, by any number of
people and processes) takes its turn: an ``flock`` on ``<common git dir>/gitpatch/queue.lock``,
held while the approval merges onto the target as it is at that moment, runs the project's
checks on that exact result (``review.checks``) and publishes. So each entry lands on the one
before and is checked on what it lands on: bors's rule, the target always passes its checks.

``land(ids)`` runs a list of entries in its turn. An entry whose checks fail is marked
``checks_failed`` (it stays open); one that no longer merges is marked ``needs_revision`` with
each conflicting file's lines on both sides (its ref kept under ``refs/gitpatch/revise/``,
as a rejection's dependants are); the agents read either in their next result. Either way the
queue goes on with the next entry, on the last result that landed.

A kill in the middle: each landing is one publisher step (refs and notes in one transaction,
the disk journaled), so the target is at the last checked result and nothing is half-landed.
Batch mode (for slow checks, as bors does): the entries are merged one on the other in memory
and the checks run once, on the whole batch's result; if they pass, the entries land one
after the other (each step is covered by the batch's run), else the batch is split in halves
and each half goes the same way, the second on what the first landed, down to single entries
checked on their own (which are then marked as above). A kill between two landings of a
passing batch leaves the target at a step of it: merged cleanly, covered by the batch's run,
not checked on its own.

``queue.json`` beside the lock names the entries still to land while a queue runs; the next
Workspace opened (``recover``) or the next turn finds it without its holder and clears it,
with the lock file: the entries that did not land stay open proposals, to be approved again
(nothing is landed that a person is no longer watching).

It does not decide how an entry lands (``lifecycle.approve`` does) nor run checks itself.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pygit2

from gitpatch.errors import (
    ChecksFailed,
    ConcurrentUpdate,
    GitpatchError,
    InvalidArguments,
    MergeConflict,
)
from gitpatch.review import _checks as checks
from gitpatch.review import _clashes as clashes
from gitpatch.review import _lifecycle as lifecycle
from gitpatch.review import _series as series
from gitpatch.review import _worktrees as worktrees
from gitpatch.review._lookup import find
from gitpatch.safety.atomic import TMP_SUFFIX, write_atomic
from gitpatch.safety.owners import flocked
from gitpatch.workspace import NoteChange, Transition, publish, stack
from gitpatch.workspace.results import Landing, ProposalResult, now_iso
from gitpatch.workspace.sessions import short

if TYPE_CHECKING:
    from pathlib import Path

    from gitpatch.workspace import Context

__all__ = ["QUEUE_WAIT", "approve", "land", "recover", "turn"]

#: Seconds an approval waits for the approvals ahead of it (their checks included) at least.
QUEUE_WAIT = 900.0


def _state(ctx: Context) -> Path:
    return worktrees.common_dir(ctx.store) / "gitpatch"


@contextlib.contextmanager
def turn(ctx: Context, entries: Sequence[str] = ()) -> Iterator[None]:
    """Hold the queue for the block (waiting for the approvals ahead); ``entries`` are
    recorded in ``queue.json`` meanwhile. A record a killed holder left is cleared first."""
    state = _state(ctx)
    patience = max(QUEUE_WAIT, 4 * sum(c.timeout for c in checks.configured(ctx)))
    with flocked(state / "queue.lock", wait=patience):
        record = state / "queue.json"
        _clear_record(state)  # its holder is gone: what it had not landed stays open
        if entries:
            write_atomic(record, json.dumps({"entries": list(entries)}).encode(), durable=False)
        try:
            yield
        finally:
            record.unlink(missing_ok=True)


def _clear_record(state: Path) -> None:
    """Remove the queue's record and the temp files of writes of it that a kill cut short
    (only the queue's holder writes it, so under the lock every one of them is stale)."""
    (state / "queue.json").unlink(missing_ok=True)
    for torn in state.glob(f".queue.json.*{TMP_SUFFIX}"):
        torn.unlink(missing_ok=True)


def recover(ctx: Context) -> bool:
    """Clear what a killed queue (or check run) left, when no live process holds it: the
    queue's lock file and record (the entries it had not landed stay open), the scratch
    checkouts' lock files. True when there was something to clear. Two stats when none."""
    state = _state(ctx)
    locks = [state / "queue.lock", *checks.checks_dir(ctx.store).glob("scratch-*.lock")]
    found = [p for p in locks if p.exists()]
    if not found and not (state / "queue.json").exists():
        return False
    for lock in found or locks[:1]:
        try:
            with flocked(lock, wait=0):  # free: taking it and letting go removes the file
                if lock.name == "queue.lock":
                    _clear_record(state)
        except ConcurrentUpdate:
            continue  # held by a live queue or check: not ours to clear
    return True


def approve(
    ctx: Context,
    pid: str,
    by: str,
    *,
    squash: bool = False,
    skip_checks: str | None = None,
    told: Callable[[str], None] | None = None,
) -> ProposalResult:
    """One approval, in its turn (``lifecycle.approve``: checked, then landed)."""
    with turn(ctx):
        return lifecycle.approve(ctx, pid, by, squash=squash, skip_checks=skip_checks, told=told)


def land(
    ctx: Context,
    ids: Sequence[str],
    by: str,
    *,
    squash: bool = False,
    skip_checks: str | None = None,
    batch: bool = False,
    progress: Callable[[Landing], None] | None = None,
) -> list[Landing]:
    """Approve ``ids`` in order, each on the result of the one before, checked on that
    result; entries that fail their checks or no longer merge are marked and skipped.
    ``batch``: check them together and split on a failure (see the module's docstring).
    ``progress`` hears of each entry as it is done."""
    if not ids or len(set(ids)) != len(ids):
        raise InvalidArguments(
            "the queue needs one or more different proposal ids or session names",
            hint="Pass each ID once: gitpatch approve ID1 ID2 ...",
        )
    out: list[Landing] = []

    def one(pid: str) -> None:
        done = _one(ctx, pid, by, squash, skip_checks)
        out.append(done)
        if progress is not None:
            progress(done)
        left = list(ids[len(out) :])
        write_atomic(
            _state(ctx) / "queue.json", json.dumps({"entries": left}).encode(), durable=False
        )

    with turn(ctx, ids):
        if batch and skip_checks is None and not squash:
            _batched(ctx, list(ids), by, one)
        else:
            for pid in ids:
                one(pid)
    return out


def _batched(ctx: Context, ids: list[str], by: str, one: Callable[[str], None]) -> None:
    """Land ``ids`` as one batch when the checks pass on their merged result, else each half
    the same way (the second on what the first landed); single entries land as usual."""
    if len(ids) == 1:
        one(ids[0])
        return
    steps = _steps(ctx, ids, by)
    if steps is not None:
        report = checks.run(ctx, steps[-1][1])
        if report.passed:
            final = report.tree
            with checks.vouched({tree: final for tree, _commit in steps}):
                for pid in ids:
                    one(pid)
            return
    half = len(ids) // 2
    _batched(ctx, ids[:half], by, one)
    _batched(ctx, ids[half:], by, one)


def _steps(ctx: Context, ids: list[str], by: str) -> list[tuple[str, pygit2.Oid]] | None:
    """The (tree, commit) each entry of a batch would bring its target to, merged in order
    on its head now; None when one of them does not merge (they then go one by one)."""
    store = ctx.store
    out: list[tuple[str, pygit2.Oid]] = []
    at: pygit2.Oid | None = None
    for pid in ids:
        try:
            named = series.session_top(ctx, pid)
            sub = find(ctx, named[1] if named is not None else pid)
            at = store.ref_target(sub.target) if at is None else at
            if at is None or store.is_ancestor(at, sub.tip):
                at = sub.tip
            elif not store.is_ancestor(sub.tip, at):
                message = f"Batch step {sub.id}\n\nChecked with its batch for {by}."
                at = store.merge(at, sub.tip, message, None)
        except GitpatchError:
            return None
        out.append((str(store.tree_of(at)), at))
    return out


def _one(ctx: Context, pid: str, by: str, squash: bool, skip: str | None) -> Landing:
    try:
        result = lifecycle.approve(ctx, pid, by, squash=squash, skip_checks=skip)
    except ChecksFailed as exc:
        return Landing(
            id=pid, status="checks_failed", message=exc.message, code=exc.code, checks=exc.details
        )
    except MergeConflict as exc:
        try:
            found, message = _needs_revision(ctx, pid, by)
        except GitpatchError:
            return Landing(id=pid, status="refused", message=exc.message, code=exc.code)
        return Landing(
            id=pid, status="needs_revision", message=message, code=exc.code, conflicts=found
        )
    except GitpatchError as exc:
        return Landing(id=pid, status="refused", message=exc.message, code=exc.code)
    return Landing(id=pid, status="approved", message=result.message, result=result)


def _needs_revision(ctx: Context, pid: str, by: str) -> tuple[list[dict[str, Any]], str]:
    """Mark ``pid`` (and what it would have landed with it) ``needs_revision``, with the
    lines of both sides of each conflicting file; the agent is told in its next result."""
    store = ctx.store
    named = series.session_top(ctx, pid)
    sub = find(ctx, named[1] if named is not None else pid)
    head = store.ref_target(sub.target)
    assert head is not None  # a conflict needs a target to conflict with
    side = "session" if sub.session or named is not None else "proposal"
    target = short(sub.target)
    found = clashes.conflicts(store, head, sub.tip, target, side)
    why = f"it no longer merges with {target}: {clashes.describe(found, target, side)}"
    facts: dict[str, Any] = {"conflicts": found, "conflicts_with": str(head)}
    if sub.session:  # a session branch stays; its tip's note tells the agent
        stamp = {"status": "needs_revision", "decided_by": by, "decided_at": now_iso()}
        stamp |= {"reason": why, **facts}
        notes: dict[pygit2.Oid, NoteChange] = {sub.tip: lambda old: {**(old or {}), **stamp}}
        publish(ctx, Transition((), notes, f"gitpatch: {sub.id} needs revision"))
    else:
        chain = stack.of_session(
            store, str(sub.note.get("session") or ""), sub.target, stack.open_entries(store)
        )
        ids = {*(e.id for e in series.beneath(ctx, sub)), sub.id}
        entries = [e for e in stack.open_entries(store, fresh=True) if e.id in ids]
        replan = stack.Replan({}, entries)
        refs, notes = series.replanned(store, sub.id, chain, replan, by, "", why=why, extra=facts)
        publish(ctx, Transition(tuple(refs), notes, f"gitpatch: {sub.id} needs revision"))
    what = f"session {named[0].session}" if named is not None else f"{side} {sub.id}"
    return found, f"{what} was not landed and needs a revision: {why}"
