"""The ``patch`` and ``apply_patch`` tools (specs: patch-tool.md, apply-patch.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from gitpatch.core.model import AddFile, DeleteFile, FileOp, Proposal, SearchReplace, UpdateFile
from gitpatch.formats import apply_patch as apply_patch_format
from gitpatch.formats import search_replace
from gitpatch.tools._base import Tool
from gitpatch.tools._result import ToolResult, change_lines, done, plural, where_data
from gitpatch.tools.policy import ToolOperation
from gitpatch.tools.storage.base import Applied, Target

__all__ = ["ApplyPatchTool", "PatchTool"]


def _edit_count(proposal: Proposal) -> int:
    count = 0
    for op in proposal.operations:
        if isinstance(op, UpdateFile):
            blocks = {e.block for e in op.edits if isinstance(e, SearchReplace)}
            count += len(blocks) + sum(1 for e in op.edits if not isinstance(e, SearchReplace))
    return count


class PatchTool(Tool):
    """SEARCH/REPLACE blocks on one existing UTF-8 text file."""

    name = "patch"

    def run(
        self,
        before_write: Callable[[], None] | None = None,
        *,
        path: str,
        edits: str,
        revises: str | None = None,
    ) -> ToolResult:
        """Check MODIFY_FILE, parse ``edits``, apply them all or none; ``revises``: the id of
        the proposal this change revises."""
        target = self.resolve(path)
        checks = [(ToolOperation.MODIFY_FILE, target)]
        ask = self.authorize(*checks[0])  # before parsing anything, as the spec requires
        proposal = search_replace.parse(edits, target.key)
        proposal = dataclasses.replace(proposal, tool="patch", revises=revises)
        applied = self.submit(proposal, checks, before_write, checked=ask)
        count = _edit_count(proposal)
        first = f"{done(applied)} {plural(count, 'edit')} to {target.shown}."
        data: dict[str, Any] = {
            "path": target.shown,
            "edits": count,
            "version": applied.version,
            "id": applied.ids.get(target.key),
            "matches": [dataclasses.asdict(e) | {"path": target.shown} for e in applied.edits],
        }
        _review_data(data, applied)
        data |= where_data(applied, lambda _k: target.shown)
        lines = [first, *change_lines(applied, lambda _k: target.shown)]
        return ToolResult("\n".join(lines), ok=True, data=data)


class ApplyPatchTool(Tool):
    """The ``*** Begin Patch`` grammar: adds, updates, deletes and moves, all or none."""

    name = "apply_patch"

    def run(
        self,
        before_write: Callable[[], None] | None = None,
        *,
        patch: str,
        revises: str | None = None,
    ) -> ToolResult:
        """Parse ``patch``, check every source and destination, apply atomically;
        ``revises``: the id of the proposal this change revises."""
        proposal = apply_patch_format.parse(patch)
        targets: dict[str, Target] = {}
        checks: list[tuple[ToolOperation, Target]] = []
        ops: list[FileOp] = []
        for op in proposal.operations:
            target = targets.setdefault(op.path, self.resolve(op.path))
            if isinstance(op, AddFile):
                checks.append((ToolOperation.CREATE_FILE, target))
            elif isinstance(op, DeleteFile):
                checks.append((ToolOperation.DELETE_FILE, target))
            elif isinstance(op, UpdateFile) and op.move_to is not None:
                dest = targets.setdefault(op.move_to, self.resolve(op.move_to))
                checks += [(ToolOperation.MOVE_FILE, target), (ToolOperation.MOVE_FILE, dest)]
                op = dataclasses.replace(op, move_to=dest.key)
            else:
                checks.append((ToolOperation.MODIFY_FILE, target))
            ops.append(dataclasses.replace(op, path=target.key))
        local = dataclasses.replace(
            proposal, operations=tuple(ops), tool="apply_patch", revises=revises
        )
        applied = self.submit(local, checks, before_write)
        shown = {t.key: t.shown for t in targets.values()}
        return _patch_result(applied, lambda k: shown.get(k, k))


_VERBS = {"add": "added", "update": "modified", "delete": "deleted", "move": "moved"}


def _patch_result(applied: Applied, show: Callable[[str], str]) -> ToolResult:
    counts = {verb: 0 for verb in _VERBS.values()}
    rows: list[str] = []
    files: list[dict[str, Any]] = []
    for f in applied.files:
        verb = _VERBS[f.action]
        counts[verb] += 1
        where = show(f.path)
        if f.moved_from is not None:
            rows.append(f"  {verb:<8} {show(f.moved_from)} -> {where}")
        else:
            rows.append(f"  {verb:<8} {where}")
        files.append(
            {
                "path": where,
                "action": verb,
                "moved_from": show(f.moved_from) if f.moved_from else None,
                "id": applied.ids.get(f.path),
            }
        )
    summary = ", ".join(f"{n} {verb}" for verb, n in counts.items() if n)
    first = f"{done(applied)} patch to {plural(len(applied.files), 'file')} ({summary}):"
    data: dict[str, Any] = {"files": files, "version": applied.version} | {
        k: [x["path"] for x in files if x["action"] == k] for k in _VERBS.values()
    }
    if applied.versions:
        data["versions"] = dict(applied.versions)
    _review_data(data, applied)
    data |= where_data(applied, show)
    lines = [first, *rows, *change_lines(applied, show)]
    return ToolResult("\n".join(lines), ok=True, data=data)


def _review_data(data: dict[str, Any], applied: Applied) -> None:
    data["status"] = "proposed" if applied.review else "applied"
    if applied.proposal_id is not None:
        data["proposal_id"] = applied.proposal_id
        data["branch"] = applied.branch
