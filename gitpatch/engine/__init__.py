"""The engine: apply a Proposal to a snapshot of file contents, all or nothing. Pure, no I/O.

``apply(proposal, snapshot)`` reads only the paths the proposal names (``in`` and ``get`` on the
snapshot, which may be lazy) and returns a ``Changeset``, or raises a ``GitpatchError`` and
returns nothing: no file is half-edited because nothing is written here at all.

Semantics per language:

- ``search_replace``: every block is located in the ORIGINAL content and must match exactly one
  place (matcher profile ``patch``); blocks may not overlap; pieces of a block split by ``...``
  must match in order. Non-exact matches are re-indented to the file.
- ``apply_patch`` and ``unified_diff``: hunks in order, each below the previous one (profile
  ``apply_patch``); context lines stay as the file has them; a hunk with no old lines goes below
  its anchor, or at the end of the file; a hunk whose leading context repeats the previous
  hunk's trailing context is trimmed rather than refused. Add needs a new path, Delete an
  existing file, a move a free destination.
- ``edits`` (patch_resource): edits in order, each on the previous result; see
  ``gitpatch.engine.text_edits``.

Everywhere: BOM, line endings and the final-newline state are kept, and an update that leaves
its file as it was is refused with ``no_change``.

Modules: ``lines`` (placing and rendering lines, blank lines the old text left out included;
SEARCH/REPLACE), ``hunks`` (apply_patch and unified-diff hunks), ``text_edits``
(patch_resource), ``elision`` (indented ``...`` lines), ``applied`` (noticing an edit
already applied).

The engine does not parse text (that is ``gitpatch.formats``), does not search (it asks
``gitpatch.match.seek``), and never touches git, files or the working tree: it has nothing to
write with.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from gitpatch.core.budget import current
from gitpatch.core.model import (
    AddFile,
    Changeset,
    DeleteFile,
    Edit,
    EditReport,
    FileChange,
    FileOp,
    Format,
    Hunk,
    Proposal,
    SearchReplace,
    UpdateFile,
    WriteFile,
)
from gitpatch.core.paths import normalize_proposal
from gitpatch.core.text import Document, encode_utf8
from gitpatch.engine.byte_edits import replace_on_bytes
from gitpatch.engine.hunks import final_newline_of, place_hunks
from gitpatch.engine.lines import assemble, place_search_replace
from gitpatch.engine.text_edits import apply_text_edits
from gitpatch.engine.weight import heavy_files
from gitpatch.errors import (
    EmptyEdits,
    InternalError,
    InvalidPatch,
    NoChange,
    ResourceExists,
    ResourceNotFound,
)

__all__ = ["apply", "apply_here"]

_HUNK_FORMATS = ("apply_patch", "unified_diff")


def apply(proposal: Proposal, snapshot: Mapping[str, bytes]) -> Changeset:
    """Apply every operation of ``proposal`` to ``snapshot``; all succeed or an error is raised.

    ``snapshot`` maps repository-relative paths to file bytes (a missing key: no such file).
    A move is one ``FileChange`` at the destination whose ``source`` is the old path.

    Under a budget that can send work elsewhere (``Budget``'s ``offload``: the hosted
    service's worker processes), heavy work (``weight.heavy_files``) is sent there; the
    result, or the error, is the same either way.
    """
    budget = current()
    if budget is not None and budget.offload is not None:
        files = heavy_files(proposal, snapshot)
        if files is not None:
            changeset: Changeset = budget.offload(apply_here, proposal, files)
            return changeset
    return apply_here(proposal, snapshot)


def apply_here(proposal: Proposal, snapshot: Mapping[str, bytes]) -> Changeset:
    """``apply`` in this thread, whatever the budget says."""
    operations = normalize_proposal(proposal).operations
    if proposal.format == "search_replace":
        operations = _merge_updates(operations)
    _check_distinct(operations)
    gone = _leaving(operations)
    changes: list[FileChange] = []
    reports: list[EditReport] = []
    for op in operations:
        if isinstance(op, AddFile):
            changes.append(_add(op, proposal.format, snapshot, gone))
        elif isinstance(op, DeleteFile):
            changes.append(_delete(op, snapshot))
        elif isinstance(op, WriteFile):
            changes.append(_write(op, snapshot, gone))
        else:
            change, done = _update(op, proposal.format, snapshot, gone)
            changes.append(change)
            reports.extend(done)
    return Changeset(tuple(changes), tuple(reports))


def _merge_updates(operations: Sequence[FileOp]) -> tuple[FileOp, ...]:
    """SEARCH/REPLACE blocks for one file may come in several groups: one update per path."""
    merged: dict[str, tuple[int, UpdateFile]] = {}
    out: list[FileOp] = []
    for op in operations:
        if isinstance(op, UpdateFile) and op.move_to is None:
            if op.path in merged:
                pos, first = merged[op.path]
                combined = UpdateFile(op.path, first.edits + _renumbered(first.edits, op.edits))
                out[pos] = combined
                merged[op.path] = (pos, combined)
                continue
            merged[op.path] = (len(out), op)
        out.append(op)
    return tuple(out)


def _renumbered(first: Sequence[Edit], more: Sequence[Edit]) -> tuple[Edit, ...]:
    """``more`` with block numbers moved past ``first``'s if they collide (elision groups)."""
    taken = {e.block for e in first if isinstance(e, SearchReplace)}
    if not any(isinstance(e, SearchReplace) and e.block in taken for e in more):
        return tuple(more)
    top = 1 + max(taken, default=0)
    return tuple(
        replace(e, block=e.block + top) if isinstance(e, SearchReplace) else e for e in more
    )


def _check_distinct(operations: Sequence[FileOp]) -> None:
    """Refuse two operations on one path (a move's destination counts as its path too)."""
    seen: dict[str, int] = {}
    for number, op in enumerate(operations, 1):
        paths = [op.path]
        if isinstance(op, UpdateFile) and op.move_to is not None:
            if op.move_to == op.path:
                raise InvalidPatch(
                    f"operation {number}: {op.path} is moved onto itself",
                    hint="Drop the 'Move to' line, or name a different destination.",
                    details={"path": op.path},
                )
            paths.append(op.move_to)
        for path in paths:
            if path in seen:
                raise InvalidPatch(
                    f"operations {seen[path]} and {number} both touch {path}",
                    hint="Give each file at most one operation per patch: put all hunks for a "
                    "file under one 'Update File', and do not add, delete or move it twice.",
                    details={"path": path, "operations": [seen[path], number]},
                )
            seen[path] = number


def _leaving(operations: Iterable[FileOp]) -> frozenset[str]:
    """Paths this proposal deletes or moves away: they no longer block new files below them."""
    out: set[str] = set()
    for op in operations:
        if isinstance(op, DeleteFile) or (isinstance(op, UpdateFile) and op.move_to):
            out.add(op.path)
    return frozenset(out)


_EXISTS_HINT = {
    "add": "To change an existing file, update it with its actual old contents; to replace it "
    "whole, delete it in a separate call first.",
    "move": "Choose a destination that does not exist yet, or delete the file there in a "
    "separate call first.",
}


def _check_free(
    path: str, snapshot: Mapping[str, bytes], gone: frozenset[str], what: str, kind: str
) -> None:
    """A new file may not replace an existing one, nor sit below a path that is a file."""
    if path in snapshot:
        raise ResourceExists(
            f"{what} {path}: {path} already exists",
            hint=_EXISTS_HINT[kind],
            details={"path": path},
        )
    parent = posixpath.dirname(path)
    while parent:
        if parent in snapshot and parent not in gone:
            raise ResourceExists(
                f"{what} {path}: {parent} is a file, so it cannot be a directory",
                hint="Choose a path whose parent directories are not existing files.",
                details={"path": path, "blocking": parent},
            )
        parent = posixpath.dirname(parent)


_MISSING_HINT = {
    "cannot update": "Check the path (it is relative to the repository root) against the "
    "repository's files; to create a new file, add it instead of updating it.",
    "cannot delete": "Check the path (it is relative to the repository root); if the file is "
    "already gone, leave the Delete out.",
    "cannot move": "Check the source path (it is relative to the repository root); if the file "
    "was already moved, leave the move out.",
}


def _missing(path: str, what: str) -> ResourceNotFound:
    return ResourceNotFound(
        f"{what} {path}: no such file",
        hint=_MISSING_HINT[what],
        details={"path": path},
    )


def _add(
    op: AddFile, fmt: Format, snapshot: Mapping[str, bytes], gone: frozenset[str]
) -> FileChange:
    _check_free(op.path, snapshot, gone, "cannot add", "add")
    if not op.content and fmt == "apply_patch":
        raise InvalidPatch(
            f"Add File {op.path} has no content",
            hint="An Add needs at least one '+' line; this grammar does not create empty files.",
            details={"path": op.path},
        )
    return FileChange(op.path, encode_utf8(op.content, op.path), mode=op.mode)


def _delete(op: DeleteFile, snapshot: Mapping[str, bytes]) -> FileChange:
    if op.path not in snapshot:
        raise _missing(op.path, "cannot delete")
    return FileChange(op.path, None)


def _write(op: WriteFile, snapshot: Mapping[str, bytes], gone: frozenset[str]) -> FileChange:
    if op.create:
        _check_free(op.path, snapshot, gone, "cannot create", "add")
    elif op.path not in snapshot:
        raise _missing(op.path, "cannot update")
    elif snapshot[op.path] == op.content:
        raise NoChange(
            f"{op.path}: the new content is exactly what the file already has",
            hint="Nothing was changed; there is nothing left to do.",
            details={"path": op.path},
        )
    return FileChange(op.path, bytes(op.content))


def _update(
    op: UpdateFile, fmt: Format, snapshot: Mapping[str, bytes], gone: frozenset[str]
) -> tuple[FileChange, list[EditReport]]:
    data = snapshot.get(op.path)
    if data is None:
        raise _missing(op.path, "cannot move" if op.move_to else "cannot update")
    if op.move_to is not None:
        _check_free(op.move_to, snapshot, gone, f"cannot move {op.path} to", "move")
    if not op.edits:
        if op.move_to is not None:
            # a pure rename keeps the bytes as they are, even of a binary file
            return FileChange(op.move_to, data, op.path, op.mode), []
        if op.mode is not None:  # a mode change alone (``chmod +x`` in a diff)
            return FileChange(op.path, data, mode=op.mode), []
        if fmt == "patch_resource":
            raise EmptyEdits(f"{op.path}: no edits given", hint="Pass at least one edit.")
        raise NoChange(
            f"{op.path}: the update has no changes",
            hint="Give at least one hunk that changes the file, or leave the file out.",
            details={"path": op.path},
        )
    fast = replace_on_bytes(op.path, data, op.edits) if fmt == "patch_resource" else None
    content, reports = fast or _edit(op, fmt, Document.from_bytes(data, op.path))
    if content == data and op.move_to is None and op.mode is None:
        raise NoChange(
            f"{op.path}: the edits leave the file exactly as it is",
            hint="Nothing was changed: the new text gives what the file already has. Make the "
            "new text differ from the old; if this change was applied before, there is nothing "
            "left to do.",
            details={"path": op.path},
        )
    if op.move_to is not None:
        return FileChange(op.move_to, content, op.path, op.mode), reports
    return FileChange(op.path, content, mode=op.mode), reports


def _edit(op: UpdateFile, fmt: Format, doc: Document) -> tuple[bytes, list[EditReport]]:
    """Dispatch an update's edits to the rules of its language."""
    if fmt == "patch_resource":
        return apply_text_edits(op.path, doc, op.edits)
    final: bool | None = None
    if fmt == "search_replace":
        blocks = [(e.block, i, e) for i, e in enumerate(op.edits) if isinstance(e, SearchReplace)]
        _same_kind(op, len(blocks), "SEARCH/REPLACE blocks")
        placements = place_search_replace(op.path, doc, blocks)
    elif fmt in _HUNK_FORMATS:
        hunks = [e for e in op.edits if isinstance(e, Hunk)]
        _same_kind(op, len(hunks), "hunks")
        placements = place_hunks(op.path, doc, hunks, fmt)
        final = final_newline_of(hunks)
    else:
        raise InternalError(f"unknown proposal format {fmt!r}")
    reports = [_report(op.path, p.index, p.start, p.end, p.level) for p in placements]
    reports.sort(key=lambda r: r.index)
    return assemble(doc, placements, op.path, final), reports


def _same_kind(op: UpdateFile, count: int, what: str) -> None:
    if count != len(op.edits):
        raise InternalError(f"{op.path}: an update mixes {what} with other kinds of edits")


def _report(path: str, index: int, start: int, end: int, level: Any) -> EditReport:
    """1-based inclusive lines; an insertion reports the line it went after, twice."""
    if start == end:
        return EditReport(path, index, start, start, str(level))
    return EditReport(path, index, start + 1, end, str(level))
