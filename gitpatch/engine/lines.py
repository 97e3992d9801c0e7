"""Line-based edits for the engine: placing and rendering lines; SEARCH/REPLACE blocks.

SEARCH/REPLACE blocks and hunks (placed in ``gitpatch.engine.hunks``) both end up as
*placements*: a range of the ORIGINAL document's lines and what goes there. A block is turned
into hunk lines (context, removed, added) by diffing its SEARCH against its REPLACE, so both
languages share one renderer, and that renderer keeps every context line as the FILE spells it:
a model that dropped trailing spaces or straightened a quote in a line it did not mean to change
must not rewrite that line.

Blank lines the old text left out (the ``blank_lines`` level) are placed here too, by the
renderer's blank-line rules (the section at the end): they stay where they are, and where the
agent adds lines right at such a blank line, ``placed_gap`` places them only when the new text
or the indentation makes clear whether they go above or below it (the file's blank run is never
doubled by the agent's own), and otherwise refuses with ``MatchAmbiguous`` rather than guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, NamedTuple

from gitpatch.core.model import HunkLine, SearchReplace
from gitpatch.core.text import Document
from gitpatch.engine.applied import lines_applied_at, note_applied
from gitpatch.engine.elision import has_indented_elision, split_indented_elision
from gitpatch.errors import (
    EditOverlap,
    GitpatchError,
    InvalidPatch,
    MatchAmbiguous,
    MatchNotFound,
    error_for_code,
)
from gitpatch.match import Match, normalize_punctuation, reindent, seek

__all__ = [
    "Placement",
    "assemble",
    "near",
    "relabel",
    "render",
    "place_search_replace",
]

#: A new line and its terminator; ``None`` means "the file's dominant line ending".
NewLine = tuple[str, str | None]
#: A rendered line: text, terminator, and its origin (" " context, "+" added, "extra" a file line
#: the pattern did not mention).
Out = tuple[str, str | None, str]


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


def render(
    ops: Sequence[HunkLine], doc: Document, match: Match | None, start: int, end: int
) -> tuple[NewLine, ...]:
    """What the window ``[start, end)`` becomes under hunk lines ``ops``.

    Context lines come from the file (with their own endings), removed lines go, added lines are
    re-indented to the file when the match was not exact. A file line the pattern did not
    mention (a blank line at the ``blank_lines`` level) stays, unless it lies inside a run of
    removed lines: then the agent removed everything around it. Where lines are added at such a
    blank line, ``placed_gap`` places them or refuses.
    """
    window = doc.lines[start:end]
    ends = doc.endings[start:end]
    old = [h.text for h in ops if h.op != "+"]
    added = [h.text for h in ops if h.op == "+"]
    if match is not None and str(match.level) != "exact" and added:
        added = list(reindent(added, match))
    pair, extra = _align(old, window, "exact" if match is None else str(match.level))
    out: list[Out] = []
    plus = iter(added)
    pending: list[Out] = []  # lines added since the last old line
    removed = 0  # old lines removed just before ``pending``
    below = blank_context_ahead(ops)
    i = 0
    for h in ops:
        if h.op == "+":
            pending.append((next(plus), None, "+"))
            continue
        spare: list[Out] = [(window[j], ends[j], "extra") for j in extra[i]]
        if h.op == "-" and removed and not pending:
            spare = []  # inside a run of removed lines: the agent removed all around it
        j = pair[i]
        kept = window[j] if h.op == " " and j is not None and h.text.strip() else None
        spot = Spot(blank_tail(out), below[i], removed, kept_above(out), kept)
        out.extend(placed_gap(spare, pending, spot, start + (extra[i] or [0])[0]))
        removed, pending = (removed + 1 if h.op == "-" else 0), []
        if h.op == " " and j is not None:
            out.append((window[j], ends[j], " "))
        i += 1
    spare = [(window[j], ends[j], "extra") for j in extra[len(old)]]
    spot = Spot(blank_tail(out), 0, removed, kept_above(out), None)
    out.extend(placed_gap(spare, pending, spot, start + (extra[len(old)] or [0])[0]))
    return dedupe_blank_runs(out)


def assemble(
    doc: Document, placements: Sequence[Placement], path: str, final_newline: bool | None = None
) -> bytes:
    """Apply placements (in document order, not overlapping) in one pass; return the bytes.

    See ``Document.replace_lines``: untouched lines keep their endings, new lines take the
    dominant one, and the final-newline state is kept unless ``final_newline`` says otherwise.
    """
    pieces = [(p.start, p.end, p.lines) for p in placements]
    return doc.replace_lines(pieces, final_newline).to_bytes(path)


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
        return seek(doc.lines, list(edit.search), start=start, profile="search_replace")
    except MatchNotFound as exc:
        if start > 0:
            try:
                before = seek(doc.lines, list(edit.search), profile="search_replace")
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
        err = relabel(exc, f"{path}: {name}", hint, path=path, source_line=edit.source_line)
        applied = lines_applied_at(doc.lines, edit.search, edit.replace)
        raise note_applied(
            MatchNotFound(err.message, err.hint, err.details), applied, "The REPLACE text"
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
        placed.extend(_place_block(path, doc, number, pieces, several))
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


def _place_block(
    path: str, doc: Document, number: int, pieces: list[tuple[int, SearchReplace]], several: bool
) -> list[tuple[Placement, str]]:
    """Place one block's pieces; indented ``...`` lines are text first, elision second.

    See ``gitpatch.engine.elision``: the elision reading is tried only when the block, read
    with its ``...`` lines as text, is not in the file (an ambiguous text match is refused as
    such). When the elision reading fails too, its error is the one reported.
    """
    try:
        return _place_pieces(path, doc, number, pieces, several)
    except MatchNotFound as literal:
        if not has_indented_elision(pieces):
            raise
        elided = split_indented_elision(pieces)
        if elided is None:
            raise _noted(literal, _NOT_ELISION) from None
    try:
        return _place_pieces(path, doc, number, elided, several)
    except GitpatchError as exc:
        raise _noted(exc, _READ_AS_ELISION) from None


_NOT_ELISION = (
    "If the indented '...' lines stand for unchanged lines you skipped, put one '...' line at "
    "the same place, with the same indentation, in SEARCH and in REPLACE."
)
_READ_AS_ELISION = (
    "The block's indented '...' lines were read as elision (unchanged lines skipped), because "
    "with them as text the block is not in the file."
)


def _noted(exc: GitpatchError, note: str) -> GitpatchError:
    """The same error with ``note`` added to its hint."""
    hint = f"{exc.hint}\n{note}" if exc.hint else note
    return error_for_code(exc.code, exc.message, hint, exc.details)


def _place_pieces(
    path: str, doc: Document, number: int, pieces: list[tuple[int, SearchReplace]], several: bool
) -> list[tuple[Placement, str]]:
    """Place the pieces of one block in order, each below the one before."""
    placed: list[tuple[Placement, str]] = []
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
        try:
            lines = render(ops, doc, m, m.start, m.end)
        except MatchAmbiguous as exc:
            raise relabel(exc, f"{path}: {name}", path=path, source_line=edit.source_line) from None
        placed.append((Placement(m.start, m.end, lines, str(m.level), index), name))
        start = m.end
    return placed


# -- blank lines the old text left out --------------------------------------------------------


def dedupe_blank_runs(out: list[Out]) -> tuple[NewLine, ...]:
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


def _blank_runs(lines: Sequence[str]) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of blank lines in ``lines``."""
    runs: list[tuple[int, int]] = []
    for k, text in enumerate(lines):
        if text.strip():
            continue
        if runs and runs[-1][1] == k:
            runs[-1] = (runs[-1][0], k + 1)
        else:
            runs.append((k, k + 1))
    return runs


class Spot(NamedTuple):
    """What surrounds the spot where lines are added: blank lines already kept just above it
    and blank context lines just below it, the old lines removed just above it, and the file
    lines kept on either side (None unless both are non-blank context)."""

    blanks_above: int
    blanks_below: int
    removed: int
    above: str | None
    below: str | None


def _gap(spare: list[Out], added: list[Out], spot: Spot) -> list[Out]:
    """Where the file's unmentioned blank lines ``spare`` go among lines ``added`` at one spot.

    The pattern left the file's blank line(s) out right where lines are added, so the agent's
    new text says nothing about where they belong; a guess could put them on the wrong side.
    With the blank lines around the spot, ``added`` makes up the new text there. Clear cases:

    - that text has ONE run of blank lines: it stands for the file's run, which joins it (and
      ``dedupe_blank_runs`` keeps the longer of the two);
    - it has several runs, each at least as long as the file's: every reading gives the same;
    - ``added`` has no blank line and replaces, line for line or fewer, the lines removed just
      above: the blank line(s) stay below it, as they were below the removed lines;
    - the indentation says which neighbour the added lines belong to (``_side``).

    Anything else raises ``_UnclearBlank``, which the caller turns into a refusal.
    """
    if not spare or not added:
        return added + spare
    texts = [""] * spot.blanks_above + [t for t, _, _ in added] + [""] * spot.blanks_below
    runs = _blank_runs(texts)
    if len(runs) == 1:
        at = min(max(0, runs[0][0] - spot.blanks_above), len(added))
        return added[:at] + spare + added[at:]
    if runs and all(e - s >= len(spare) for s, e in runs):
        return added
    if not runs and len(added) <= spot.removed:
        return added + spare
    side = None if runs else _side(added, spot.above, spot.below)
    if side == "above":
        return added + spare
    if side == "below":
        return spare + added
    raise _UnclearBlank


def _width(line: str) -> int:
    wide = line.expandtabs(8)
    return len(wide) - len(wide.lstrip())


def _side(added: list[Out], above: str | None, below: str | None) -> str | None:
    """The neighbour that text lines added between ``above`` and ``below`` belong to, when the
    indentation says so: the file dedents from ``above`` to ``below``, and the added lines are
    deeper than ``below`` (they end the block above) or at its level (they open what follows).
    """
    if above is None or below is None or _width(above) <= _width(below):
        return None
    least = min(_width(t) for t, _, _ in added)
    if least > _width(below):
        return "above"
    return "below" if least == _width(below) else None


class _UnclearBlank(Exception):
    """Lines are added where the file has blank lines the pattern left out (see ``_gap``)."""


def blank_tail(out: Sequence[Out]) -> int:
    """How many blank lines ``out`` ends with."""
    k = len(out)
    while k and not out[k - 1][0].strip():
        k -= 1
    return len(out) - k


def kept_above(out: Sequence[Out]) -> str | None:
    """The last line of ``out`` when it is a non-blank line kept from the file."""
    return out[-1][0] if out and out[-1][2] == " " and out[-1][0].strip() else None


def blank_context_ahead(ops: Sequence[HunkLine]) -> list[int]:
    """For each old line: how many blank context lines start there (0 if it is not one)."""
    old = [h for h in ops if h.op != "+"]
    ahead = [0] * (len(old) + 1)
    for k in range(len(old) - 1, -1, -1):
        if old[k].op == " " and not old[k].text.strip():
            ahead[k] = ahead[k + 1] + 1
    return ahead


def placed_gap(spare: list[Out], added: list[Out], spot: Spot, at: int) -> list[Out]:
    """``_gap``, with its refusal as the error the agent reads (``at``: 0-based file line)."""
    try:
        return _gap(spare, added, spot)
    except _UnclearBlank:
        lines = list(range(at + 1, at + 1 + len(spare)))
        shown = f"line {at + 1}" if len(spare) == 1 else f"lines {at + 1}-{at + len(spare)}"
        raise MatchAmbiguous(
            f"the file has {len(spare)} blank line{'s' if len(spare) > 1 else ''} at {shown} "
            "that the old text leaves out, and the new text adds lines right there: it is "
            "unclear whether they go above or below the blank line"
            + ("s" if len(spare) > 1 else ""),
            hint="Include the file's blank line(s) in the old text exactly as the file has "
            "them, and put them in the new text where they belong.",
            details={"blank_lines": lines, "level": "blank_lines"},
        ) from None
