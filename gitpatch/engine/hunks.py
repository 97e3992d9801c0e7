"""apply_patch and unified-diff hunks for the engine: placed in order, each below the last.

A hunk is searched from where the previous one ended (profile ``apply_patch``), so hunk order can
tell apart repeated blocks. A hunk of only added lines goes below its anchor or at the end of the
file, never at a bare line number. Rendering is shared with SEARCH/REPLACE
(``gitpatch.engine.lines.render``): context lines stay as the file has them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gitpatch.core.model import Format, Hunk, HunkLine
from gitpatch.core.text import Document
from gitpatch.engine.applied import lines_applied_at, note_applied
from gitpatch.engine.lines import Placement, near, relabel, render
from gitpatch.errors import GitpatchError, InvalidPatch, MatchAmbiguous, MatchNotFound
from gitpatch.match import Match, anchor_lines, seek

__all__ = ["final_newline_of", "place_hunks"]


def _hunk_name(number: int, hunk: Hunk) -> str:
    where = f" (patch line {hunk.source_line})" if hunk.source_line else ""
    return f"hunk {number}{where}"


def _find_anchor(doc: Document, anchor: str, start: int, path: str, name: str) -> int:
    """The line an anchor names at or below ``start`` (``anchor_lines``), or an error."""
    hits = anchor_lines(doc.lines, anchor, start)
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise MatchNotFound(
            f"{path}: {name}: anchor {anchor!r} is not a line (or line prefix) of the file"
            + (f" below line {start}" if start else ""),
            hint="The '@@ text' anchor must repeat a line above the change, such as the "
            "enclosing definition, exactly as the file has it.",
            details={"path": path, "anchor": anchor},
        )
    numbers = [k + 1 for k in hits]
    raise MatchAmbiguous(
        f"{path}: {name}: anchor {anchor!r} matches lines {numbers}",
        hint="Use an anchor line that occurs once, or give context lines to place the insertion.",
        details={"path": path, "anchor": anchor, "candidates": numbers},
    )


def _insertion(doc: Document, hunk: Hunk, start: int, path: str, name: str) -> int:
    """Where a hunk of only added lines goes: below its anchor, else at the end of the file.

    A line number alone cannot place it: numbers only choose among content matches, and
    appending at the end what the agent meant for line N would be a silent wrong edit.
    """
    if hunk.anchor is not None and not hunk.end_of_file:
        return _find_anchor(doc, hunk.anchor, start, path, name) + 1
    end = len(doc.lines)
    if hunk.line_hint is not None and not hunk.end_of_file and hunk.line_hint < end:
        raise InvalidPatch(
            f"{path}: {name} only adds lines and names line {hunk.line_hint}, but a line number "
            f"cannot place lines on its own (the file has {end} lines)",
            hint="Include an unchanged line (' ' prefix) next to the added lines, or an anchor "
            f"'@@ text' naming a line above them. Near line {hunk.line_hint} the file has:\n"
            + near(doc, hunk.line_hint - 1),
            details={"path": path, "line_hint": hunk.line_hint},
        )
    return end


def _seek_hunk(
    doc: Document, hunk: Hunk, start: int, profile: Format, path: str, name: str
) -> Match:
    old = list(hunk.old_lines)
    try:
        return seek(
            doc.lines,
            old,
            start=start,
            line_hint=hunk.line_hint,
            anchor=hunk.anchor,
            at_end=hunk.end_of_file,
            profile=profile,
        )
    except GitpatchError as exc:
        err = relabel(exc, f"{path}: {name}", path=path, source_line=hunk.source_line)
        if isinstance(err, MatchNotFound):
            applied = lines_applied_at(doc.lines, old, hunk.new_lines)
            err = note_applied(err, applied, "The hunk's new text (its ' ' and '+' lines)")
        if isinstance(exc, MatchNotFound) and start > 0:
            try:
                earlier = seek(doc.lines, old, profile=profile)
            except GitpatchError:
                earlier = None
            if earlier is not None and earlier.start < start:
                err = MatchNotFound(
                    f"{path}: {name}: its lines are at line {earlier.start + 1}, above the end of "
                    f"the previous hunk (line {start})",
                    hint="Hunks are applied top to bottom, each below the one before, and must "
                    "not share lines: order them by position and drop context that repeats "
                    "lines of the previous hunk.",
                    details={
                        "path": path,
                        "line": earlier.start + 1,
                        "source_line": hunk.source_line,
                    },
                )
        raise err from None


def _trailing_context(hunk: Hunk) -> int:
    """How many lines the hunk ends with that it leaves unchanged."""
    count = 0
    for h in reversed(hunk.lines):
        if h.op != " ":
            break
        count += 1
    return count


def _overlapping(
    doc: Document, hunk: Hunk, cursor: int, shared: int, profile: Format
) -> tuple[Match, tuple[HunkLine, ...]] | None:
    """Place a hunk whose leading context repeats the previous hunk's trailing context.

    Models often do this although the grammar asks them not to. It is safe to accept when the
    repeated lines are unchanged by both hunks: the hunk is trimmed to start where the previous
    one ended.
    """
    if not shared:
        return None
    try:
        m = seek(
            doc.lines,
            list(hunk.old_lines),
            start=cursor - shared,
            line_hint=hunk.line_hint,
            anchor=hunk.anchor,
            at_end=hunk.end_of_file,
            profile=profile,
        )
    except GitpatchError:
        return None
    k = cursor - m.start
    lead = hunk.lines[:k]
    if k <= 0 or m.end <= cursor or m.end - m.start != len(hunk.old_lines):
        return None
    if len(lead) < k or any(h.op != " " for h in lead):
        return None
    return replace(m, start=cursor), hunk.lines[k:]


def place_hunks(
    path: str, doc: Document, hunks: Sequence[Hunk], profile: Format
) -> list[Placement]:
    """Locate hunks in order, each below the previous one; pure insertions go below their anchor
    or at the end of the file. Returns placements in document order."""
    placements: list[Placement] = []
    cursor = 0
    shared = 0
    for index, hunk in enumerate(hunks):
        name = _hunk_name(index + 1, hunk)
        if not hunk.lines:
            raise InvalidPatch(
                f"{path}: {name} has no lines",
                hint="Give each hunk at least one line: ' ' context, '-' removed or '+' added.",
                details={"path": path},
            )
        if not hunk.old_lines:
            at = _insertion(doc, hunk, cursor, path, name)
            added = tuple((h.text, None) for h in hunk.lines)
            placements.append(Placement(at, at, added, "exact", index))
            cursor, shared = at, 0
            continue
        try:
            m, ops = _seek_hunk(doc, hunk, cursor, profile, path, name), hunk.lines
        except MatchNotFound:
            found = _overlapping(doc, hunk, cursor, shared, profile)
            if found is None:
                raise
            m, ops = found
        lines = render(ops, doc, m, m.start, m.end)
        placements.append(Placement(m.start, m.end, lines, str(m.level), index))
        cursor, shared = m.end, _trailing_context(hunk)
    return placements


def final_newline_of(hunks: Sequence[Hunk]) -> bool | None:
    """What an end-of-file hunk says about the final newline (``\\ No newline at end of file``).

    ``None`` when no hunk says: the file keeps the state it had.
    """
    for hunk in hunks:
        if hunk.end_of_file and hunk.final_newline is not None:
            return hunk.final_newline
    return None
