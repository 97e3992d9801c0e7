"""Finding and describing proposals for ``review``: which branch, target, base, commits.

A proposal is open while its branch ``refs/heads/gitpatch/<id>`` exists, and a session while
``refs/heads/gitpatch/session/<name>`` holds commits its protected branch lacks; once closed, a
proposal lives on in its note on ``refs/notes/gitpatch``. Nothing here changes the repository.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pygit2

from gitpatch.errors import InvalidArguments, ProposalClosed, ProposalNotFound, RepositoryError
from gitpatch.store import Store
from gitpatch.workspace.results import ProposalInfo, iso
from gitpatch.workspace.sessions import PROPOSAL_PREFIX, SESSION_PREFIX, session_target

if TYPE_CHECKING:
    from gitpatch.workspace import Context

__all__ = [
    "BOOKKEEPING_TOOLS",
    "PROPOSAL_ID",
    "Subject",
    "brought",
    "clean_id",
    "closed_error",
    "closed_info",
    "feedback",
    "find",
    "first_parent",
    "hex_or_empty",
    "info",
    "note_for_id",
    "oid",
    "open_ids",
    "session_names",
    "walk",
]

PROPOSAL_ID = re.compile(r"^[0-9a-f]{12}$")
#: Notes on commits that are bookkeeping (an approval merge, an undo, a recorded local change),
#: not proposals of their own.
BOOKKEEPING_TOOLS = frozenset({"approve", "undo", "record", "rebased"})
_STATUSES = frozenset({"applied", "proposed", "approved", "rejected", "undone", "needs_revision"})


@dataclass(frozen=True)
class Subject:
    """An open proposal or session.

    ``commits`` are the gitpatch commits (proposals and recorded local changes) it would bring
    to ``target``; ``records`` is the subset recording a person's uncommitted changes.
    """

    id: str
    ref: str
    tip: pygit2.Oid
    target: str
    base: pygit2.Oid | None
    commits: tuple[pygit2.Oid, ...]
    records: frozenset[pygit2.Oid]
    session: bool
    note: Mapping[str, Any] = field(default_factory=dict, hash=False)


def find(ctx: Context, id: str) -> Subject:
    """The open proposal or session ``id`` names; ``ProposalClosed`` / ``ProposalNotFound``.

    ``id`` is a proposal id, a session name, or either branch's name.
    """
    key = clean_id(id)
    store = ctx.store
    if PROPOSAL_ID.fullmatch(key):
        ref = PROPOSAL_PREFIX + key
        tip = store.ref_target(ref)
        if tip is not None:
            return _proposal(ctx, key, ref, tip)
        found = note_for_id(store, key)
        if found is not None:
            raise closed_error(key, found[1])
    name = key.removeprefix("session/")
    ref = SESSION_PREFIX + name
    if name and "/" not in name and pygit2.reference_is_valid_name(ref):
        tip = store.ref_target(ref)
        if tip is not None:
            return _session(ctx, name, ref, tip)
    listed = ", ".join(open_ids(store)[:10]) or "none"
    raise ProposalNotFound(
        f"no open proposal or session named {key!r}",
        hint=f"Open proposals: {listed}. Pass a 12-character proposal id or a session name "
        "(see proposals()).",
        details={"id": key},
    )


def _proposal(ctx: Context, key: str, ref: str, tip: pygit2.Oid) -> Subject:
    store = ctx.store
    note = store.read_note(tip) or {}
    base = oid(note.get("base")) if "base" in note else first_parent(store, tip)
    target = str(note.get("target") or ctx.target)
    commits, records = brought(store, tip, store.ref_target(target))
    return Subject(key, ref, tip, target, base, commits, records, session=False, note=note)


def _session(ctx: Context, name: str, ref: str, tip: pygit2.Oid) -> Subject:
    store = ctx.store
    target = session_target(store, name) or (ctx.target if ctx.session == name else None)
    if target is None:
        target = next((p for p in sorted(ctx.protected) if store.ref_target(p)), None)
    if target is None:
        raise RepositoryError(
            f"cannot tell which branch session {name!r} was started from",
            hint=f"Set git config gitpatch-session.{name}.target to that branch's full ref.",
            details={"session": name},
        )
    head = store.ref_target(target)
    base = None
    if head is not None:
        base = store.merge_base(head, tip)
    commits, records = brought(store, tip, head)
    return Subject(name, ref, tip, target, base, commits, records, session=True)


def brought(
    store: Store, tip: pygit2.Oid, head: pygit2.Oid | None
) -> tuple[tuple[pygit2.Oid, ...], frozenset[pygit2.Oid]]:
    """The gitpatch commits reachable from ``tip`` but not from ``head``, and the records."""
    commits: list[pygit2.Oid] = []
    records: set[pygit2.Oid] = set()
    for commit in walk(store, tip, first_parent=False, hide=head):
        trailers = dict(commit.message_trailers)
        if "Gitpatch-Record" in trailers:
            records.add(commit.id)
        if "Gitpatch-Record" in trailers or "Gitpatch-Proposal" in trailers:
            commits.append(commit.id)
    return tuple(commits), frozenset(records)


def closed_error(key: str, note: Mapping[str, Any]) -> ProposalClosed:
    """The error for acting on a proposal that already has a verdict, saying which and why."""
    status = str(note.get("status", "closed"))
    by = note.get("approved_by") or note.get("rejected_by") or note.get("undone_by")
    at = note.get("approved_at") or note.get("rejected_at") or note.get("undone_at")
    facts = (f" by {by}" if by else "") + (f" at {at}" if at else "")
    if note.get("reason"):
        facts += f": {note['reason']}"
    return ProposalClosed(
        f"proposal {key} is already {status}{facts}",
        hint="It can no longer be approved or rejected. Propose the change again (as a "
        "revision if it was rejected) to get a new proposal id.",
        details={"id": key, "status": status},
    )


def note_for_id(store: Store, key: str) -> tuple[pygit2.Oid, dict[str, Any]] | None:
    """The proposal commit and note with id ``key`` (not an approval merge or undo commit)."""
    for commit, note in store.iter_notes():
        if note.get("id") == key and note.get("tool") not in BOOKKEEPING_TOOLS:
            return commit, note
    return None


def open_ids(store: Store) -> list[str]:
    """Ids of the open proposals (their branches exist), sorted."""
    ids = [n.removeprefix(PROPOSAL_PREFIX) for n in store.ref_names(PROPOSAL_PREFIX)]
    return [i for i in ids if PROPOSAL_ID.fullmatch(i)]


def session_names(store: Store) -> list[str]:
    """Names of the session branches, sorted."""
    return [n.removeprefix(SESSION_PREFIX) for n in store.ref_names(SESSION_PREFIX)]


def info(store: Store, sub: Subject, now: datetime) -> ProposalInfo:
    """``ProposalInfo`` for an open proposal (``proposed``) or session (``applied``)."""
    note = sub.note
    commit = store.info(sub.tip)
    created = str(note.get("created_at") or iso(commit.time))
    return ProposalInfo(
        id=sub.id,
        status="applied" if sub.session else "proposed",
        target=sub.target,
        base=hex_or_empty(sub.base),
        files=store.changed_paths(sub.base, sub.tip),
        author=str(note.get("author") or commit.author),
        created_at=created,
        age_seconds=_age(created, now),
        tool=str(note.get("tool") or ("session" if sub.session else "")),
        branch=sub.ref,
        commit=str(sub.tip),
        **feedback(note),
    )


def feedback(note: Mapping[str, Any]) -> dict[str, Any]:
    """The review loop's fields of ``ProposalInfo`` a note holds: session, verdict, comments,
    revision links."""
    by = note.get("approved_by") or note.get("rejected_by") or note.get("undone_by")
    at = note.get("approved_at") or note.get("rejected_at") or note.get("undone_at")
    comments = note.get("comments")
    return {
        "session": str(note.get("session") or ""),
        "decided_by": str(by or note.get("decided_by") or ""),
        "decided_at": str(at or note.get("decided_at") or ""),
        "reason": str(note.get("reason") or ""),
        "comments": [c for c in comments if isinstance(c, dict)]
        if isinstance(comments, list)
        else [],
        "revises": str(note.get("revises") or ""),
        "revised_by": str(note.get("revised_by") or ""),
    }


def closed_info(
    store: Store, commit: pygit2.Oid, note: Mapping[str, Any], now: datetime
) -> ProposalInfo:
    """``ProposalInfo`` for a proposal known only by its note (approved, rejected, ...)."""
    base = oid(note.get("base")) if "base" in note else first_parent(store, commit)
    created = str(note.get("created_at") or "")
    status = note.get("status")
    return ProposalInfo(
        id=str(note.get("id")),
        status=status if status in _STATUSES else "applied",
        target=str(note.get("target") or ""),
        base=hex_or_empty(base),
        files=store.changed_paths(base, commit),
        author=str(note.get("author") or ""),
        created_at=created,
        age_seconds=_age(created, now),
        tool=str(note.get("tool") or ""),
        branch=str(note.get("branch") or ""),
        commit=str(commit),
        **feedback(note),
    )


def walk(
    store: Store, tip: pygit2.Oid, *, first_parent: bool, hide: pygit2.Oid | None = None
) -> Iterator[pygit2.Commit]:
    """Commits from ``tip`` back, newest first (only the first-parent line when asked)."""
    return store.walk(tip, first_parent=first_parent, hide=hide)


def clean_id(id: str) -> str:
    """``id`` without a ``refs/heads/gitpatch/`` prefix; proposal ids in lowercase."""
    if not isinstance(id, str) or not id.strip():
        raise InvalidArguments(
            "the proposal id is empty",
            hint="Pass a 12-character proposal id or a session name (see proposals()).",
        )
    key = id.strip().removeprefix("refs/heads/").removeprefix("gitpatch/")
    return key.lower() if PROPOSAL_ID.fullmatch(key.lower()) else key


def first_parent(store: Store, commit: pygit2.Oid) -> pygit2.Oid | None:
    """The first parent of ``commit`` (None for a root commit)."""
    parents = store.info(commit).parents
    return parents[0] if parents else None


def oid(value: Any) -> pygit2.Oid | None:
    """A hex id from a note as an ``Oid`` (None when absent or malformed)."""
    try:
        return pygit2.Oid(hex=str(value)) if value else None
    except ValueError:
        return None


def hex_or_empty(value: pygit2.Oid | None) -> str:
    """An id as hex, ``""`` for none (the result models' convention)."""
    return "" if value is None else str(value)


def _age(created: str, now: datetime) -> float:
    try:
        then = datetime.fromisoformat(created)
    except ValueError:
        return 0.0
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return max(0.0, (now - then).total_seconds())
