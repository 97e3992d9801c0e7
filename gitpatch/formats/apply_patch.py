"""The ``*** Begin Patch`` language of the apply_patch tool.

Grammar::

    patch     := "*** Begin Patch" { operation } "*** End Patch"
    operation := add | delete | update
    add       := "*** Add File: " path { "+" line }            (at least one line)
    delete    := "*** Delete File: " path
    update    := "*** Update File: " path [ "*** Move to: " path ] { hunk }
    hunk      := header { (" " | "-" | "+") line } [ "*** End of File" ]
    header    := "@@" | "@@ " N | "@@ " anchor | "@@ -a,b +c,d @@" [ anchor ]

``@@ N`` is the 1-based line of the hunk's first line in the file as last read (a hint that
only chooses among content matches); ``@@ anchor`` names a line, or a prefix of one, above the
hunk. A hunk with only context lines is a locator. An Update needs hunks or a move.

Leniency that cannot change the meaning: whitespace around ``***`` marker lines, marker words
in any case, a missing ``@@`` before the first hunk, an empty line inside a hunk read as an empty
context line (models drop the lone space), empty lines ending a hunk or an Add ignored, blank
lines and code fences around the patch, and a shell heredoc wrapper (``<<'EOF'`` ... ``EOF``).
What needs no file is refused here: two operations on one path, an Add with no lines, a hunk
with no lines, an Update with neither hunks nor a move.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from gitpatch.core.model import AddFile, DeleteFile, FileOp, Hunk, HunkLine, Proposal, UpdateFile
from gitpatch.errors import InvalidPatch
from gitpatch.formats._common import invalid, is_fence, path_key, require_text, text_lines

__all__ = ["parse"]

_MARKER = re.compile(
    r"^\*\*\*\s*(begin patch|end patch|end of file|add file|update file|delete file|move to)"
    r"\s*(:?)\s*(.*?)\s*$",
    re.IGNORECASE,
)
_HEREDOC = re.compile(r"^\s*(?:[\w./-]+\s+)*<<-?\s*(['\"]?)([A-Za-z_]\w*)\1\s*$")
_UNIFIED = re.compile(r"^-(\d+)(?:,\d+)?\s+\+\d+(?:,\d+)?\s*@@\s*(.*)$")
_OPS: dict[str, Literal[" ", "-", "+"]] = {" ": " ", "-": "-", "+": "+"}

_OP_HINT = (
    "Start each file operation with '*** Update File: PATH', '*** Add File: PATH' or "
    "'*** Delete File: PATH', and end the patch with '*** End Patch'."
)
_HUNK_HINT = (
    "Every hunk line starts with ' ' (an unchanged line), '-' (a removed line) or '+' (an "
    "added line); start a new hunk with '@@'."
)


@dataclass(frozen=True)
class _Marker:
    """A ``***`` marker line: its keyword (lowercase, single-spaced) and its argument."""

    kind: str
    colon: bool
    arg: str


@dataclass
class _Cursor:
    """The lines of the patch and where parsing stands (0-based index)."""

    lines: list[str]
    i: int = 0
    stop: int = 0
    seen: dict[str, int] = field(default_factory=dict)

    @property
    def number(self) -> int:
        """The 1-based line number of the current line."""
        return self.i + 1

    def at_end(self) -> bool:
        """True when no line is left before the end of the (unwrapped) patch."""
        return self.i >= self.stop


def parse(text: str) -> Proposal:
    """Parse an apply_patch text into a Proposal (``format="apply_patch"``)."""
    text = require_text(text, "patch")
    lines = text_lines(text)
    start, stop = _unwrap(lines)
    cur = _Cursor(lines, start + 1, stop)
    ops: list[FileOp] = []
    while True:
        _skip_blank(cur)
        if cur.at_end():
            raise invalid(
                "the patch ends without '*** End Patch' (was it cut off?)",
                min(cur.i, len(lines)) or None,
                "Finish the patch with a line '*** End Patch' after the last operation.",
            )
        marker = _marker(cur.lines[cur.i])
        if marker is not None and marker.kind == "end patch":
            end = cur.number
            _check_tail(cur)
            break
        ops.append(_operation(cur, marker))
    if not ops:
        raise invalid(
            "the patch has no file operation between '*** Begin Patch' and '*** End Patch'",
            end,
            _OP_HINT,
        )
    return Proposal(operations=tuple(ops), format="apply_patch")


def _unwrap(lines: list[str]) -> tuple[int, int]:
    """Find ``*** Begin Patch`` past blanks, fences and a heredoc line; return (begin, stop).

    ``stop`` is the index after the last line that can belong to the patch: a closing heredoc
    tag, fences and blank lines at the very end are outside it.
    """
    i = 0
    while i < len(lines) and (not lines[i].strip() or is_fence(lines[i])):
        i += 1
    tag = None
    if i < len(lines) and (m := _HEREDOC.match(lines[i])):
        tag = m.group(2)
        i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
    first = _marker(lines[i]) if i < len(lines) else None
    if first is None or first.kind != "begin patch" or first.arg:
        shown = repr(lines[i][:80]) if i < len(lines) else "nothing"
        raise invalid(
            f"the patch must start with '*** Begin Patch', found {shown}",
            i + 1 if i < len(lines) else None,
            "Send the patch as '*** Begin Patch', the file operations, then '*** End Patch'.",
        )
    stop = len(lines)
    while stop > i + 1 and (
        not lines[stop - 1].strip()
        or is_fence(lines[stop - 1])
        or (tag is not None and lines[stop - 1].strip() == tag)
    ):
        stop -= 1
    return i, stop


def _check_tail(cur: _Cursor) -> None:
    """After ``*** End Patch`` nothing but the wrapper may follow."""
    cur.i += 1
    _skip_blank(cur)
    if not cur.at_end():
        raise invalid(
            f"text after '*** End Patch': {cur.lines[cur.i][:80]!r}",
            cur.number,
            "Put every operation before '*** End Patch' and send one patch per call.",
        )


def _operation(cur: _Cursor, marker: _Marker | None) -> FileOp:
    """Parse the file operation starting at the current line."""
    line = cur.lines[cur.i]
    if marker is None or marker.kind not in ("add file", "update file", "delete file"):
        what = f"'{line.strip()[:80]}'" if line.strip() else "an empty line"
        if marker is not None and marker.kind == "move to":
            what += " (a move must directly follow its '*** Update File:' line)"
        raise invalid(f"expected a file operation, found {what}", cur.number, _OP_HINT)
    path = _path_of(cur, marker)
    header = cur.number
    cur.i += 1
    if marker.kind == "delete file":
        _claim(cur, path, header)
        _expect_no_body(cur, path)
        return DeleteFile(path)
    if marker.kind == "add file":
        _claim(cur, path, header)
        return AddFile(path, _add_body(cur, path, header))
    return _update(cur, path, header)


def _path_of(cur: _Cursor, marker: _Marker) -> str:
    """The path a file-operation marker names; refuse a missing colon or path."""
    title = marker.kind.title()
    if not marker.colon or not marker.arg:
        raise invalid(
            f"'*** {title}' needs a colon and a path",
            cur.number,
            f"Write '*** {title}: path/to/file'.",
        )
    return marker.arg


def _claim(cur: _Cursor, path: str, number: int) -> None:
    """Record that an operation uses ``path``; a second use of one path is refused."""
    key = path_key(path)
    if key in cur.seen:
        raise invalid(
            f"{path!r} is already used by the operation at line {cur.seen[key]}; two operations "
            "on one path are not allowed",
            number,
            "Put every change to a file in one operation (several '@@' hunks in one Update), and "
            "do not move a file onto a path another operation uses.",
            path=path,
        )
    cur.seen[key] = number


def _expect_no_body(cur: _Cursor, path: str) -> None:
    """A Delete has no content lines: only blanks may come before the next marker."""
    _skip_blank(cur)
    if not cur.at_end() and _marker(cur.lines[cur.i]) is None:
        raise invalid(
            f"'*** Delete File: {path}' takes no content lines, found {cur.lines[cur.i][:80]!r}",
            cur.number,
            "Delete removes the whole file; put only the next '***' line after it.",
        )


def _add_body(cur: _Cursor, path: str, header: int) -> str:
    """The content of an Add: its '+' lines (empty lines between them count as empty lines)."""
    content: list[str] = []
    blanks = 0
    lines, i = cur.lines, cur.i
    while i < cur.stop:
        line = lines[i]
        if line[:1] == "+":
            if blanks:
                content.extend([""] * blanks)
                blanks = 0
            content.append(line[1:])
        elif not line.strip():
            blanks += 1
        elif _marker(line) is not None:
            break
        else:
            raise invalid(
                f"in '*** Add File: {path}' every content line starts with '+', found "
                f"{line[:80]!r}",
                i + 1,
                "Prefix each line of the new file with '+'; to change an existing file use "
                "'*** Update File:'.",
            )
        i += 1
    cur.i = i
    if not content:
        raise invalid(
            f"'*** Add File: {path}' has no content lines",
            header,
            "An Add must have at least one '+' line; this grammar cannot create an empty file.",
            path=path,
        )
    return "\n".join(content) + "\n"


def _update(cur: _Cursor, path: str, header: int) -> UpdateFile:
    """An Update: an optional ``*** Move to:`` line, then hunks."""
    _claim(cur, path, header)
    _skip_blank(cur)
    move_to = None
    marker = _marker(cur.lines[cur.i]) if not cur.at_end() else None
    if marker is not None and marker.kind == "move to":
        move_to = _path_of(cur, marker)
        if path_key(move_to) == path_key(path):
            raise invalid(
                f"'*** Move to: {move_to}' names the file's own path",
                cur.number,
                "Remove the '*** Move to:' line, or give the new path.",
            )
        _claim(cur, move_to, cur.number)
        cur.i += 1
    hunks: list[Hunk] = []
    while True:
        _skip_blank(cur)
        if cur.at_end():
            break
        line = cur.lines[cur.i]
        marker = None if line.startswith(("+", "-")) else _marker(line)
        if marker is not None:
            if marker.kind not in ("end of file", "move to"):
                break
            raise _misplaced(cur, line)
        hunks.append(_hunk(cur, path))
    if not hunks and move_to is None:
        raise invalid(
            f"'*** Update File: {path}' has no hunks and no move",
            header,
            "Add '@@' hunks with ' ', '-' and '+' lines, or a '*** Move to:' line.",
        )
    return UpdateFile(path, tuple(hunks), move_to)


def _misplaced(cur: _Cursor, line: str) -> InvalidPatch:
    """The error for ``*** End of File`` or ``*** Move to:`` where they cannot stand."""
    return invalid(
        f"{line.strip()[:80]!r} is out of place here",
        cur.number,
        "'*** Move to:' goes right after '*** Update File:'; '*** End of File' goes after the "
        "last line of a hunk that must reach the end of the file.",
    )


def _hunk(cur: _Cursor, path: str) -> Hunk:
    """One hunk: an optional ``@@`` header, its lines, an optional ``*** End of File``."""
    first = cur.number
    anchor, hint = None, None
    line = cur.lines[cur.i]
    if line.lstrip().startswith("@@"):
        anchor, hint = _header(line.strip()[2:].strip(), cur.number)
        cur.i += 1
    elif not line.startswith((" ", "-", "+")):
        raise invalid(
            f"in '*** Update File: {path}' expected '@@' or a hunk line, found {line[:80]!r}",
            cur.number,
            _HUNK_HINT,
        )
    body, eof = _hunk_lines(cur)
    if not body:
        raise invalid(
            "this hunk has no lines",
            first,
            "Each hunk needs at least one ' ', '-' or '+' line after its '@@' header, and takes "
            "at most one anchor (use the innermost one).",
        )
    return Hunk(tuple(body), anchor=anchor, line_hint=hint, end_of_file=eof, source_line=first)


def _hunk_lines(cur: _Cursor) -> tuple[list[HunkLine], bool]:
    """Read hunk lines until the next header or marker; return them and the end-of-file flag."""
    body: list[HunkLine] = []
    trailing_empty = 0
    eof = False
    while not cur.at_end():
        line = cur.lines[cur.i]
        if line.startswith("@@"):
            break
        if not line.startswith(("+", "-")) and (m := _marker(line)) is not None:
            if m.kind == "end of file":
                eof = True
                cur.i += 1
            break
        if line == "":
            trailing_empty += 1
            body.append(HunkLine(" ", ""))
        elif line[0] in _OPS:
            trailing_empty = 0
            body.append(HunkLine(_OPS[line[0]], line[1:]))
        else:
            raise _bad_hunk_line(cur, line)
        cur.i += 1
    if trailing_empty:
        # Models end hunks with a blank separator line; it is not context they mean to match.
        del body[len(body) - trailing_empty :]
    return body, eof


def _bad_hunk_line(cur: _Cursor, line: str) -> InvalidPatch:
    """The error for a line inside a hunk that has no valid first character."""
    extra = ""
    if line.startswith("***"):
        extra = (
            " (unknown marker; valid ones: *** Add File:, *** Update File:, *** Delete File:, "
            "*** Move to:, *** End of File, *** End Patch)"
        )
    elif line[:1].isspace():
        extra = " (it starts with a tab or other whitespace, not one space)"
    else:
        extra = f" (if it is an unchanged line, write it with one leading space: ' {line[:60]}')"
    return invalid(f"invalid hunk line {line[:80]!r}{extra}", cur.number, _HUNK_HINT)


def _header(rest: str, number: int) -> tuple[str | None, int | None]:
    """Split a ``@@`` header into (anchor, line hint)."""
    if not rest:
        return None, None
    if rest.isdigit():
        hint = int(rest)
        if hint < 1:
            raise invalid(
                f"'@@ {rest}': line numbers start at 1",
                number,
                "Write '@@ N' with the 1-based line of the hunk's first line, or just '@@'.",
            )
        return None, hint
    m = _UNIFIED.match(rest)
    if m:
        old = int(m.group(1))
        return (m.group(2).strip() or None), (old if old >= 1 else None)
    if rest.endswith("@@"):
        rest = rest[:-2].strip()
    return (rest or None), None


def _marker(line: str) -> _Marker | None:
    """Recognise a ``***`` marker line, tolerating surrounding whitespace and case."""
    m = _MARKER.match(line.strip())
    if m is None:
        return None
    kind = " ".join(m.group(1).lower().split())
    colon, arg = bool(m.group(2)), m.group(3)
    if kind in ("begin patch", "end patch", "end of file") and (arg or colon):
        return None
    return _Marker(kind, colon, arg)


def _skip_blank(cur: _Cursor) -> None:
    """Skip empty and whitespace-only lines."""
    while not cur.at_end() and not cur.lines[cur.i].strip():
        cur.i += 1
