"""Verdicts on some hunks of a proposal: approve a few, reject a few, keep the rest open.

``approve`` lands the chosen hunks on the target as ONE commit (authored by the agent, noted
as approved by the person, so the approval gate passes it) and keeps the rest as a new version
of the same proposal, built on what landed. ``reject`` drops the chosen hunks from the
proposal (a new version on the same parent) and keeps each one's lines and reason in the note,
for the agent. Either way the proposals stacked above it in its session are re-based on the new
version, or marked ``needs_revision`` when they change a file that now reads differently.
Naming every hunk open is the whole verdict (``lifecycle.approve`` / ``reject``).

``landing`` is the pure part: the commit a selection would land, for callers that must judge
it before anything moves (the project's checks). Everything is one ``Transition`` of the one
publisher: a kill before its ref transaction leaves nothing visible, after it the journal
finishes the checkout.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pygit2

from gitpatch.errors import InvalidArguments
from gitpatch.review import _hunks as hunks
from gitpatch.review import _lifecycle as lifecycle
from gitpatch.review import _series as series
from gitpatch.review._lookup import Subject, find, first_parent
from gitpatch.store import RefUpdate, Store
from gitpatch.workspace import NoteChange, Transition, guards, publish, stack
from gitpatch.workspace.results import ProposalResult, now_iso
from gitpatch.workspace.sessions import PROPOSAL_PREFIX, short

if TYPE_CHECKING:
    from gitpatch.workspace import Context

__all__ = [
    "Landing",
    "approve",
    "landing",
    "open_hunks",
    "reject",
    "restacked",
    "result",
    "version_note",
]


@dataclass(frozen=True)
class Landing:
    """What approving some hunks of ``sub`` makes: ``commit`` on the target's ``head`` (its
    tree is what lands), ``rest`` (the open remainder, on ``commit``; None when nothing is
    left), and the hunks chosen and left."""

    sub: Subject
    head: pygit2.Oid | None
    commit: pygit2.Oid
    rest: pygit2.Oid | None
    chosen: tuple[hunks.Hunk, ...]
    left: tuple[hunks.Hunk, ...]


def open_hunks(ctx: Context, proposal_id: str) -> tuple[Subject, list[hunks.Hunk]]:
    """The open proposal ``proposal_id`` and its open hunks; a session, a proposal with open
    proposals beneath it or with a person's recorded work is refused (decide it whole)."""
    named = series.session_top(ctx, proposal_id)
    sub = find(ctx, named[1] if named is not None else proposal_id)
    if sub.session or named is not None:
        raise InvalidArguments(
            f"{proposal_id} is a session: hunks are decided one proposal at a time",
            hint="Pass the id of one of its proposals (see `gitpatch proposals`).",
            details={"id": proposal_id},
        )
    below = series.beneath(ctx, sub)
    if below:
        ids = ", ".join(e.id for e in below)
        raise InvalidArguments(
            f"proposal {sub.id} is stacked on open proposals ({ids}): decide those first",
            hint=f"Approve or reject {ids} (whole or by hunks), then decide {sub.id}'s hunks.",
            details={"id": sub.id, "beneath": [e.id for e in below]},
        )
    if sub.records or sub.base != first_parent(ctx.store, sub.tip):
        raise InvalidArguments(
            f"proposal {sub.id} also lands a person's recorded uncommitted work: it is "
            "decided whole",
            hint="Approve or reject it without hunks.",
            details={"id": sub.id},
        )
    return sub, hunks.hunks_of(ctx.store, sub.base, sub.tip, sub.note)


def landing(ctx: Context, proposal_id: str, selection: str | Sequence[str]) -> Landing:
    """The commits approving ``selection`` of ``proposal_id``'s hunks would make (written to
    the object store; no ref moves). ``merge_conflict`` when they clash with the target."""
    sub, found = open_hunks(ctx, proposal_id)
    return _landing(ctx, sub, found, hunks.select(found, selection, sub.id))


def _landing(
    ctx: Context, sub: Subject, found: Sequence[hunks.Hunk], chosen: Sequence[hunks.Hunk]
) -> Landing:
    store = ctx.store
    head = store.ref_target(sub.target)
    picked = hunks.tree_with(store, sub.base, chosen)
    base_tree = store.tree_of(sub.base) if sub.base is not None else None
    tree = (
        picked
        if head is None or head == sub.base
        else store.pick_tree(base_tree, store.tree_of(head), picked)
    )
    info = store.info(sub.tip)
    author = pygit2.Signature(info.author_name, info.author_email, int(info.time))
    names = ", ".join(f"{h.number} ({h.id})" for h in chosen)
    # the proposal's own message and trailers (proposal, tool, session), the hunks named
    subject, _nl, body = info.message.partition("\n")
    message = f"{subject} (hunks {names})\n{body}"
    commit = store.commit(tree, [head] if head is not None else [], message, None, author)
    left = tuple(h for h in found if h not in chosen)
    rest = None
    if left:
        rest_tree = store.pick_tree(picked, tree, store.tree_of(sub.tip))
        rest = store.commit(rest_tree, [commit], info.message, None, author)
    return Landing(sub, head, commit, rest, tuple(chosen), left)


def approve(
    ctx: Context, proposal_id: str, by: str, selection: str | Sequence[str]
) -> ProposalResult:
    """Land ``selection`` of a proposal's hunks; the rest stays open, re-based on them."""
    who = lifecycle.decider(by, "approve")
    return lifecycle.retried(lambda: _approve_once(ctx, proposal_id, who, selection))


def reject(
    ctx: Context, proposal_id: str, by: str, selection: str | Sequence[str], reason: str
) -> ProposalResult:
    """Refuse ``selection`` of a proposal's hunks with ``reason``; the rest stays open."""
    who = lifecycle.decider(by, "reject")
    if not isinstance(reason, str):
        raise InvalidArguments("reason must be a string", hint="Say why the hunks are rejected.")
    return lifecycle.retried(lambda: _reject_once(ctx, proposal_id, who, selection, reason.strip()))


def _approve_once(
    ctx: Context, proposal_id: str, by: str, selection: str | Sequence[str]
) -> ProposalResult:
    sub, found = open_hunks(ctx, proposal_id)
    chosen = hunks.select(found, selection, sub.id)
    if len(chosen) == len(found):
        return lifecycle.approve(ctx, sub.id, by)  # every open hunk: the whole verdict
    land = _landing(ctx, sub, found, chosen)
    assert land.rest is not None
    at = now_iso()
    store = ctx.store
    records = [
        hunks.verdict_record(h, "approved", by, at, landed_as=str(land.commit)) for h in land.chosen
    ]
    stamp = {"status": "approved", "approved_by": by, "approved_at": at, "tool": "approve"}
    landed = {
        "id": sub.id,
        "target": sub.target,
        "session": str(sub.note.get("session") or ""),
        "created_at": at,
        "hunks": [h.id for h in land.chosen],
        **stamp,
    }
    refs: list[RefUpdate] = [(sub.target, land.commit, land.head)]
    notes: dict[pygit2.Oid, NoteChange] = {land.commit: lambda _old: dict(landed)}
    names = ", ".join(f"{h.number} ({h.id})" for h in land.chosen)
    more_refs, more_notes, later = _new_version(
        ctx, sub, land.rest, land.left, records, by, f"after hunks {names} of it were approved"
    )
    refs += more_refs
    notes |= more_notes
    step = Transition(
        tuple(refs),
        notes,
        f"gitpatch: approve hunks {names} of {sub.id}",
        checkout=(sub.target, land.head, land.commit),
    )
    publish(ctx, step)
    left = ", ".join(f"{h.number} ({h.id})" for h in land.left)
    return result(
        ctx,
        sub,
        store,
        land.commit,
        sub.target,
        "approved",
        f"Approved hunks {names} of proposal {sub.id} by {by}: one commit "
        f"{str(land.commit)[:12]} on {short(sub.target)}. Hunks {left} stay open as proposal "
        f"{sub.id} (version {str(land.rest)[:12]}), re-based on it.{later}",
    )


def _reject_once(
    ctx: Context, proposal_id: str, by: str, selection: str | Sequence[str], reason: str
) -> ProposalResult:
    sub, found = open_hunks(ctx, proposal_id)
    chosen = hunks.select(found, selection, sub.id)
    if len(chosen) == len(found):
        return lifecycle.reject(ctx, sub.id, by, reason)  # every open hunk: the whole verdict
    store = ctx.store
    at = now_iso()
    left = [h for h in found if h not in chosen]
    info = store.info(sub.tip)
    author = pygit2.Signature(info.author_name, info.author_email, int(info.time))
    tree = hunks.tree_with(store, sub.base, left)
    rest = store.commit(tree, [sub.base] if sub.base else [], info.message, None, author)
    records = [hunks.verdict_record(h, "rejected", by, at, reason) for h in chosen]
    names = ", ".join(f"{h.number} ({h.id})" for h in chosen)
    refs, notes, later = _new_version(
        ctx, sub, rest, left, records, by, f"after hunks {names} of it were rejected"
    )
    publish(ctx, Transition(tuple(refs), notes, f"gitpatch: reject hunks {names} of {sub.id}"))
    because = f" ({reason})" if reason else ""
    return result(
        ctx,
        sub,
        store,
        rest,
        PROPOSAL_PREFIX + sub.id,
        "rejected",
        f"Rejected hunks {names} of proposal {sub.id} by {by}{because}; the rest stays open "
        f"(version {str(rest)[:12]}) and {short(sub.target)} is unchanged.{later}",
    )


def version_note(
    store: Store,
    sub: Subject,
    new: pygit2.Oid,
    left: Sequence[hunks.Hunk],
    extra: dict[str, Any],
) -> dict[pygit2.Oid, NoteChange]:
    """The notes of a proposal's new version ``new`` (its note carried over, with ``left``'s
    hunk ids, the new base and fingerprint, and ``extra`` lists appended) and of the version it
    replaces (bookkeeping: ``rebased_as``)."""
    note = dict(sub.note)
    for key, items in extra.items():
        note[key] = [*(note.get(key) or []), *items]
    parent = first_parent(store, new)
    note["base"] = str(parent) if parent is not None else None
    note["hunk_ids"] = hunks.ids_note(left)
    blobs: dict[str, str | None] = {}
    for path in store.changed_paths(parent, new):
        entry = store.entry(new, path)
        blobs[path] = None if entry is None else str(entry.oid)
    note["fingerprint"] = guards.fingerprint_of(blobs)
    note["version_of"] = str(sub.tip)
    old = sub.tip
    return {
        new: lambda _old: dict(note),
        old: lambda before: {**(before or {}), "tool": "rebased", "rebased_as": str(new)},
    }


def restacked(
    ctx: Context, sub: Subject, new: pygit2.Oid, by: str, event: str
) -> tuple[list[RefUpdate], dict[pygit2.Oid, NoteChange], str]:
    """The proposals above ``sub`` in its session re-based on its new version ``new``, or
    needing a revision where they change a file that reads differently there (its lines
    named); with a sentence for the result."""
    session = str(sub.note.get("session") or "")
    if not session:
        return [], {}, ""
    store = ctx.store
    chain = stack.of_session(store, session, sub.target, stack.open_entries(store, fresh=True))
    replan = stack.restack(store, chain, sub.id, new)
    if not replan.moved and not replan.needs_revision:
        return [], {}, ""
    why = f"it changes lines of proposal {sub.id} that changed {event}: " + _changed_lines(
        store, sub.tip, new
    )
    refs, notes = series.replanned(store, sub.id, chain, replan, by, why, event=event)
    later = ""
    if replan.moved:
        later += f" Re-based the later proposals {', '.join(replan.moved)} on it."
    if replan.needs_revision:
        ids = ", ".join(e.id for e in replan.needs_revision)
        later += f" {ids} build on lines that changed and now need a revision."
    return refs, notes, later


def _changed_lines(store: Store, old: pygit2.Oid, new: pygit2.Oid) -> str:
    """``a.py lines 3-5, b.py`` for what differs between two versions of a proposal."""
    out = []
    for patch in store.file_patches(old, new):
        spans = [
            f"{h.new_start}-{h.new_start + max(h.new_lines, 1) - 1}"
            if h.new_lines != 1
            else str(h.new_start)
            for h in patch.hunks
        ]
        out.append(f"{patch.new_path} lines {', '.join(spans)}" if spans else patch.new_path)
    return "; ".join(out)


def _new_version(
    ctx: Context,
    sub: Subject,
    new: pygit2.Oid,
    left: Sequence[hunks.Hunk],
    records: list[dict[str, Any]],
    by: str,
    event: str,
) -> tuple[list[RefUpdate], dict[pygit2.Oid, NoteChange], str]:
    refs: list[RefUpdate] = [(PROPOSAL_PREFIX + sub.id, new, sub.tip)]
    notes = version_note(ctx.store, sub, new, left, {"verdicts": records})
    more_refs, more_notes, later = restacked(ctx, sub, new, by, event)
    return refs + more_refs, notes | more_notes, later


def result(
    ctx: Context,
    sub: Subject,
    store: Store,
    version: pygit2.Oid,
    branch: str,
    status: str,
    message: str,
) -> ProposalResult:
    """The step's result: ``version`` and the files it changes over its parent."""
    made = dataclasses.replace(sub, base=first_parent(store, version), tip=version)
    return lifecycle.result(
        ctx, made, version=version, branch=branch, status=status, message=message
    )
