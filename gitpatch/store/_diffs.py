"""Unified diffs between two commits, at the cost of the change.

libgit2's tree-to-tree diff walks every entry of both trees (about 25 ms for a one-file change
among 100,000 files here), so the store finds the changed entries itself (``file_changes``,
which skips identical subtrees by id) and asks libgit2 only for the per-file patches. Exact
moves (same blob and mode) and moves with changes (content at least half alike, as ``git diff
-M`` finds them) are shown as renames, so a move with a one-line change reads as one line;
the text is accepted by ``git apply``.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

import pygit2

from gitpatch.store._objects import MODE_BLOB, MODE_SUBMODULE
from gitpatch.store._treediff import Side, file_changes

__all__ = [
    "FilePatch",
    "HunkText",
    "apply_hunks",
    "diff_trees",
    "file_patches",
    "split_lines",
]

_INDEX_LINE = re.compile(r"^index ([0-9a-f]+)\.\.([0-9a-f]+) 100644$", re.MULTILINE)

_Item = tuple[str, str, Side, Side]  # old path, new path, old side, new side


def _pair_moves(repo: pygit2.Repository, changes: list[tuple[str, Side, Side]]) -> list[_Item]:
    """Turn a deletion and an addition into one move: of the very same blob and mode, or (as
    ``git diff -M`` does) of content at least ``SIMILARITY`` alike."""
    gone: dict[tuple[pygit2.Oid, int], list[str]] = {}
    for path, a, b in changes:
        if a is not None and b is None:
            gone.setdefault(a, []).append(path)
    moved_from: dict[str, str] = {}
    for path, a, b in changes:
        if a is None and b is not None and gone.get(b):
            moved_from[path] = gone[b].pop(0)
    before = {path: a for path, a, b in changes if a is not None and b is None}
    moved_from |= _similar(repo, changes, moved_from, before)
    sources = set(moved_from.values())
    items: list[_Item] = []
    for path, a, b in changes:
        if path in sources and b is None:
            continue
        old_path = moved_from.get(path, path)
        side_a = before.get(old_path) if old_path != path else a
        items.append((old_path, path, side_a, b))
    return items


#: How alike (0-1, lines in common) a deleted and an added file must be to show as a move.
SIMILARITY = 0.5
#: Candidate pairs scored at most (each costs a line diff); beyond, only exact moves pair.
_MAX_PAIRS = 400
_MAX_BYTES = 1 << 20


def _similar(
    repo: pygit2.Repository,
    changes: list[tuple[str, Side, Side]],
    paired: dict[str, str],
    before: dict[str, tuple[pygit2.Oid, int]],
) -> dict[str, str]:
    """Added path -> deleted path for inexact moves, best score first (each used once)."""
    taken = set(paired.values())
    sources = [(p, side) for p, side in before.items() if p not in taken]
    targets = [(p, b) for p, a, b in changes if a is None and b is not None and p not in paired]
    if not sources or not targets or len(sources) * len(targets) > _MAX_PAIRS:
        return {}
    scored = []
    for new_path, b in targets:
        for old_path, a in sources:
            score = _likeness(repo, a, b)
            if score >= SIMILARITY:
                scored.append((score, new_path, old_path))
    out: dict[str, str] = {}
    for _score, new_path, old_path in sorted(scored, reverse=True):
        if new_path not in out and old_path not in out.values():
            out[new_path] = old_path
    return out


def _likeness(
    repo: pygit2.Repository, a: tuple[pygit2.Oid, int], b: tuple[pygit2.Oid, int]
) -> float:
    if MODE_SUBMODULE in (a[1], b[1]):
        return 0.0
    old, new = repo[a[0]], repo[b[0]]
    assert isinstance(old, pygit2.Blob) and isinstance(new, pygit2.Blob)
    if old.size > _MAX_BYTES or new.size > _MAX_BYTES or old.is_binary or new.is_binary:
        return 0.0
    one, two = old.data.splitlines(), new.data.splitlines()
    if not one or not two:
        return 0.0
    return difflib.SequenceMatcher(None, one, two, autojunk=False).ratio()


def _submodule_patch(old_path: str, new_path: str, a: Side, b: Side) -> tuple[str, int, int]:
    """A gitlink change the way git prints it: one "Subproject commit" line per side."""
    zero = "0" * 7
    lines = [f"diff --git a/{old_path} b/{new_path}"]
    if a is None and b is not None:
        lines += [f"new file mode {b[1]:o}", f"index {zero}..{str(b[0])[:7]}"]
    elif b is None and a is not None:
        lines += [f"deleted file mode {a[1]:o}", f"index {str(a[0])[:7]}..{zero}"]
    elif a is not None and b is not None:
        lines += [f"index {str(a[0])[:7]}..{str(b[0])[:7]} {b[1]:o}"]
    lines += [
        f"--- a/{old_path}" if a is not None else "--- /dev/null",
        f"+++ b/{new_path}" if b is not None else "+++ /dev/null",
        f"@@ -{'1' if a is not None else '0,0'} +{'1' if b is not None else '0,0'} @@",
    ]
    lines += [f"-Subproject commit {a[0]}"] if a is not None else []
    lines += [f"+Subproject commit {b[0]}"] if b is not None else []
    return "\n".join(lines) + "\n", int(b is not None), int(a is not None)


def _with_modes(text: str, a: Side, b: Side) -> str:
    """Fix the modes libgit2 writes for blobs it diffs without their tree entries (100644)."""
    if a is None and b is not None:
        return text.replace("new file mode 100644", f"new file mode {b[1]:o}", 1)
    if b is None and a is not None:
        return text.replace("deleted file mode 100644", f"deleted file mode {a[1]:o}", 1)
    assert a is not None and b is not None
    if a[1] == b[1]:
        return _INDEX_LINE.sub(lambda m: f"index {m[1]}..{m[2]} {a[1]:o}", text, count=1)
    head, _, rest = text.partition("\n")
    rest = _INDEX_LINE.sub(lambda m: f"index {m[1]}..{m[2]}", rest, count=1)
    return f"{head}\nold mode {a[1]:o}\nnew mode {b[1]:o}\n{rest}"


def _blob(repo: pygit2.Repository, side: Side) -> pygit2.Blob | None:
    if side is None:
        return None
    blob = repo[side[0]]
    assert isinstance(blob, pygit2.Blob)
    return blob


def _file_patch(repo: pygit2.Repository, item: _Item) -> tuple[str, int, int]:
    old_path, new_path, a, b = item
    if (a is not None and a[1] == MODE_SUBMODULE) or (b is not None and b[1] == MODE_SUBMODULE):
        return _submodule_patch(old_path, new_path, a, b)
    if a is not None and a == b:
        return (
            (
                f"diff --git a/{old_path} b/{new_path}\nsimilarity index 100%\n"
                f"rename from {old_path}\nrename to {new_path}\n"
            ),
            0,
            0,
        )
    old_blob, new_blob = _blob(repo, a), _blob(repo, b)
    patch = pygit2.Patch.create_from(old_blob, new_blob, old_as_path=old_path, new_as_path=new_path)
    _context, added, removed = patch.line_stats
    text = patch.text or ""
    if old_path != new_path and text:
        head, _, rest = text.partition("\n")
        score = round(100 * _likeness(repo, a, b)) if a is not None and b is not None else 0
        text = (
            f"{head}\nsimilarity index {score}%\nrename from {old_path}\n"
            f"rename to {new_path}\n{rest}"
        )
    if not text and a is not None and b is not None:  # same bytes, new mode
        return (
            (f"diff --git a/{old_path} b/{new_path}\nold mode {a[1]:o}\nnew mode {b[1]:o}\n"),
            0,
            0,
        )
    modes_differ = (a is None or a[1] != MODE_BLOB) or (b is None or b[1] != MODE_BLOB)
    return (_with_modes(text, a, b) if modes_differ else text), added, removed


def diff_trees(
    repo: pygit2.Repository, old: pygit2.Oid | None, new: pygit2.Oid | None
) -> tuple[str, dict[str, int]]:
    """Patch text from tree ``old`` to tree ``new`` (None: empty) and its stats."""
    items = _pair_moves(repo, list(file_changes(repo, old, new)))
    items.sort(key=lambda item: item[1])
    pieces: list[str] = []
    insertions = deletions = 0
    for item in items:
        text, added, removed = _file_patch(repo, item)
        pieces.append(text)
        insertions += added
        deletions += removed
    stats = {"files": len(items), "insertions": insertions, "deletions": deletions}
    return "".join(pieces), stats


@dataclass(frozen=True)
class HunkText:
    """One hunk of a text file's patch: its ``@@`` ranges and header, and its lines as
    (origin, bytes with the line's own terminator), origin one of ``' '``, ``'-'``, ``'+'``."""

    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    header: str
    lines: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class FilePatch:
    """One file of a diff: both paths and sides (blob id and mode, None when absent), its
    patch text as ``diff_trees`` prints it, and its hunks; ``hunks`` is empty when the file
    can only be taken whole (an add, a delete, a move, a mode change, binary content, a
    submodule, or a patch whose hunks would not rebuild the new content byte for byte)."""

    old_path: str
    new_path: str
    old: Side
    new: Side
    text: str
    hunks: tuple[HunkText, ...]


#: Modes whose content is split into hunks (regular and executable files).
_TEXTUAL = (MODE_BLOB, 0o100755)


def split_lines(data: bytes) -> list[bytes]:
    """``data`` cut after each ``\\n`` (as git counts lines; a lone CR is no line end)."""
    if b"\r" not in data:
        return data.splitlines(keepends=True)  # the same cuts, in C
    out = data.split(b"\n")
    lines = [line + b"\n" for line in out[:-1]]
    return lines + ([out[-1]] if out[-1] else [])


def _hunks_of(repo: pygit2.Repository, item: _Item) -> tuple[HunkText, ...]:
    old_path, new_path, a, b = item
    if a is None or b is None or old_path != new_path or a[1] != b[1] or a[1] not in _TEXTUAL:
        return ()
    old_blob, new_blob = _blob(repo, a), _blob(repo, b)
    assert old_blob is not None and new_blob is not None
    if old_blob.is_binary or new_blob.is_binary:
        return ()
    patch = pygit2.Patch.create_from(old_blob, new_blob)
    hunks = tuple(
        HunkText(
            h.old_start,
            h.old_lines,
            h.new_start,
            h.new_lines,
            h.header.rstrip("\n"),
            tuple((line.origin, line.raw_content) for line in h.lines if line.origin in " -+"),
        )
        for h in patch.hunks
    )
    old = split_lines(old_blob.data)
    # a patch whose hunks do not rebuild the new bytes exactly is offered whole only
    return hunks if apply_hunks(old, hunks) == new_blob.data else ()


def apply_hunks(old: list[bytes], hunks: tuple[HunkText, ...] | list[HunkText]) -> bytes:
    """The lines ``old`` with ``hunks`` (of a patch made from them) applied, as bytes."""
    out: list[bytes] = []
    at = 0
    for hunk in sorted(hunks, key=lambda h: h.old_start):
        cut = hunk.old_start if hunk.old_lines == 0 else hunk.old_start - 1
        out.extend(old[at:cut])
        out.extend(data for origin, data in hunk.lines if origin in " +")
        at = cut + hunk.old_lines
    out.extend(old[at:])
    return b"".join(out)


def file_patches(
    repo: pygit2.Repository, old: pygit2.Oid | None, new: pygit2.Oid | None
) -> list[FilePatch]:
    """Tree ``old`` to tree ``new`` file by file, in ``diff_trees``'s order, with hunks."""
    items = _pair_moves(repo, list(file_changes(repo, old, new)))
    items.sort(key=lambda item: item[1])
    return [
        FilePatch(
            item[0], item[1], item[2], item[3], _file_patch(repo, item)[0], _hunks_of(repo, item)
        )
        for item in items
    ]
