"""A proposal's hunks: stable ids, selections, and the trees a partial verdict makes.

A hunk is one ``@@`` block of a text file's diff from the proposal's base to its commit (git's
three lines of context), or a whole file where lines cannot be told apart: an add, a delete, a
move, a mode change, binary content, a submodule. Each has two names, both derived from the
diff alone, so ``show``, the page, MCP and the CLI number it alike on every run:

- ``PATH:N``: the N-th hunk of that file (``src/a.py:2``), the id results carry;
- ``N``: its number across the proposal, counting file by file in the diff's order (``2``).

The numbers outlive partial verdicts and a person's edits: each new version of a proposal
keeps in its note (``hunk_ids``) the names of its hunks, so once hunk 1 is approved the rest are
still 2 and 3. A file whose hunk count a person's edit changed gets fresh numbers after the
highest ever given. Decided hunks stay listed from the note's ``verdicts``.

This module reads and builds objects; it moves no ref (``partial`` and ``amend`` publish).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pygit2

from gitpatch.core.model import FileChange
from gitpatch.errors import InvalidArguments
from gitpatch.review._lookup import first_parent
from gitpatch.store import FilePatch, HunkText, Store, apply_hunks, split_lines
from gitpatch.workspace.results import Amendment, HunkInfo, ProposalDetail

__all__ = [
    "Hunk",
    "described",
    "detail",
    "diff_text",
    "hunks_of",
    "ids_note",
    "line_at",
    "notice_lines",
    "select",
    "told_state",
    "tree_with",
]

_MODE_SUBMODULE = 0o160000

Kind = Literal["change", "add", "delete", "move", "file"]


@dataclass(frozen=True)
class Hunk:
    """One hunk of a proposal: its names, its file's patch, and its lines (None: whole file)."""

    path: str
    n: int
    number: int
    patch: FilePatch
    text: HunkText | None

    @property
    def id(self) -> str:
        """``PATH:N``."""
        return f"{self.path}:{self.n}"

    @property
    def kind(self) -> Kind:
        """``change`` for lines of a text file, else how the whole file changes."""
        if self.text is not None:
            return "change"
        if self.patch.old is None:
            return "add"
        if self.patch.new is None:
            return "delete"
        return "move" if self.patch.old_path != self.patch.new_path else "file"


def _fresh(patches: Sequence[FilePatch]) -> list[tuple[FilePatch, HunkText | None]]:
    return [
        (patch, text) for patch in patches for text in (patch.hunks or (None,))
    ]  # a file without hunks is one hunk


def hunks_of(
    store: Store, base: pygit2.Oid | None, tip: pygit2.Oid, note: Mapping[str, Any]
) -> list[Hunk]:
    """The open hunks of the proposal ``base``..``tip`` whose note is ``note``, in diff order."""
    pieces = _fresh(store.file_patches(base, tip))
    remembered = _remembered(note)
    by_path: dict[str, list[tuple[int, int]]] = {}
    for path, n, number in remembered:
        by_path.setdefault(path, []).append((n, number))
    counts: dict[str, int] = {}
    for patch, _text in pieces:
        counts[patch.new_path] = counts.get(patch.new_path, 0) + 1
    highest = max([number for _p, _n, number in remembered] + _decided_numbers(note) + [0])
    top_n: dict[str, int] = {}
    for path, n, _number in remembered:
        top_n[path] = max(top_n.get(path, 0), n)
    for item in note.get("verdicts") or []:
        if isinstance(item, dict):
            path = str(item.get("path") or "")
            top_n[path] = max(top_n.get(path, 0), int(item.get("n") or 0))
    out: list[Hunk] = []
    seen: dict[str, int] = {}
    for patch, text in pieces:
        path = patch.new_path
        at = seen.get(path, 0)
        seen[path] = at + 1
        kept = by_path.get(path, [])
        if remembered and len(kept) == counts[path]:
            n, number = kept[at]
        elif remembered:
            top_n[path] = top_n.get(path, 0) + 1
            highest += 1
            n, number = top_n[path], highest
        else:
            n, number = at + 1, len(out) + 1
        out.append(Hunk(path, n, number, patch, text))
    return out


def _remembered(note: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    out = []
    for item in note.get("hunk_ids") or []:
        if isinstance(item, list) and len(item) == 3:
            out.append((str(item[0]), int(item[1]), int(item[2])))
    return out


def _decided_numbers(note: Mapping[str, Any]) -> list[int]:
    return [int(v.get("number") or 0) for v in note.get("verdicts") or [] if isinstance(v, dict)]


def ids_note(hunks: Iterable[Hunk]) -> list[list[Any]]:
    """The ``hunk_ids`` a new version's note keeps for ``hunks`` (its hunks, in diff order)."""
    return [[h.path, h.n, h.number] for h in hunks]


_TOKEN = re.compile(r"[,\s]+")


def select(hunks: Sequence[Hunk], spec: str | Sequence[str], pid: str) -> list[Hunk]:
    """The hunks ``spec`` names (``1,3``, ``a.py:2``, or a path for all of that file's), in
    diff order; ``invalid_arguments`` for a name that is not an open hunk."""
    tokens = [t for t in _TOKEN.split(spec if isinstance(spec, str) else ",".join(spec)) if t]
    if not tokens:
        raise InvalidArguments(
            "no hunks named", hint=f"Name hunks as `gitpatch show {pid}` lists them: 1,3 or a.py:2."
        )
    chosen: set[int] = set()
    for token in tokens:
        found = _named(hunks, token)
        if not found:
            listed = ", ".join(f"{h.number} ({h.id})" for h in hunks) or "none"
            raise InvalidArguments(
                f"proposal {pid} has no open hunk {token!r}",
                hint=f"Its open hunks: {listed}. Decided hunks cannot be decided again; see "
                f"`gitpatch show {pid}`.",
                details={"id": pid, "hunk": token},
            )
        chosen.update(h.number for h in found)
    return [h for h in hunks if h.number in chosen]


def _named(hunks: Sequence[Hunk], token: str) -> list[Hunk]:
    if token.isdigit():
        return [h for h in hunks if h.number == int(token)]
    path, sep, n = token.rpartition(":")
    if sep and n.isdigit():
        return [h for h in hunks if h.path == path and h.n == int(n)]
    return [h for h in hunks if h.path == token]


def tree_with(store: Store, base: pygit2.Oid | None, chosen: Sequence[Hunk]) -> pygit2.Oid:
    """The tree of commit ``base`` with only the ``chosen`` hunks applied."""
    changes: list[FileChange] = []
    by_file: dict[str, list[Hunk]] = {}
    for hunk in chosen:
        by_file.setdefault(hunk.path, []).append(hunk)
    for path, picked in by_file.items():
        patch = picked[0].patch
        if picked[0].text is None:
            changes.extend(_whole(store, patch))
            continue
        old = store.blob_data(patch.old[0], path) if patch.old is not None else b""
        texts = [h.text for h in picked if h.text is not None]
        changes.append(FileChange(path, apply_hunks(split_lines(old), texts)))
    return store.build_tree(base, changes)


def _whole(store: Store, patch: FilePatch) -> list[FileChange]:
    """The changes taking ``patch``'s file whole."""
    out: list[FileChange] = []
    if patch.old is not None and (patch.new is None or patch.old_path != patch.new_path):
        out.append(FileChange(patch.old_path, None))
    if patch.new is not None:
        if patch.new[1] == _MODE_SUBMODULE:
            raise InvalidArguments(
                f"{patch.new_path} is a submodule: it can only be approved with the whole proposal",
                hint="Approve or reject the proposal as a whole (without --hunks).",
                details={"path": patch.new_path},
            )
        mode = None if patch.old is not None and patch.old[1] == patch.new[1] else patch.new[1]
        out.append(
            FileChange(patch.new_path, store.blob_data(patch.new[0], patch.new_path), mode=mode)
        )
    return out


def diff_text(hunk: Hunk) -> str:
    """The hunk as unified-diff text: its file's header lines, then its ``@@`` block."""
    if hunk.text is None:
        return hunk.patch.text
    head = f"--- a/{hunk.patch.old_path}\n+++ b/{hunk.path}\n{hunk.text.header}\n"
    return head + "".join(_lines(hunk.text, True))


def _lines(text: HunkText, ends: bool = False) -> list[str]:
    out = []
    for origin, data in text.lines:
        line = origin + data.decode("utf-8", "replace")
        out.append(line if ends else line.rstrip("\n"))
    if out and ends and not out[-1].endswith("\n"):
        out[-1] += "\n\\ No newline at end of file\n"
    return out


def _info(hunk: Hunk, verdict: str = "open") -> HunkInfo:
    text = hunk.text
    lines = _lines(text) if text is not None else hunk.patch.text.splitlines()
    return HunkInfo(
        id=hunk.id,
        number=hunk.number,
        path=hunk.path,
        old_path=hunk.patch.old_path if hunk.patch.old_path != hunk.path else "",
        kind=hunk.kind,
        header=text.header if text is not None else "",
        old_start=text.old_start if text is not None else 0,
        old_lines=text.old_lines if text is not None else 0,
        new_start=text.new_start if text is not None else 0,
        new_lines=text.new_lines if text is not None else 0,
        lines=lines,
        verdict=verdict,
    )


def verdict_record(
    hunk: Hunk, verdict: str, by: str, at: str, reason: str = "", landed_as: str = ""
) -> dict[str, Any]:
    """What a proposal's note keeps of one decided hunk (``verdicts``)."""
    info = _info(hunk)
    return {
        "hunk": hunk.id,
        "path": hunk.path,
        "n": hunk.n,
        "number": hunk.number,
        "kind": info.kind,
        "header": info.header,
        "lines": info.lines,
        "verdict": verdict,
        "by": by,
        "at": at,
        "reason": reason,
        **({"landed_as": landed_as} if landed_as else {}),
    }


def described(
    store: Store,
    base: pygit2.Oid | None,
    tip: pygit2.Oid,
    note: Mapping[str, Any],
    status: str,
) -> list[HunkInfo]:
    """Every hunk of a proposal for ``show``: the decided ones (from its note) and the rest,
    open while the proposal is, else with the proposal's own verdict."""
    out: list[HunkInfo] = []
    for item in note.get("verdicts") or []:
        if not isinstance(item, dict):
            continue
        out.append(
            HunkInfo(
                id=str(item.get("hunk") or ""),
                number=int(item.get("number") or 0),
                path=str(item.get("path") or ""),
                kind=item.get("kind") or "change",
                header=str(item.get("header") or ""),
                lines=[str(line) for line in item.get("lines") or []],
                verdict=str(item.get("verdict") or ""),
                by=str(item.get("by") or ""),
                at=str(item.get("at") or ""),
                reason=str(item.get("reason") or ""),
            )
        )
    verdict = "open" if status in ("proposed", "applied") else status
    by = str(note.get("approved_by") or note.get("rejected_by") or note.get("decided_by") or "")
    at = str(note.get("approved_at") or note.get("rejected_at") or note.get("decided_at") or "")
    reason = str(note.get("reason") or "") if verdict != "open" else ""
    for hunk in hunks_of(store, base, tip, note):
        info = _info(hunk, verdict)
        if verdict != "open":
            info = info.model_copy(update={"by": by, "at": at, "reason": reason})
        out.append(info)
    return sorted(out, key=lambda h: h.number)


def line_at(store: Store, tip: pygit2.Oid, at: str, pid: str) -> dict[str, Any]:
    """``{path, line, line_text}`` for ``PATH:LINE`` in the proposal version ``tip``;
    ``invalid_arguments`` when the file or line is not there."""
    path, sep, number = at.strip().rpartition(":") if isinstance(at, str) else ("", "", "")
    data = store.read(tip, path) if sep and path and number.isdigit() else None
    lines = split_lines(data) if data is not None else []
    if data is None or not 1 <= int(number) <= len(lines):
        files = ", ".join(store.changed_paths(first_parent(store, tip), tip)) or "none"
        raise InvalidArguments(
            f"--at {at!r} names no line of proposal {pid}",
            hint=f"Pass PATH:LINE, a line of the proposal's version of a file (it changes "
            f"{files}); see `gitpatch show {pid}` for line numbers.",
            details={"id": pid, "at": at},
        )
    text = lines[int(number) - 1].decode("utf-8", "replace").rstrip("\r\n")
    return {"path": path, "line": int(number), "line_text": text}


def detail(store: Store, shown: ProposalDetail, note: Mapping[str, Any]) -> dict[str, Any]:
    """``hunks`` and ``amendments`` for ``show``'s ``ProposalDetail`` of one proposal (a
    session's whole diff is numbered afresh)."""
    info = shown.info
    own = note if note.get("id") == info.id else {}
    base = pygit2.Oid(hex=info.base) if info.base else None
    listed = described(store, base, pygit2.Oid(hex=info.commit), own, info.status)
    edits = [
        Amendment.model_validate({k: item.get(k) for k in Amendment.model_fields if k in item})
        for item in own.get("amendments") or []
        if isinstance(item, dict)
    ]
    return {"hunks": listed, "amendments": edits}


# -- what the agent is told ----------------------------------------------------------------------


def told_state(note: Mapping[str, Any]) -> dict[str, int]:
    """How many hunk verdicts and edits of a proposal a session has been told of."""
    return {
        "verdicts": len(note.get("verdicts") or []),
        "amendments": len(note.get("amendments") or []),
    }


def notice_lines(
    pid: str, commit: pygit2.Oid, note: Mapping[str, Any], told: Mapping[str, Any]
) -> list[tuple[int, str]]:
    """Notice lines (rank, text) for the hunk verdicts and edits the session was not told of:
    each names the hunk with its lines and the reason, or shows the person's edit as a diff."""
    out: list[tuple[int, str]] = []
    for item in (note.get("verdicts") or [])[int(told.get("verdicts", 0)) :]:
        if not isinstance(item, dict):
            continue
        words = "approved (landed)" if item.get("verdict") == "approved" else "rejected"
        line = (
            f"Hunk {item.get('number')} ({item.get('hunk')}) of proposal {pid} was {words} by "
            f"{item.get('by')} at {item.get('at')}"
        )
        if item.get("reason"):
            line += f": {item['reason']}"
        body = "\n".join([str(item.get("header") or ""), *map(str, item.get("lines") or [])])
        if item.get("verdict") == "rejected":
            line += f". Submit a revision of these lines with revises='{pid}'"
        out.append((0, f"{line}.\n{body.strip()}"))
    for item in (note.get("amendments") or [])[int(told.get("amendments", 0)) :]:
        if not isinstance(item, dict):
            continue
        where = "; ".join(map(str, item.get("where") or [])) or ", ".join(item.get("files") or [])
        out.append(
            (
                0,
                f"{item.get('by')} edited proposal {pid} at {item.get('at')} ({where}); its "
                f"version is now {commit}. Build on the person's lines, do not revert them:\n"
                f"{str(item.get('diff') or '').rstrip()}",
            )
        )
    return out
