"""What the review page shows, read through the review API; nothing here writes.

``Workspace.proposals`` and ``Workspace.show`` give the list, the diffs, the commits recording a
person's own uncommitted work that a proposal brings and the note; ``gitpatch.review.queries``
tells what approving would do (``outcome``), a listed proposal's +/- (``stats``) and when the
list may have changed (``stamp``). This module turns them into what the page says. Approving,
rejecting and undoing stay with the ``Workspace``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gitpatch.doors.web.diffview import FileDiff, parse_diff
from gitpatch.porcelain.workspace import Workspace
from gitpatch.review import queries
from gitpatch.workspace.results import HunkInfo, ProposalDetail, ProposalInfo

__all__ = [
    "Detail",
    "Preview",
    "Record",
    "Row",
    "SessionStack",
    "detail",
    "head",
    "hunk_refs",
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
    #: The open hunk shown as hunk ``j`` of file ``i`` (``"i:j"``), and a file taken whole
    #: (``"i"``): what its per-hunk buttons decide.
    hunk_refs: dict[str, HunkInfo] = field(default_factory=dict)
    clashes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The proposal for ``GET /api/proposals/{id}``."""
        out = self.detail.model_dump()
        out |= {"open": self.open, "message": self.message, "note": self.note}
        out["clashes"] = self.clashes
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
    ctx = ws.plumbing.context
    for info in ws.proposals():
        opened = queries.is_open(ctx, info)
        if status == "open" and not opened:
            continue
        if status not in ("all", "open") and info.status != status:
            continue
        stats = queries.stats(ctx, info)
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
        if row.open and info.status in ("proposed", "checks_failed") and info.session:
            group = found.setdefault(info.session, SessionStack(info.session, info.target, []))
            group.rows.append(row)
    for group in found.values():
        group.rows.sort(key=lambda r: len(r.info.lands))
    return sorted(found.values(), key=lambda g: g.session)


def stamp(ws: Workspace) -> str:
    """Changes whenever the list could (``review.stamp``): the page polls it and fetches the
    list only when it changed."""
    return queries.stamp(ws.plumbing.context)


def detail(ws: Workspace, pid: str) -> Detail:
    """One proposal with its parsed diff, note, recorded local work and approval preview."""
    shown = ws.show(pid)
    info = shown.info
    opened = queries.is_open(ws.plumbing.context, info)
    files = parse_diff(shown.diff)
    return Detail(
        detail=shown,
        open=opened,
        files=files,
        message=shown.message,
        note=shown.note,
        records=[Record(r.commit, r.time, parse_diff(r.diff)) for r in shown.records]
        if opened
        else [],
        preview=preview(ws, info) if opened else None,
        hunk_refs=hunk_refs(files, shown.hunks) if opened and info.tool != "session" else {},
        clashes=ws.plumbing.overlaps(info.session) if opened and info.session else [],
    )


def hunk_refs(files: list[FileDiff], hunks: list[HunkInfo]) -> dict[str, HunkInfo]:
    """Which open hunk each shown hunk is: by file, in order (the page and ``show`` read
    one diff); a file whose open hunks do not match what is shown one to one is left out."""
    out: dict[str, HunkInfo] = {}
    for i, f in enumerate(files):
        mine = [h for h in hunks if h.verdict == "open" and h.path == f.path]
        if len(mine) == 1 and mine[0].kind != "change":
            out[str(i)] = mine[0]
        elif len(mine) == len(f.hunks):
            out |= {f"{i}:{j}": h for j, h in enumerate(mine)}
    return out


def preview(ws: Workspace, info: ProposalInfo) -> Preview:
    """What approving ``info`` would do to its target, in the page's words."""
    target = info.target.removeprefix("refs/heads/")
    found = queries.outcome(ws.plumbing.context, info)
    if found.kind == "fast-forward":
        return Preview("fast-forward", f"Approving fast-forwards {target} to this proposal.")
    if found.kind == "nothing":
        return Preview(
            "nothing",
            f"{target} already contains everything this brings.",
            why="there is nothing left to merge.",
        )
    if found.kind == "merge":
        return Preview(
            "merge", f"{target} has moved on: approving makes a merge commit on {target}."
        )
    return Preview(
        "conflict",
        f"Cannot approve: {found.text}.",
        found.paths,
        why=f"{target} changed the same lines since. Ask the agent to redo the change on "
        f"the current {target} (or merge it by hand with git), then reject this one.",
    )


def head(ws: Workspace, ref: str) -> dict[str, str]:
    """Where ``ref`` points now, as ``git log -1 --oneline`` would say."""
    commit, summary = queries.head(ws.plumbing.context, ref)
    return {"branch": ref.removeprefix("refs/heads/"), "commit": commit, "summary": summary}


def identity(ws: Workspace) -> str:
    """``Name <email>`` from git config, or ``""`` when the repository has none configured."""
    return queries.person(ws.plumbing.context)
