"""patch_resource edits for the engine: anchored replace, line-range replace, insertion.

These edits work on the text itself, in order, each on the result of the one before, and splice
``new_string`` verbatim, with two exceptions made because users hate them more than they love
literalness: in a file whose line endings are CRLF a bare ``\\n`` in ``new_string`` is written
``\\r\\n``, and an edit that reaches the end of the file keeps the file's final-newline state
(inserting ``"x\\n"`` after the last line of a file without a final newline adds the line
``x`` and still leaves no final newline).

``old_string`` matching is exact except for line endings: ``"a\\nb"`` finds ``a\\r\\nb``.
"""

from __future__ import annotations

import operator
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate, count, repeat

from gitpatch.core.budget import checkpoint
from gitpatch.core.model import Edit, EditReport, InsertAfter, Replace, ReplaceLines
from gitpatch.core.text import Document, split_lines
from gitpatch.engine.applied import note_applied, substantial
from gitpatch.errors import (
    BudgetExceeded,
    GitpatchError,
    InternalError,
    InvalidPatch,
    MatchAmbiguous,
    MatchNotFound,
)
from gitpatch.match import find_substring, seek
from gitpatch.match.messages import region_text

__all__ = ["apply_text_edits"]

_EOL_SPLIT = re.compile(r"(\r\n|\n|\r)")
_BARE_LF = re.compile(r"(?<!\r)\n")


def _line_starts(text: str) -> list[int]:
    """Offsets where each line starts; a trailing terminator does not start a new line.

    Built from C-level splits and sums: edits run on files of 100,000 lines.
    """
    if not text:
        return []
    if "\r" not in text:
        parts = text.split("\n")
        sizes: Iterable[int] = map(operator.add, map(len, parts[:-1]), repeat(1))
    else:
        pieces = _EOL_SPLIT.split(text)
        sizes = map(operator.add, map(len, pieces[0:-1:2]), map(len, pieces[1::2]))
    starts = [0, *accumulate(sizes)]
    if starts[-1] == len(text):
        starts.pop()
    return starts


def _lines_at(text: str, offsets: Sequence[int]) -> list[int]:
    """1-based lines holding ascending ``offsets``, counting LFs between them when possible."""
    if "\r" in text:
        starts = _line_starts(text)
        return [max(1, bisect_right(starts, o)) for o in offsets]
    out: list[int] = []
    line, pos = 1, 0
    for o in offsets:
        line += text.count("\n", pos, o)
        pos = o
        out.append(line)
        if not len(out) & 4095:
            checkpoint()
    return out


def _ends_with_eol(text: str) -> bool:
    return text.endswith(("\n", "\r"))


def _strip_eol(text: str) -> str:
    if text.endswith("\r\n"):
        return text[:-2]
    return text[:-1] if _ends_with_eol(text) else text


def _find(text: str, old: str) -> list[tuple[int, int]]:
    """Spans of ``old`` in ``text``, non-overlapping, comparing CRLF and LF as equal."""
    if "\r" not in text and "\r" not in old:
        return [(o, o + len(old)) for o in find_substring(text, old)]
    norm = text.replace("\r\n", "\n")
    needle = old.replace("\r\n", "\n")
    # where each dropped CR sat, in normalised coordinates (the index of its LF there)
    parts = text.split("\r\n")
    crs = list(map(operator.add, accumulate(map(len, parts[:-1])), count()))

    def back(p: int) -> int:
        return p + bisect_left(crs, p)

    found = find_substring(norm, needle)
    checkpoint()
    return [(back(o), back(o + len(needle))) for o in found]


def _split_keep(text: str) -> list[str]:
    """The lines of ``text``, each with its terminator (``\\r\\n``, ``\\n`` or ``\\r``); a
    trailing terminator starts no new line, as in ``_line_starts``."""
    if not text:
        return []
    if "\r" not in text:
        parts = text.split("\n")
        last = parts.pop()
        lines = [part + "\n" for part in parts]
    else:
        pieces = _EOL_SPLIT.split(text)
        last = pieces[-1]
        lines = list(map(operator.add, pieces[0:-1:2], pieces[1::2]))
    if last:
        lines.append(last)
    return lines


class _State:
    """The text being edited, with what the rules need to know about the original file.

    It is held either as one string (what anchored replaces search) or as a list of lines
    (what line-range replaces and insertions address), converted only when the kind of edit
    changes: a run of N line edits then costs O(size + N * (lines touched)), not N times the
    file, which matters when one call carries thousands of insertions.
    """

    def __init__(self, text: str, eol: str, path: str) -> None:
        self.path = path
        self._text: str | None = text
        self._lines: list[str] | None = None
        self.eol = eol
        self.crlf = eol == "\r\n"

    @property
    def text(self) -> str:
        """The whole text (joined from the lines when they were edited last)."""
        if self._text is None:
            self._text = "".join(self._lines or ())
            self._lines = None
        return self._text

    @text.setter
    def text(self, value: str) -> None:
        self._text, self._lines = value, None

    def lines(self) -> list[str]:
        """The lines with their terminators (split from the text when it was edited last)."""
        if self._lines is None:
            self._lines = _split_keep(self._text or "")
            self._text = None
        return self._lines

    def splice_lines(self, first: int, last: int, new: str) -> None:
        """Replace lines ``first`` to ``last`` (0-based, half-open) by ``new``, exactly as
        ``splice`` on the offsets of those lines would.

        ``splice`` runs on a window of the touched lines plus one neighbour on each side: the
        neighbours decide whether the edit reaches the start or the end of the file and let a
        CR and an LF that become adjacent join into one terminator; line boundaries outside
        the window cannot move."""
        lines = self.lines()
        lo, hi = max(0, first - 1), min(len(lines), last + 1)
        window = _State("".join(lines[lo:hi]), self.eol, self.path)
        start = sum(map(len, lines[lo:first]))
        end = start + sum(map(len, lines[first:last]))
        window.splice(start, end, new)
        lines[lo:hi] = _split_keep(window.text)

    def splice(self, start: int, end: int, new: str, whole_lines: bool = True) -> None:
        """Replace ``text[start:end]`` by ``new``, keeping the final-newline state at the end.

        A file without a final newline loses the one an edit would leave at its end, unless a
        substring edit (not ``whole_lines``) did not write that line break itself: ``"a\\nfoo"``
        minus ``foo`` is ``"a\\n"``, not ``"a"``.
        """
        new = _BARE_LF.sub("\r\n", new) if self.crlf else new
        text = self.text
        before, after = text[:start], text[end:]
        if after or not text:
            self.text = before + new + after
            return
        had_eol = _ends_with_eol(text)
        if before and not _ends_with_eol(before) and start == len(text) and new:
            before += self.eol  # inserting after a last line that has no terminator
        result = before + new
        if result and not had_eol and (whole_lines or _ends_with_eol(new)):
            result = _strip_eol(result)
        elif result and had_eol and not _ends_with_eol(result):
            result += self.eol
        self.text = result

    def splice_all(self, spans: Sequence[tuple[int, int]], new: str) -> None:
        """Replace ascending, non-overlapping spans by ``new`` in one pass over the text."""
        *rest, (start, end) = spans
        # the last span alone can reach the end of the file
        self.splice(start, end, new, whole_lines=False)
        if not rest:
            return
        new = _BARE_LF.sub("\r\n", new) if self.crlf else new
        text = self.text
        pieces: list[str] = []
        pos = 0
        for start, end in rest:
            pieces += (text[pos:start], new)
            pos = end
            if not len(pieces) & 8191:
                checkpoint()
        pieces.append(text[pos:])
        self.text = "".join(pieces)


def _not_found_hint(doc_text: str, old: str) -> str:
    """Point at the closest region of the file, using the line matcher's lenient levels."""
    base = "old_string must match the file exactly (line endings aside): re-read the file "
    base += "and copy the text, with its whitespace and punctuation."
    pattern = [line for line in split_lines(old) if line.strip()]
    if not pattern:
        return base
    try:
        m = seek(split_lines(doc_text), pattern, profile="search_replace")
    except BudgetExceeded:
        raise
    except GitpatchError as exc:
        return f"{base}\n{exc.hint}" if exc.hint else base
    shown = region_text(split_lines(doc_text), m.start, m.end)
    return (
        f"{base}\nThe file has similar text at lines {m.start + 1}-{m.end} ({m.level}), as "
        f"it is in the file:\n{shown}"
    )


def _replace(state: _State, edit: Replace, number: int) -> tuple[int, int]:
    where = f"{state.path}: edit {number}"
    spans = _find(state.text, edit.old)
    if not spans:
        err = MatchNotFound(
            f"{where}: old_string {_preview(edit.old)} is not in the file",
            hint=_not_found_hint(state.text, edit.old),
            details={"path": state.path, "edit": number},
        )
        raise note_applied(err, _text_applied_at(state.text, edit), "new_string")
    last = max(spans[-1][0], spans[-1][1] - 1)
    *lines, last_line = _lines_at(state.text, [s for s, _ in spans] + [last])
    if len(spans) > 1 and not edit.replace_all:
        raise MatchAmbiguous(
            f"{where}: old_string {_preview(edit.old)} occurs {len(spans)} times, at lines {lines}",
            hint="Include more surrounding text so old_string occurs once, or set replace_all "
            "to change every occurrence.",
            details={"path": state.path, "edit": number, "candidates": lines},
        )
    state.splice_all(spans, edit.new)
    return lines[0], last_line


def _text_applied_at(text: str, edit: Replace) -> list[int]:
    """1-based lines where ``edit.new`` already is in ``text`` (when it is worth saying)."""
    if edit.new == edit.old or not substantial([edit.new]):
        return []
    spans = _find(text, edit.new)
    return _lines_at(text, [s for s, _ in spans[:5]]) if spans else []


def _preview(text: str, limit: int = 60) -> str:
    short = text if len(text) <= limit else text[: limit - 3] + "..."
    return repr(short)


def _replace_lines(state: _State, edit: ReplaceLines, number: int) -> tuple[int, int]:
    count = len(state.lines())
    if not 1 <= edit.start <= edit.end <= count:
        raise InvalidPatch(
            f"{state.path}: edit {number}: line range {edit.start}-{edit.end} is out of bounds "
            f"(the file has {count} line{'s' if count != 1 else ''} at this point)",
            hint="start_line and end_line are 1-based and inclusive, with start_line <= "
            f"end_line <= {count}; re-read the file for current line numbers.",
            details={"path": state.path, "edit": number, "lines": count},
        )
    state.splice_lines(edit.start - 1, edit.end, edit.new)
    return edit.start, edit.end


def _insert_after(state: _State, edit: InsertAfter, number: int) -> tuple[int, int]:
    count = len(state.lines())
    if not 0 <= edit.line <= count:
        raise InvalidPatch(
            f"{state.path}: edit {number}: after_line {edit.line} is out of bounds (the file has "
            f"{count} line{'s' if count != 1 else ''} at this point)",
            hint=f"after_line is 1-based, between 0 (the very top) and {count} (the end).",
            details={"path": state.path, "edit": number, "lines": count},
        )
    state.splice_lines(edit.line, edit.line, edit.new)
    return edit.line, edit.line


def apply_text_edits(
    path: str, doc: Document, edits: Sequence[Edit]
) -> tuple[bytes, list[EditReport]]:
    """Apply patch_resource edits in order; returns the new bytes and one report per edit.

    Line numbers in the report refer to the text each edit saw (the result of the edits before).
    """
    state = _State(doc.text, doc.eol, path)
    reports: list[EditReport] = []
    for index, edit in enumerate(edits):
        checkpoint()
        number = index + 1
        if isinstance(edit, Replace):
            first, last = _replace(state, edit, number)
        elif isinstance(edit, ReplaceLines):
            first, last = _replace_lines(state, edit, number)
        elif isinstance(edit, InsertAfter):
            first, last = _insert_after(state, edit, number)
        else:
            raise InternalError(f"{type(edit).__name__} is not a patch_resource edit")
        reports.append(EditReport(path, index, first, last, "exact"))
    return doc.encode(state.text, path), reports
