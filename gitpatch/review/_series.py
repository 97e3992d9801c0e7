"""Review steps on a session's stack, for ``gitpatch.review.lifecycle``: what approving a
proposal also lands, a review-mode session by name, other sessions' work on the same files,
the refs and notes of re-basing the proposals above a rejected one, and a squashed landing.
Nothing here publishes: ``review`` does, in one ref transaction per step.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import pygit2

from gitpatch.review import _clashes as clashes
from gitpatch.review._lookup import (
    PROPOSAL_ID,
    Subject,
    clean_id,
    find,
    first_parent,
    hex_or_empty,
    info,
    oid,
)
from gitpatch.store import RefUpdate, Store
from gitpatch.workspace import NoteChange, stack
from gitpatch.workspace.results import ProposalDetail, ProposalInfo, now_iso
from gitpatch.workspace.sessions import PROPOSAL_PREFIX, SESSION_PREFIX

if TYPE_CHECKING:
    from gitpatch.workspace import Context

__all__ = [
    "SQUASHED_PREFIX",
    "beneath",
    "lands",
    "overlaps",
    "replanned",
    "session_top",
    "show_session",
    "squashed",
    "subject_of",
    "with_lands",
    "with_overlaps",
]

#: Where the commits of proposals approved with ``squash`` stay reachable (by the top's id).
SQUASHED_PREFIX = "refs/gitpatch/squashed/"


def session_top(ctx: Context, name: str) -> tuple[stack.Stack, str] | None:
    """(the stack, its top's id) when ``name`` names a review-mode session with open
    proposals and no session branch of its own; else None."""
    key = clean_id(name).removeprefix("session/")
    if PROPOSAL_ID.fullmatch(key) or ctx.store.ref_target(SESSION_PREFIX + key) is not None:
        return None
    entries = [e for e in stack.open_entries(ctx.store, fresh=True) if e.session == key]
    if not entries:
        return None
    found = stack.of_session(ctx.store, key, entries[-1].target, entries)
    return found, found.entries[-1].id


def lands(ctx: Context, sub: Subject) -> list[str]:
    """Ids of the other open proposals approving ``sub`` lands (bottom first)."""
    if sub.session:
        return []
    return [e.id for e in beneath(ctx, sub)]


def beneath(ctx: Context, sub: Subject) -> list[stack.Entry]:
    """The other open proposals approving ``sub`` brings to its target, bottom first: those
    below it in its session's stack (a proposal without a session sits on its target)."""
    session = str(sub.note.get("session") or "")
    if not session:
        return []
    entries = stack.open_entries(ctx.store, fresh=True)
    chain = stack.of_session(ctx.store, session, sub.target, entries).entries
    ids = [e.id for e in chain]
    return list(chain[: ids.index(sub.id)]) if sub.id in ids else []


def _owner(item: ProposalInfo) -> str:
    """Whose work an open item is: its session (an auto session is listed by its name)."""
    return item.id if item.status == "applied" else item.session


def with_lands(ctx: Context, items: list[ProposalInfo]) -> list[ProposalInfo]:
    """Open proposals with the ids of the open proposals approving each also lands (every
    session's stack found once, not once per proposal)."""
    entries = stack.open_entries(ctx.store, fresh=True)
    below: dict[str, list[str]] = {}
    for session, target in {(e.session, e.target) for e in entries if e.session}:
        chain = [e.id for e in stack.of_session(ctx.store, session, target, entries).entries]
        below |= {pid: chain[:at] for at, pid in enumerate(chain)}
    return [
        item.model_copy(update={"lands": below[item.id]})
        if item.status == "proposed" and below.get(item.id)
        else item
        for item in items
    ]


def _where(item: ProposalInfo) -> str:
    return "session branch" if item.status == "applied" else f"proposal {item.id}"


def with_overlaps(items: list[ProposalInfo]) -> list[ProposalInfo]:
    """Open items flagged where another session's open work changes the same files."""
    out = []
    for item in items:
        flags = [
            f"{path}: session {_owner(other)} ({_where(other)})"
            for other in items
            if _owner(other) and _owner(item) and _owner(other) != _owner(item)
            for path in item.files
            if path in other.files
        ]
        out.append(item.model_copy(update={"overlaps": flags}) if flags else item)
    return out


def overlaps(ctx: Context, session: str | None = None) -> list[str]:
    """Where the session's (or ``session``'s) open work meets other sessions' open work, or
    its target's changes since its base, to the line (``ws.plumbing.overlaps``, ``clashes``)."""
    return clashes.between(ctx, session)


def show_session(ctx: Context, series: stack.Stack, now: datetime) -> ProposalDetail:
    """A review-mode session: what approving it lands, as one diff over its target."""
    top = find(ctx, series.entries[-1].id)
    base = series.entries[0].note.get("base")
    below = oid(base) if base else first_parent(ctx.store, series.entries[0].commit)
    text, stats = ctx.store.diff(below, top.tip)
    described = info(ctx.store, top, now).model_copy(
        update={
            "id": series.session,
            "base": hex_or_empty(below),
            "files": ctx.store.changed_paths(below, top.tip),
            "lands": [e.id for e in series.entries],
            "session": series.session,
        }
    )
    return ProposalDetail(info=described, diff=text, stats=stats)


def squashed(
    store: Store,
    sub: Subject,
    head: pygit2.Oid | None,
    merged: pygit2.Oid,
    name: str,
    extra: dict[str, str] | None = None,
) -> pygit2.Oid:
    """One commit on ``head`` holding ``merged``'s tree: the whole stack as a single change
    (``extra``: more trailers)."""
    tree = store.build_tree(merged, [])  # the same tree, by id
    subjects = [store.info(c).summary for c in reversed(sub.commits) if c not in sub.records]
    message = f"Session {name}: {len(subjects)} change(s)\n\n" + "\n".join(
        f"- {s}" for s in subjects
    )
    trailers = {"Gitpatch-Proposal": f"session/{name}", "Gitpatch-Tool": "approve", **(extra or {})}
    return store.commit(tree, [head] if head is not None else [], message, trailers)


def replanned(
    store: Store,
    pid: str,
    series: stack.Stack,
    replan: stack.Replan,
    by: str,
    reason: str,
    *,
    event: str = "",
    why: str | None = None,
    extra: dict[str, Any] | None = None,
) -> tuple[list[RefUpdate], dict[pygit2.Oid, NoteChange]]:
    """Refs and notes for the proposals above a rejected one: re-based or needing revision.

    ``event``: what happened to ``pid`` instead, when it got a new version rather than a
    rejection (``reason`` then says why the ones needing revision need it); ``why``: the
    reason the ones needing revision are given instead, and ``extra`` facts for their notes."""
    refs: list[RefUpdate] = []
    notes: dict[pygit2.Oid, NoteChange] = {}
    at = now_iso()
    for qid, (old, new) in replan.moved.items():
        refs.append((PROPOSAL_PREFIX + qid, new, old))
        moved = {k: v for k, v in (store.read_note(old) or {}).items() if k != "told"}
        moved |= {"base": str(store.info(new).parents[0]) if store.info(new).parents else None}
        moved |= {
            "rebased_from": str(old),
            "rebased_after": pid,
            "created_at": moved.get("created_at") or at,
        }
        if event:
            moved["rebased_why"] = event
        notes[new] = lambda _old, moved=moved: dict(moved)  # type: ignore[misc]
        notes[old] = lambda old_note, new=new: {  # type: ignore[misc]
            **(old_note or {}),
            "tool": "rebased",
            "rebased_as": str(new),
        }
    if why is None:
        why = reason if event else f"it changes files of rejected proposal {pid}"
        why += f" ({reason})" if reason and not event else ""
    for entry in replan.needs_revision:
        kept = stack.REVISE_PREFIX + entry.id
        refs.append((PROPOSAL_PREFIX + entry.id, None, entry.commit))
        refs.append((kept, entry.commit, store.ref_target(kept)))
        stamp = {"status": "needs_revision", "decided_by": by, "decided_at": at, "reason": why}
        stamp |= extra or {}
        notes[entry.commit] = lambda old, stamp=stamp: {**(old or {}), **stamp}  # type: ignore[misc]
    return refs, notes


def subject_of(ctx: Context, entry: stack.Entry) -> Subject:
    """A ``Subject`` describing a proposal that was open as ``entry`` (for result texts)."""
    base = first_parent(ctx.store, entry.commit)
    return Subject(
        entry.id,
        PROPOSAL_PREFIX + entry.id,
        entry.commit,
        entry.target or ctx.target,
        base,
        (entry.commit,),
        frozenset(),
        session=False,
        note=entry.note,
    )
