"""Line-based edits for the engine: placing and rendering lines; SEARCH/REPLACE blocks.

SEARCH/REPLACE blocks and hunks (placed in ``gitpatch.engine.hunks``) both end up as
*placements*: a range of the ORIGINAL document's lines and what goes there. A block is turned
into hunk lines (context, removed, added) by diffing its SEARCH against its REPLACE, so both
languages share one renderer, and that renderer keeps every context line as the FILE spells it:
a model that dropped trailing spaces or straightened a quote in a line it did not mean to change
must not rewrite that line.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from gitpatch.errors import (
    EditOverlap,
    GitpatchError,
    InvalidPatch,
    MatchNotFound,
    error_for_code,
)
from gitpatch.match import Match, normalize_punctuation, reindent, seek
from gitpatch.model import HunkLine, SearchReplace
from gitpatch.text import BOM, Document

__all__ = [
    "Placement",
    "assemble",
    "encode",
    "encode_text",
    "eol_of",
    "near",
    "relabel",
    "render",
    "place_search_replace",
    "text_of",
]

#: A new line and its terminator; ``None`` means "the file's dominant line ending".
NewLine = tuple[str, str | None]


@dataclass(frozen=True)
class Placement:
    """Lines ``[start, end)`` of the original document become ``lines``.

    ``index`` is the edit's position in its operation; ``level`` the matching level.
    """

    start: int
    end: int
    lines: tuple[NewLine, ...]
    level: str
    index: int


def relabel(
    exc: GitpatchError, where: str, hint: str | None = None, **details: Any
) -> GitpatchError:
    """The same error (same code) with ``where`` in front of its message and more details."""
    merged = {**exc.details, **details}
    return error_for_code(exc.code, f"{where}: {exc.message}", hint or exc.hint, merged)


def _norm(line: str) -> str:
    return " ".join(normalize_punctuation(line).split())


def _align(
    old: Sequence[str], window: Sequence[str], level: str
) -> tuple[list[int | None], list[list[int]]]:
    """Pair each expected (old) line with the window line the matcher took it for.

    Returns ``pair[i]`` (window index or None) and ``extra[i]``: window lines no old line
    claims, sitting just before old line ``i`` (``extra[len(old)]``: after the last one).
    Every level but ``blank_lines`` compares line i with line i. At ``blank_lines`` the two
    sides differ only in blank lines, which may sit anywhere, so lines are paired by content
    (equal runs only: pairing a blank line with a text line would keep or drop the wrong one).
    """
    extra: list[list[int]] = [[] for _ in range(len(old) + 1)]
    if level != "blank_lines" and len(old) == len(window):
        return list(range(len(old))), extra
    pair: list[int | None] = [None] * len(old)
    matcher = SequenceMatcher(None, [_norm(x) for x in old], [_norm(x) for x in window], False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for d in range(i2 - i1):
                pair[i1 + d] = j1 + d
        else:
            extra[i1].extend(range(j1, j2))
    return pair, extra


def _blank_runs_deduped(out: list[tuple[str, str | None, str]]) -> tuple[NewLine, ...]:
    """Drop added blank lines that a kept, unmentioned blank line of the file already provides.

    An agent that left a blank line out of its old text but kept it in its new text means the
    blank line the file has, not a second one. Within each run of blank lines, every file blank
    line the pattern did not mention cancels one added blank line.
    """
    drop: set[int] = set()
    k = 0
    while k < len(out):
        if out[k][0].strip():
            k += 1
            continue
        run_end = k
        while run_end < len(out) and not out[run_end][0].strip():
            run_end += 1
        added = [n for n in range(k, run_end) if out[n][2] == "+"]
        spare = sum(1 for n in range(k, run_end) if out[n][2] == "extra")
        drop.update(added[:spare])
        k = run_end
    return tuple((t, e) for n, (t, e, _) in enumerate(out) if n not in drop)


def render(
    ops: Sequence[HunkLine], doc: Document, match: Match | None, start: int, end: int
) -> tuple[NewLine, ...]:
    """What the window ``[start, end)`` becomes under hunk lines ``ops``.

    Context lines come from the file (with their own endings), removed lines go, added lines are
    re-indented to the file when the match was not exact. A file line the pattern did not
    mention (a blank line at the ``blank_lines`` level) stays, unless it lies inside a run of
    removed lines: then the agent removed everything around it.
    """
    window = doc.lines[start:end]
    ends = doc.endings[start:end]
    old = [h.text for h in ops if h.op != "+"]
    added = [h.text for h in ops if h.op == "+"]
    if match is not None and str(match.level) != "exact" and added:
        added = list(reindent(added, match))
    pair, extra = _align(old, window, "exact" if match is None else str(match.level))
    out: list[tuple[str, str | None, str]] = []
    plus = iter(added)
    prev: str | None = None
    i = 0
    for h in ops:
        if h.op == "+":
            out.append((next(plus), None, "+"))
            continue
        if not (h.op == "-" and prev == "-"):
            out.extend((window[j], ends[j], "extra") for j in extra[i])
        j = pair[i]
        if h.op == " " and j is not None:
            out.append((window[j], ends[j], " "))
        prev = h.op
        i += 1
    out.extend((window[j], ends[j], "extra") for j in extra[len(old)])
    return _blank_runs_deduped(out)


def eol_of(doc: Document) -> str:
    """``doc.eol``, computed with C-level counts: it runs once per edited file of any size."""
    counts = {e: doc.endings.count(e) for e in ("\n", "\r\n", "\r")}
    best = max(counts.values())
    if best == 0 or counts["\n"] == best:
        return "\n"
    return "\r\n" if counts["\r\n"] == best else "\r"


def join_lines(lines: Sequence[str], endings: Sequence[str]) -> str:
    """Lines and their endings as one string, fast when the endings are uniform (most files)."""
    n = len(endings)
    if n:
        eol = endings[0]
        if eol and endings.count(eol) == n:
            return eol.join(lines) + eol
        if eol and endings[-1] == "" and endings.count(eol) == n - 1:
            return eol.join(lines)
    return "".join(map(operator.add, lines, endings))


def text_of(doc: Document) -> str:
    """``doc.text`` without a Python-level loop over the lines."""
    return join_lines(doc.lines, doc.endings)


def encode_text(text: str, path: str) -> bytes:
    """UTF-8 bytes of new file content; text that cannot be UTF-8 is the edit's fault."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        # JSON can carry lone surrogates ("\\ud800"), which no UTF-8 file can hold
        raise InvalidPatch(
            f"{path}: the new text has a character that cannot be written as UTF-8 "
            f"({text[exc.start]!r} at offset {exc.start})",
            hint="Send the text as valid Unicode: a lone surrogate escape such as \\ud800 is "
            "not a character.",
            details={"path": path, "offset": exc.start},
        ) from None


def encode(doc: Document, text: str, path: str) -> bytes:
    """The file bytes for ``text`` with the document's BOM."""
    return (BOM if doc.bom else b"") + encode_text(text, path)


def assemble(
    doc: Document, placements: Sequence[Placement], path: str, final_newline: bool | None = None
) -> bytes:
    """Apply placements (in document order, not overlapping) in one pass; return the bytes.

    Untouched lines keep their endings, new lines take the dominant one, and the final-newline
    state of the document is kept unless ``final_newline`` says what it must become.
    """
    eol = eol_of(doc)
    lines: list[str] = []
    endings: list[str] = []
    pos = 0
    for p in placements:
        lines.extend(doc.lines[pos : p.start])
        endings.extend(doc.endings[pos : p.start])
        for text, ending in p.lines:
            lines.append(text)
            endings.append(eol if ending is None else ending)
        pos = p.end
    lines.extend(doc.lines[pos:])
    endings.extend(doc.endings[pos:])
    # Only the file's last line can lack a terminator; if lines now follow it, it needs one.
    if "" in endings[:-1]:
        endings[endings.index("")] = eol
    keep = doc.final_newline or not doc.lines
    if endings:
        final = keep if final_newline is None else final_newline
        endings[-1] = (endings[-1] or eol) if final else ""
    return encode(doc, join_lines(lines, endings), path)


def near(doc: Document, line: int, radius: int = 2) -> str:
    """A few numbered lines of the file around 0-based ``line``, for error hints."""
    lo, hi = max(0, line - radius), min(len(doc.lines), line + radius + 1)
    return "\n".join(f"{k + 1:>5}| {doc.lines[k]}" for k in range(lo, hi))


# --- SEARCH/REPLACE ---------------------------------------------------------------------------


def search_replace_ops(search: Sequence[str], replace: Sequence[str]) -> tuple[HunkLine, ...]:
    """Hunk lines for one block: lines SEARCH and REPLACE share are context, the rest -/+."""
    ops: list[HunkLine] = []
    matcher = SequenceMatcher(None, list(search), list(replace), False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            ops.extend(HunkLine(" ", t) for t in search[i1:i2])
            continue
        ops.extend(HunkLine("-", t) for t in search[i1:i2])
        ops.extend(HunkLine("+", t) for t in replace[j1:j2])
    return tuple(ops)


def _block_name(number: int, piece: int, pieces: int, edit: SearchReplace) -> str:
    where = f" (edit line {edit.source_line})" if edit.source_line else ""
    part = f", piece {piece} of {pieces} split by '...'" if pieces > 1 else ""
    return f"SEARCH block {number}{part}{where}"


_ORIGINAL_HINT = (
    "All SEARCH blocks are matched against the file as it was before this call, not against "
    "the result of earlier blocks."
)


def _seek_piece(
    doc: Document, edit: SearchReplace, start: int, name: str, path: str, several: bool
) -> Match:
    try:
        return seek(doc.lines, list(edit.search), start=start, profile="patch")
    except MatchNotFound as exc:
        if start > 0:
            try:
                before = seek(doc.lines, list(edit.search), profile="patch")
            except GitpatchError:
                before = None
            if before is not None and before.start < start:
                raise MatchNotFound(
                    f"{path}: {name}: this piece is at line {before.start + 1}, before the "
                    f"piece ahead of it (which ends at line {start})",
                    hint="Pieces split by '...' must appear in the file in the order given; "
                    "reorder them or send separate blocks.",
                    details={
                        "path": path,
                        "line": before.start + 1,
                        "source_line": edit.source_line,
                    },
                ) from None
        hint = f"{exc.hint}\n{_ORIGINAL_HINT}" if several and exc.hint else exc.hint
        raise relabel(
            exc, f"{path}: {name}", hint, path=path, source_line=edit.source_line
        ) from None
    except GitpatchError as exc:
        raise relabel(exc, f"{path}: {name}", path=path, source_line=edit.source_line) from None


def place_search_replace(
    path: str, doc: Document, edits: Sequence[tuple[Any, int, SearchReplace]]
) -> list[Placement]:
    """Locate every block in the ORIGINAL document; refuse overlaps. Returns sorted placements.

    ``edits`` holds (group key, edit index, block); pieces of one elided block share a key and
    must match in order, each searched below the one before.
    """
    groups: dict[Any, list[tuple[int, SearchReplace]]] = {}
    for key, index, edit in edits:
        groups.setdefault(key, []).append((index, edit))
    placed: list[tuple[Placement, str]] = []
    several = len(groups) > 1
    for number, pieces in enumerate(groups.values(), 1):
        start = 0
        for piece, (index, edit) in enumerate(pieces, 1):
            name = _block_name(edit.block or number, piece, len(pieces), edit)
            if not edit.search:
                raise InvalidPatch(
                    f"{path}: {name} has an empty SEARCH section",
                    hint="Copy the lines to replace from the file into the SEARCH section.",
                    details={"path": path},
                )
            m = _seek_piece(doc, edit, start, name, path, several)
            ops = search_replace_ops(edit.search, edit.replace)
            lines = render(ops, doc, m, m.start, m.end)
            placed.append((Placement(m.start, m.end, lines, str(m.level), index), name))
            start = m.end
    placed.sort(key=lambda item: item[0].start)
    for (a, a_name), (b, b_name) in zip(placed, placed[1:], strict=False):
        if b.start < a.end:
            raise EditOverlap(
                f"{path}: {b_name} covers lines {b.start + 1}-{b.end}, which overlap lines "
                f"{a.start + 1}-{a.end} covered by {a_name}",
                hint="Each SEARCH block must cover different lines of the file; merge the two "
                "blocks into one.",
                details={"path": path, "lines": [[a.start + 1, a.end], [b.start + 1, b.end]]},
            )
    return [p for p, _ in placed]
