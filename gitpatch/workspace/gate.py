"""The approval gate: agent commits reach a protected branch only with a person's approval.

A commit is an agent commit when its message carries a ``Gitpatch-Proposal:`` trailer; it is
approved when its note on ``refs/notes/gitpatch`` records an approval (``approved_by``).
Commits people make themselves carry no trailer and are never blocked, and neither are the
commits recording a person's uncommitted changes (``Gitpatch-Record``).

``check_update`` is the one rule. The Workspace applies it in code before any review step
moves a protected branch (libgit2 runs no hooks), and the git hooks in ``hooks/`` apply it
through ``gitpatch.doors.hooks`` for people and servers using plain git: ``reference-transaction``
(local, git >= 2.28), ``pre-push`` and ``pre-receive`` (a shared remote). This module
reads the repository and never writes to it, except ``approve_commits``, which records the
approval of commits an agent applied on an ordinary branch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pygit2

from gitpatch.errors import ApprovalRequired, InvalidArguments
from gitpatch.store import NOTES_REF, Store, decode_note, note_path
from gitpatch.workspace.sessions import (
    SESSION_PREFIX,
    protected_branches,
    short,
)

__all__ = [
    "ZERO",
    "Pending",
    "approve_commits",
    "check_update",
    "pending",
]

#: How git names a missing side of a ref update (a creation or a deletion).
ZERO = "0" * 40


@dataclass(frozen=True)
class Pending:
    """An agent commit without approval: its id, proposal id and the branch it was made on."""

    commit: str
    proposal: str
    branch: str
    status: str


def _note(store: Store, notes_tip: pygit2.Oid | None, commit: pygit2.Oid) -> dict[str, object]:
    if notes_tip is None:
        return {}
    path, found = note_path(store, notes_tip, commit)
    data = store.read(notes_tip, path) if found else None
    return {} if data is None else decode_note(data)


def pending(
    store: Store,
    old: pygit2.Oid | None,
    new: pygit2.Oid,
    *,
    notes_tip: pygit2.Oid | None = None,
) -> list[Pending]:
    """Agent commits reachable from ``new`` but not from ``old`` that lack an approval.

    ``notes_tip`` is the notes commit to judge by (default: the current ``refs/notes/gitpatch``);
    a transaction that writes notes together with the branch passes its new notes commit.
    """
    tip = notes_tip if notes_tip is not None else store.ref_target(NOTES_REF)
    hide = old if old is not None and store.has_commit(old) else None
    out: list[Pending] = []
    for commit in store.walk(new, hide=hide):
        trailers = dict(commit.message_trailers)
        proposal = trailers.get("Gitpatch-Proposal")
        if not proposal:
            continue
        note = _note(store, tip, commit.id)
        if note.get("approved_by") or note.get("status") == "approved":
            continue
        status = str(note.get("status") or "no note")
        out.append(Pending(str(commit.id), proposal, str(note.get("branch") or ""), status))
    return out


def _how_to_approve(items: Sequence[Pending], ref: str, old: str | None, new: str) -> str:
    """The commands a person runs to approve what blocks the update."""
    sessions = sorted(
        {
            p.branch.removeprefix(SESSION_PREFIX)
            for p in items
            if p.branch.startswith(SESSION_PREFIX)
        }
    )
    single = [p for p in items if not p.branch.startswith(SESSION_PREFIX)]
    # A proposal (or one whose note this repository lacks) is approved by id; commits an
    # agent applied on an ordinary branch by range.
    by_id = sorted({p.proposal for p in single if p.status in ("proposed", "no note")})
    steps = [f"gitpatch approve {name}" for name in (*by_id, *sessions)]
    if any(p.status not in ("proposed", "no note") for p in single):
        since = f"{old[:12]}.." if old else ""
        steps.append(f"gitpatch approve --range {since}{new[:12]}")
    return (
        "Review them (gitpatch show ID), then approve with: "
        + "; ".join(steps)
        + f". Approval lands the change on {short(ref)} and records it on {NOTES_REF}"
        " (push that ref too when a remote enforces the gate)."
    )


def check_update(
    store: Store,
    ref: str,
    old: pygit2.Oid | None,
    new: pygit2.Oid | None,
    *,
    protected: frozenset[str] | None = None,
    notes_tip: pygit2.Oid | None = None,
) -> None:
    """Refuse moving protected branch ``ref`` from ``old`` to ``new`` onto unapproved agent
    commits (``ApprovalRequired``, naming the proposals and the commands that approve them).

    Other refs, deletions and ranges without agent commits pass. ``protected`` defaults to git
    config ``gitpatch.protected`` (main and master when unset).
    """
    guarded = protected if protected is not None else protected_branches(store)
    if ref not in guarded or new is None:
        return
    items = pending(store, old, new, notes_tip=notes_tip)
    if not items:
        return
    ids = ", ".join(sorted({p.proposal for p in items}))
    noun = "commit" if len(items) == 1 else "commits"
    raise ApprovalRequired(
        f"{short(ref)} is protected: {len(items)} agent {noun} without approval (proposals {ids})",
        hint=_how_to_approve(items, ref, str(old) if old else None, str(new)),
        details={"ref": ref, "proposals": sorted({p.proposal for p in items})},
    )


def approve_commits(store: Store, commits: Iterable[pygit2.Oid], by: str) -> list[str]:
    """Record ``by``'s approval on agent commits already applied on an ordinary branch.

    Only commits with a ``Gitpatch-Proposal`` trailer and no approval are stamped; returns
    their ids. Every note moves in one compare-and-swap of the notes ref.
    """
    from gitpatch.core.retry import lost_race, retry
    from gitpatch.errors import ConcurrentUpdate
    from gitpatch.store import notes_update
    from gitpatch.workspace.results import now_iso

    who = by.strip() if isinstance(by, str) else ""
    if not who or "\n" in who:
        raise InvalidArguments(
            "approve needs the name of the person who decides",
            hint="Pass --by 'Name' (default: git config user.name).",
        )
    stamp = {"status": "approved", "approved_by": who, "approved_at": now_iso()}
    candidates = list(commits)

    def once() -> list[str]:
        tip = store.ref_target(NOTES_REF)
        todo = [c for c in candidates if _unapproved_agent_commit(store, tip, c)]
        if not todo:
            return []
        notes, _ = notes_update(store, {c: (lambda old: {**(old or {}), **stamp}) for c in todo})
        store.update_refs([notes], f"gitpatch: approve {len(todo)} applied commits")
        return [str(c) for c in todo]

    return retry(once, attempts=20, catch=ConcurrentUpdate, when=lost_race)


def _unapproved_agent_commit(store: Store, tip: pygit2.Oid | None, commit: pygit2.Oid) -> bool:
    if "Gitpatch-Proposal" not in store.info(commit).trailers:
        return False
    note = _note(store, tip, commit)
    return not (note.get("approved_by") or note.get("status") == "approved")


# -- the git hooks ------------------------------------------------------------------------------


if __name__ == "__main__":
    # Hook shims installed before the hooks door existed run ``python -m gitpatch.workspace.gate``;
    # they keep working (and say how to refresh them) through the legacy entry ``gitpatch.gate``.
    import runpy

    runpy.run_module("gitpatch.gate", run_name="__main__")
