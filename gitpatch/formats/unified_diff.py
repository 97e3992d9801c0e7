"""Unified diffs as ``diff -u`` and ``git diff`` write them, and as models imitate them.

Recognised: ``diff --git`` sections with their extended headers (``new file mode``, ``deleted
file mode``, ``rename from`` / ``rename to``, ``similarity index``, mode and index lines), plain
``--- old`` / ``+++ new`` pairs (a tab and timestamp after the name is dropped), ``/dev/null`` for
created and deleted files, git's quoted names, several files in one diff, and ``\\ No newline at
end of file``. The ``a/`` and ``b/`` prefixes are removed when both names carry them (or the one
name that is not ``/dev/null`` carries its own).

Positions are hints, never hard positions: ``@@ -a,b +c,d @@`` gives ``Hunk.line_hint = a`` and
the engine finds the hunk by its content. Counts are trusted only to end a hunk cleanly (trailing
blank lines, a ``-- `` mail signature, a ``--- x`` removal that looks like a header); models
miscount, so a body that disagrees with its counts is read as written. A bare ``@@`` header is
accepted. Text outside file sections (a commit message, ``Index:`` lines) is ignored, but a hunk
must belong to a file section and stay contiguous.

Refused: binary patches, copies, a hunk before any file header, ``-``/context lines in a new
file, ``+`` lines in a deleted one, two sections for one path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from gitpatch.core.model import AddFile, DeleteFile, FileOp, Hunk, HunkLine, Proposal, UpdateFile
from gitpatch.errors import InvalidPatch
from gitpatch.formats._common import invalid, path_key, require_text, text_lines

__all__ = ["parse"]

_HUNK = re.compile(r"^@@+\s*(?:-(\d+)(?:,(\d+))?\s+\+(\d+)(?:,(\d+))?\s*@@+)?")
_TIMESTAMP = re.compile(r"\s+\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?( ?[+-]\d{4})?$")
_EXTENDED = (
    "old mode ",
    "new mode ",
    "deleted file mode ",
    "new file mode ",
    "similarity index ",
    "dissimilarity index ",
    "rename from ",
    "rename to ",
    "copy from ",
    "copy to ",
    "index ",
)
_OPS: dict[str, Literal[" ", "-", "+"]] = {" ": " ", "-": "-", "+": "+"}
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
# The IR may grow a field saying whether the new content ends with a newline; until it does, a
# diff that changes only that is refused rather than applied without the change.
_HEADER_HINT = (
    "Start each file with '--- a/PATH' and '+++ b/PATH' lines (or a 'diff --git' line), then "
    "'@@ -OLD,N +NEW,M @@' hunks whose lines start with ' ', '-' or '+'."
)


@dataclass
class _RawHunk:
    """A hunk as read: its lines, header numbers and the no-newline markers of each side."""

    line: int
    lines: list[HunkLine]
    old_start: int | None
    old_count: int | None
    new_start: int | None
    new_count: int | None
    old_no_newline: bool = False
    new_no_newline: bool = False
    old_seen: int = 0
    new_seen: int = 0

    def add(self, op: Literal[" ", "-", "+"], text: str) -> None:
        """Append a line and count it for its side(s)."""
        self.lines.append(HunkLine(op, text))
        self.old_seen += op != "+"
        self.new_seen += op != "-"

    def drop_last(self, count: int) -> None:
        """Remove the last ``count`` lines (all context lines)."""
        del self.lines[len(self.lines) - count :]
        self.old_seen -= count
        self.new_seen -= count


@dataclass
class _Section:
    """One file's part of the diff, while it is being read."""

    line: int
    old: str | None = None
    new: str | None = None
    git: bool = False
    new_file: bool = False
    deleted: bool = False
    rename_from: str | None = None
    rename_to: str | None = None
    #: The mode ``new mode`` / ``new file mode`` gives (``0o100755``), None when unsaid.
    mode: int | None = None
    hunks: list[_RawHunk] = field(default_factory=list)
    open: bool = True


def parse(text: str) -> Proposal:
    """Parse a unified diff into a Proposal (``format="unified_diff"``)."""
    text = require_text(text, "diff")
    lines = text_lines(text)
    sections = _sections(lines)
    ops: list[FileOp] = []
    seen: dict[str, int] = {}
    for section in sections:
        op = _operation(section)
        if op is None:
            continue
        for p in (op.path, op.move_to if isinstance(op, UpdateFile) else None):
            if p is None:
                continue
            if path_key(p) in seen:
                raise invalid(
                    f"{p!r} already appears in the diff section at line {seen[path_key(p)]}",
                    section.line,
                    "Give each file one section with all its hunks, in file order.",
                    path=p,
                )
            seen[path_key(p)] = section.line
        ops.append(op)
    if not ops:
        raise invalid("the diff contains no file changes", None, _HEADER_HINT)
    return Proposal(operations=tuple(ops), format="unified_diff")


def _sections(lines: list[str]) -> list[_Section]:
    """Split the diff into file sections, reading hunks as they come."""
    sections: list[_Section] = []
    current: _Section | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            current = _Section(i + 1, git=True)
            current.old, current.new = _git_names(line[len("diff --git ") :])
            sections.append(current)
            i = _extended(lines, i + 1, current)
        elif _file_header(lines, i):
            if current is None or current.hunks or not current.git or not current.open:
                current = _Section(i + 1)
                sections.append(current)
            current.old = _name(lines[i][4:])
            current.new = _name(lines[i + 1][4:])
            current.open = True
            i += 2
        elif line.startswith("@@"):
            if current is None or not current.open:
                raise invalid(
                    "hunk without a file header before it (or text between hunks)",
                    i + 1,
                    _HEADER_HINT,
                )
            hunk, i = _read_hunk(lines, i)
            current.hunks.append(hunk)
        else:
            _refuse_binary(line, i + 1)
            if current is not None and line.strip():
                _refuse_stray_change(line, i + 1, current)
                current.open = False
            i += 1
    return sections


def _refuse_stray_change(line: str, number: int, section: _Section) -> None:
    """A '+' or '-' line after a file's hunks ended would be a change silently dropped."""
    if section.hunks and line[:1] in "+-" and line.rstrip() != "--":
        raise invalid(
            f"{line[:80]!r} is a change line outside any hunk (the hunk before it ended early)",
            number,
            "Keep every hunk contiguous: only ' ', '-', '+' and '\\ No newline' lines until the "
            "next '@@' or file header; start a new hunk with its own '@@' header.",
        )


def _file_header(lines: list[str], i: int) -> bool:
    """True when lines ``i`` and ``i + 1`` are a ``--- old`` / ``+++ new`` pair."""
    return lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")


def _extended(lines: list[str], i: int, section: _Section) -> int:
    """Read git's extended header lines after ``diff --git``; return the next index."""
    while i < len(lines):
        line = lines[i]
        _refuse_binary(line, i + 1)
        key = next((k for k in _EXTENDED if line.startswith(k)), None)
        if key is None:
            break
        value = line[len(key) :]
        if key.startswith("copy "):
            raise invalid(
                "copies are not supported",
                i + 1,
                "Write the copy as a new file: '--- /dev/null', '+++ b/PATH' and its lines.",
            )
        if key in ("new file mode ", "new mode "):
            section.mode = _mode(value, i + 1)
        if key == "new file mode ":
            section.new_file = True
        elif key == "deleted file mode ":
            section.deleted = True
        elif key == "rename from ":
            section.rename_from = _unquote(value)
        elif key == "rename to ":
            section.rename_to = _unquote(value)
        i += 1
    return i


def _mode(value: str, number: int) -> int:
    """The file mode a ``new mode`` / ``new file mode`` line gives; a regular file's only."""
    text = value.strip()
    if text in ("100644", "100755"):
        return int(text, 8)
    what = {"120000": "a symlink ", "160000": "a submodule "}.get(text, "")
    raise invalid(
        f"the diff gives the file {what}(mode {text}), which a patch cannot do here",
        number,
        "Only regular files can be patched: use mode 100644, or 100755 for an executable; "
        "create symlinks and submodules with git itself.",
    )


def _refuse_binary(line: str, number: int) -> None:
    """Binary patches carry no lines to place; refuse them by name."""
    if line.startswith("GIT binary patch") or (
        line.startswith("Binary files ") and line.rstrip().endswith(" differ")
    ):
        raise invalid(
            "binary patches cannot be applied",
            number,
            "Only text files can be patched; replace a binary file whole with another tool.",
        )


def _read_hunk(lines: list[str], i: int) -> tuple[_RawHunk, int]:
    """Read the hunk whose header is ``lines[i]``; return it and the index after it."""
    m = _HUNK.match(lines[i])
    if m is None:  # unreachable: every line starting with "@@" matches
        raise invalid("invalid hunk header", i + 1, _HEADER_HINT)
    old_start = int(m.group(1)) if m.group(1) else None
    old_count = _count(m.group(2)) if m.group(1) else None
    new_start = int(m.group(3)) if m.group(3) else None
    new_count = _count(m.group(4)) if m.group(3) else None
    hunk = _RawHunk(i + 1, [], old_start, old_count, new_start, new_count)
    empties = 0
    j = i + 1
    while j < len(lines):
        line = lines[j]
        first = line[:1]
        if first == " " or first == "+":
            # No boundary starts with these (a header pair starts with '--- ').
            hunk.add(_OPS[first], line[1:])
            empties = 0
        elif first == "\\":
            _no_newline(hunk, j + 1)
            empties = 0
        elif _hunk_ends(lines, j, hunk):
            break
        elif line == "":
            hunk.add(" ", "")
            empties += 1
        elif line[0] in _OPS:
            hunk.add(_OPS[line[0]], line[1:])
            empties = 0
        elif _counts_met(hunk):
            break
        else:
            # Ending here would silently drop whatever hunk lines come after this one.
            raise _bad_hunk_line(line, j + 1, i + 1)
        j += 1
    if empties and not _counts_met(hunk):
        # Blank lines that end a hunk are separators models add, not context they mean.
        hunk.drop_last(empties)
    if not hunk.lines:
        raise invalid("this hunk has no lines", i + 1, _HEADER_HINT)
    return hunk, j


def _bad_hunk_line(line: str, number: int, header: int) -> InvalidPatch:
    """The error for a line inside a hunk that is not a hunk line."""
    extra = (
        " (it starts with a tab or other whitespace; an unchanged line starts with one space)"
        if line[:1].isspace()
        else f" (if it is an unchanged line, write it with one leading space: ' {line[:60]}')"
    )
    return invalid(
        f"invalid line {line[:80]!r} in the hunk that starts at line {header}{extra}",
        number,
        "Every hunk line starts with ' ' (unchanged), '-' (removed) or '+' (added); the hunk "
        "ends at the next '@@' or file header.",
    )


def _hunk_ends(lines: list[str], j: int, hunk: _RawHunk) -> bool:
    """True when line ``j`` is past the hunk: a new hunk or file, or the end its counts set.

    A ``--- x`` / ``+++ y`` pair inside a hunk whose counts are not met yet is a removed and an
    added line, unless a hunk header follows it (then a model miscounted).
    """
    line = lines[j]
    if line.startswith(("@@", "diff --git ")):
        return True
    done = _counts_met(hunk)
    if done and line in ("", "-- "):
        return True
    if not _file_header(lines, j):
        return False
    after = lines[j + 2] if j + 2 < len(lines) else ""
    return done or hunk.old_count is None or after.startswith("@@")


def _count(group: str | None) -> int:
    """A header count: omitted means 1."""
    return int(group) if group is not None else 1


def _counts_met(hunk: _RawHunk) -> bool:
    """True when the header gave counts and the lines read so far meet them exactly."""
    if hunk.old_count is None or hunk.new_count is None:
        return False
    return hunk.old_seen == hunk.old_count and hunk.new_seen == hunk.new_count


def _no_newline(hunk: _RawHunk, number: int) -> None:
    """Record ``\\ No newline at end of file`` for the side(s) of the line before it."""
    if not hunk.lines:
        raise invalid(
            "'\\ No newline at end of file' must follow a hunk line",
            number,
            "Put the marker right after the last line of the file it describes.",
        )
    op = hunk.lines[-1].op
    if op != "+":
        hunk.old_no_newline = True
    if op != "-":
        hunk.new_no_newline = True


def _operation(section: _Section) -> FileOp | None:
    """Turn one section into its file operation (None for a section that changes nothing)."""
    old = _strip_prefix(section.old, "a/", section)
    new = _strip_prefix(section.new, "b/", section)
    if section.deleted or (new is None and old is not None):
        return _delete(section, old)
    if section.new_file or (old is None and new is not None):
        return _add(section, new)
    if section.rename_from is not None or section.rename_to is not None:
        source = section.rename_from or old
        target = section.rename_to or new
        if source is None or target is None:
            raise invalid("a rename needs both 'rename from' and 'rename to'", section.line, "")
        return UpdateFile(source, _hunks(section), move_to=target, mode=section.mode)
    if not section.git and not section.hunks:
        raise invalid("this file header has no hunks after it", section.line, _HEADER_HINT)
    target = new or old
    if target is None:
        raise invalid("the file section names no file", section.line, _HEADER_HINT)
    if not section.hunks:
        return None if section.mode is None else UpdateFile(target, mode=section.mode)
    return UpdateFile(target, _hunks(section), mode=section.mode)


def _delete(section: _Section, old: str | None) -> DeleteFile:
    """A deleted file: its hunks may only remove lines."""
    if old is None:
        raise invalid("a deleted file needs its old name", section.line, _HEADER_HINT)
    for hunk in section.hunks:
        if any(h.op != "-" for h in hunk.lines):
            raise invalid(
                f"the deleted file {old!r} has a hunk with context or '+' lines",
                hunk.line,
                "A deletion removes every line; its hunk holds only '-' lines.",
            )
    return DeleteFile(old)


def _add(section: _Section, new: str | None) -> AddFile:
    """A new file: its one hunk may only add lines."""
    if new is None:
        raise invalid("a new file needs its new name", section.line, _HEADER_HINT)
    content: list[str] = []
    no_newline = False
    for hunk in section.hunks:
        if any(h.op != "+" for h in hunk.lines):
            raise invalid(
                f"the new file {new!r} has a hunk with context or '-' lines",
                hunk.line,
                "A new file's hunk is '@@ -0,0 +1,N @@' followed only by '+' lines.",
            )
        content.extend(h.text for h in hunk.lines)
        no_newline = hunk.new_no_newline
    text = "\n".join(content)
    end = "\n" if content and not no_newline else ""
    return AddFile(new, text + end, mode=None if section.mode == 0o100644 else section.mode)


def _hunks(section: _Section) -> tuple[Hunk, ...]:
    """The IR hunks of an updated file."""
    return tuple(_hunk(raw) for raw in section.hunks)


def _hunk(raw: _RawHunk) -> Hunk:
    """One IR hunk: the old start as a hint, the end-of-file flag from the markers."""
    if all(h.op == "+" for h in raw.lines):
        # Only the header's numbers could place it, and they are hints, never positions.
        raise invalid(
            "this hunk only adds lines and has no unchanged line to place it",
            raw.line,
            "Include at least one unchanged context line (' ' prefix) next to the added lines, "
            "as 'diff -u' does by default.",
        )
    hint = raw.old_start
    kwargs: dict[str, Any] = {
        "anchor": None,
        "line_hint": hint if hint is not None and hint >= 1 else None,
        "end_of_file": raw.old_no_newline or raw.new_no_newline,
        "source_line": raw.line,
    }
    # '+0,0' leaves an empty file, which has no final newline to keep or change.
    emptied = raw.new_start == 0 and raw.new_count == 0
    if raw.old_no_newline != raw.new_no_newline and not emptied:
        kwargs["final_newline"] = not raw.new_no_newline
    return Hunk(tuple(raw.lines), **kwargs)


def _strip_prefix(name: str | None, prefix: str, section: _Section) -> str | None:
    """Drop git's ``a/`` / ``b/`` prefix when the section's names show git's convention."""
    if name is None or not name.startswith(prefix):
        return name
    other = section.new if prefix == "a/" else section.old
    other_prefix = "b/" if prefix == "a/" else "a/"
    if other is None or other.startswith(other_prefix):
        return name[len(prefix) :]
    return name


def _name(raw: str) -> str | None:
    """A file name from a ``---``/``+++`` line: unquoted, timestamp dropped, None for /dev/null."""
    quoted = re.match(r'\s*"(?:[^"\\]|\\.)*"', raw)
    if quoted:
        name = _unquote(quoted.group(0))
    elif "\t" in raw:
        name = raw.split("\t", 1)[0].strip()
    else:
        name = _TIMESTAMP.sub("", raw.rstrip()).strip()
    return None if name == "/dev/null" else name


def _git_names(rest: str) -> tuple[str | None, str | None]:
    """The two names of a ``diff --git`` line (``a/P b/P``, possibly quoted)."""
    rest = rest.strip()
    if rest.startswith('"') or rest.endswith('"'):
        parts = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', rest)
        if len(parts) == 2:
            return _unquote(parts[0]), _unquote(parts[1])
    half = (len(rest) - 1) // 2
    if len(rest) % 2 == 1 and rest[half] == " " and rest[:half][2:] == rest[half + 1 :][2:]:
        return rest[:half], rest[half + 1 :]
    if " b/" in rest:
        a, b = rest.split(" b/", 1)
        return a, "b/" + b
    return None, None


def _unquote(name: str) -> str:
    """Undo git's C-style quoting of unusual file names (octal escapes are UTF-8 bytes)."""
    name = name.strip()
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    body, out, k = name[1:-1], bytearray(), 0
    while k < len(body):
        ch = body[k]
        if ch == "\\" and k + 1 < len(body):
            nxt = body[k + 1]
            if nxt in "01234567" and re.fullmatch(r"[0-7]{3}", body[k + 1 : k + 4]):
                out.append(int(body[k + 1 : k + 4], 8) & 0xFF)
                k += 4
                continue
            out.append(_ESCAPES.get(nxt, ord(nxt) if ord(nxt) < 128 else 63))
            k += 2
            continue
        out.extend(ch.encode("utf-8", "surrogatepass"))
        k += 1
    return out.decode("utf-8", "replace")
