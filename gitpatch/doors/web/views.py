"""What the review page shows, read through the review API and the store; nothing here writes.

``Workspace.proposals`` and ``Workspace.show`` give the list and the diffs. Three things the
page adds are read-only looks at the repository: what approving would do (fast-forward, merge,
or the conflicting files, from an in-memory merge that writes no object), the commits recording
a person's own uncommitted work that a proposal brings (``Gitpatch-Record``), and the note.
Approving, rejecting and undoing stay in ``gitpatch.workspace.review``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import pygit2

from gitpatch.doors.web.diffview import FileDiff, parse_diff
from gitpatch.store import NOTES_REF, Store
from gitpatch.workspace.api import Workspace
from gitpatch.workspace.opening import is_open
from gitpatch.workspace.results import ProposalDetail, ProposalInfo

__all__ = [
    "Detail",
    "Preview",
    "Record",
    "Row",
    "SessionStack",
    "detail",
    "identity",
    "rows",
    "stacks",
    "stamp",
]


@dataclass
class Row:
    """One line of the proposals table."""

    info: ProposalInfo
    open: bool
    insertions: int
    deletions: int

    def as_json(self) -> dict[str, Any]:
        """The row for ``GET /api/proposals``."""
        out = self.info.model_dump()
        out |= {"open": self.open, "insertions": self.insertions, "deletions": self.deletions}
        return out


@dataclass
class Preview:
    """What approving would do: ``fast-forward``, ``merge``, ``conflict`` or ``nothing``."""

    kind: str
    text: str
    files: list[str] = field(default_factory=list)
    why: str = ""

    @property
    def blocked(self) -> bool:
        """True when Approve must be disabled."""
        return self.kind in ("conflict", "nothing")


@dataclass
class Record:
    """A commit holding a person's uncommitted work, recorded before the agent's edit."""

    commit: str
    time: str
    files: list[FileDiff]


@dataclass
class Detail:
    """Everything the proposal page shows."""

    detail: ProposalDetail
    open: bool
    files: list[FileDiff]
    message: str
    note: dict[str, Any]
    records: list[Record]
    preview: Preview | None

    def as_json(self) -> dict[str, Any]:
        """The proposal for ``GET /api/proposals/{id}``."""
        out = self.detail.model_dump()
        out |= {"open": self.open, "message": self.message, "note": self.note}
        out["records"] = [
            {"commit": r.commit, "files": [f.path for f in r.files]} for r in self.records
        ]
        if self.preview is not None:
            out["approval"] = {
                "kind": self.preview.kind,
                "text": self.preview.text,
                "files": self.preview.files,
            }
        return out


def rows(ws: Workspace, status: str = "all") -> list[Row]:
    """The proposals table: open ones first (the review API's order), filtered by status.

    ``status`` is ``all``, ``open`` or one proposal status.
    """
    out = []
    for info in ws.proposals():
        opened = is_open(ws, info)
        if status == "open" and not opened:
            continue
        if status not in ("all", "open") and info.status != status:
            continue
        stats = _stats(ws.store, info)
        out.append(Row(info, opened, stats.get("insertions", 0), stats.get("deletions", 0)))
    return out


@dataclass
class SessionStack:
    """A review-mode session's open proposals, bottom first: approving one lands those above
    it in this list (``Row.info.lands``); the session's own verdicts land or reject them all."""

    session: str
    target: str
    rows: list[Row]

    def as_json(self) -> dict[str, Any]:
        """The stack for ``GET /api/sessions``."""
        return {
            "session": self.session,
            "target": self.target,
            "proposals": [row.as_json() for row in self.rows],
        }


def stacks(table: list[Row]) -> list[SessionStack]:
    """The open proposals of ``table`` grouped by session, each stack in landing order."""
    found: dict[str, SessionStack] = {}
    for row in table:
        info = row.info
        if row.open and info.status == "proposed" and info.session:
            group = found.setdefault(info.session, SessionStack(info.session, info.target, []))
            group.rows.append(row)
    for group in found.values():
        group.rows.sort(key=lambda r: len(r.info.lands))
    return sorted(found.values(), key=lambda g: g.session)


def stamp(ws: Workspace) -> str:
    """Changes whenever the list could: a proposal or session branch or the notes moved.

    The page polls this (a few ref reads) and fetches the list only when it changed.
    """
    store = ws.store
    names = [*store.ref_names("refs/heads/gitpatch/"), NOTES_REF]
    state = "\n".join(f"{name} {store.ref_target(name)}" for name in names)
    return hashlib.sha256(state.encode()).hexdigest()[:16]


def _stats(store: Store, info: ProposalInfo) -> dict[str, int]:
    """The +/- counts ``Workspace.show`` would give: the diff from ``base`` to ``commit``.

    Asked of the store directly: ``show`` of a closed proposal first searches every note for
    its id, which the list already has.
    """
    base = pygit2.Oid(hex=info.base) if info.base else None
    return store.diff(base, pygit2.Oid(hex=info.commit))[1]


def detail(ws: Workspace, pid: str) -> Detail:
    """One proposal with its parsed diff, note, recorded local work and approval preview."""
    shown = ws.show(pid)
    info = shown.info
    store = ws.store
    tip = pygit2.Oid(hex=info.commit)
    opened = is_open(ws, info)
    return Detail(
        detail=shown,
        open=opened,
        files=parse_diff(shown.diff),
        message=store.info(tip).message,
        note=store.read_note(tip) or {},
        records=[Record(r.commit, r.time, parse_diff(r.diff)) for r in shown.records]
        if opened
        else [],
        preview=preview(store, info) if opened else None,
    )


def preview(store: Store, info: ProposalInfo) -> Preview:
    """What approving ``info`` would do to its target, found without writing anything."""
    tip = pygit2.Oid(hex=info.commit)
    target = info.target.removeprefix("refs/heads/")
    head = store.ref_target(info.target)
    if head is None or store.is_ancestor(head, tip):
        return Preview("fast-forward", f"Approving fast-forwards {target} to this proposal.")
    if store.is_ancestor(tip, head):
        return Preview(
            "nothing",
            f"{target} already contains everything this brings.",
            why="there is nothing left to merge.",
        )
    paths = store.merge_conflicts(head, tip)
    if not paths:
        return Preview(
            "merge", f"{target} has moved on: approving makes a merge commit on {target}."
        )
    return Preview(
        "conflict",
        f"Cannot approve: merging into {target} conflicts in {', '.join(paths)}.",
        paths,
        why=f"{target} changed the same lines since. Ask the agent to redo the change on "
        f"the current {target} (or merge it by hand with git), then reject this one.",
    )


def identity(ws: Workspace) -> str:
    """``Name <email>`` from git config, or ``""`` when the repository has none configured."""
    name, email = ws.store.config_get("user.name"), ws.store.config_get("user.email")
    if not name or not email:
        return ""
    return f"{name} <{email}>"
