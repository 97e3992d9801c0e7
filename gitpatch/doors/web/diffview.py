"""A unified diff turned into files, hunks and highlighted lines for the review page.

Syntax colour is done here, on the server, with Pygments: each hunk's old side (context and
removed lines) and new side (context and added lines) are tokenized as two pieces of text, so a
multi-line string or comment keeps its colour across lines, and every diff line then takes its
HTML from the side it belongs to. Everything is escaped here; the templates mark it safe.
It does not read the repository: it parses the text ``Workspace.show`` returns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape

from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.token import STANDARD_TYPES, _TokenType
from pygments.util import ClassNotFound

__all__ = ["COLLAPSE_LINES", "DiffLine", "FileDiff", "Hunk", "parse_diff"]

#: A file diff longer than this many lines starts collapsed.
COLLAPSE_LINES = 400
#: Lines beyond this are not rendered at all (the page says how many were left out).
MAX_LINES = 5000

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$")


@dataclass
class DiffLine:
    """One line of a hunk: ``kind`` is ``+``, ``-`` or a space; ``html`` is escaped."""

    kind: str
    old: int | None
    new: int | None
    html: str


@dataclass
class Hunk:
    """One ``@@`` section of a file diff."""

    header: str
    lines: list[DiffLine] = field(default_factory=list)


@dataclass
class FileDiff:
    """One file of the diff: how it changed, its hunks and its +/- counts."""

    old_path: str
    new_path: str
    status: str = "modified"  # added, deleted, renamed, modified
    binary: bool = False
    hunks: list[Hunk] = field(default_factory=list)
    added: int = 0
    removed: int = 0
    omitted: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def path(self) -> str:
        """The path the file has after the change (before it, for a deletion)."""
        return self.old_path if self.status == "deleted" else self.new_path

    @property
    def size(self) -> int:
        """How many diff lines the file has."""
        return sum(len(h.lines) for h in self.hunks)

    @property
    def collapsed(self) -> bool:
        """True when the file is long enough to start folded."""
        return self.size > COLLAPSE_LINES


def parse_diff(text: str) -> list[FileDiff]:
    """The files of a ``git diff``-style text, highlighted by each file's language."""
    files: list[FileDiff] = []
    raw: list[tuple[FileDiff, list[list[str]]]] = []
    for line in text.split("\n"):
        if line.startswith("diff --git "):
            current = _start(line)
            files.append(current)
            raw.append((current, []))
        elif not raw:
            continue
        else:
            _header_or_body(raw[-1][0], raw[-1][1], line)
    for diff, hunks in raw:
        _fill(diff, hunks)
    return files


def _start(line: str) -> FileDiff:
    rest = line.removeprefix("diff --git ")
    # "a/X b/Y": paths with spaces are split at " b/" (git quotes the odd ones itself).
    old, _, new = rest.partition(" b/")
    return FileDiff(old_path=old.removeprefix("a/"), new_path=new or old.removeprefix("a/"))


def _header_or_body(diff: FileDiff, hunks: list[list[str]], line: str) -> None:
    if line.startswith("@@"):
        hunks.append([line])
    elif hunks:
        hunks[-1].append(line)
    elif line.startswith("new file mode"):
        diff.status = "added"
    elif line.startswith("deleted file mode"):
        diff.status = "deleted"
    elif line.startswith("rename from "):
        diff.status = "renamed"
        diff.old_path = line.removeprefix("rename from ")
    elif line.startswith("rename to "):
        diff.new_path = line.removeprefix("rename to ")
    elif line.startswith(("Binary files", "GIT binary patch")):
        diff.binary = True
    elif line.startswith(("old mode", "new mode")):
        diff.notes.append(line)


def _fill(diff: FileDiff, hunks: list[list[str]]) -> None:
    lexer = _lexer(diff.path)
    budget = MAX_LINES
    for lines in hunks:
        body = [ln for ln in lines[1:] if ln[:1] in ("+", "-", " ") or ln.startswith("\\")]
        diff.added += sum(1 for ln in body if ln.startswith("+"))
        diff.removed += sum(1 for ln in body if ln.startswith("-"))
        if budget <= 0:
            diff.omitted += len(body)
            continue
        shown, budget = body[:budget], budget - len(body)
        diff.omitted += len(body) - len(shown)
        diff.hunks.append(_hunk(lines[0], shown, lexer))


def _hunk(header: str, body: list[str], lexer: Lexer) -> Hunk:
    match = _HUNK.match(header)
    old_no, new_no = (int(match.group(1)), int(match.group(2))) if match else (0, 0)
    old_side = [ln[1:] for ln in body if ln[:1] in ("-", " ")]
    new_side = [ln[1:] for ln in body if ln[:1] in ("+", " ")]
    old_html, new_html = _highlight(old_side, lexer), _highlight(new_side, lexer)
    hunk = Hunk(header=header)
    io = inew = 0
    for ln in body:
        kind = ln[:1]
        if kind == "\\":
            hunk.lines.append(DiffLine("\\", None, None, escape(ln)))
        elif kind == "-":
            hunk.lines.append(DiffLine("-", old_no + io, None, old_html[io]))
            io += 1
        elif kind == "+":
            hunk.lines.append(DiffLine("+", None, new_no + inew, new_html[inew]))
            inew += 1
        else:
            hunk.lines.append(DiffLine(" ", old_no + io, new_no + inew, new_html[inew]))
            io += 1
            inew += 1
    return hunk


def _lexer(path: str) -> Lexer:
    try:
        lexer: Lexer = get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ClassNotFound:
        lexer = TextLexer(stripnl=False, ensurenl=False)
    return lexer


def _css_class(ttype: _TokenType) -> str:
    kind: _TokenType | None = ttype
    while kind is not None and kind not in STANDARD_TYPES:
        kind = kind.parent
    return STANDARD_TYPES[kind] if kind is not None else ""


def _highlight(lines: list[str], lexer: Lexer) -> list[str]:
    """One escaped HTML string per input line, with Pygments' short CSS classes."""
    out: list[str] = [""]
    for ttype, value in lexer.get_tokens("\n".join(lines)):
        css = _css_class(ttype)
        for i, piece in enumerate(value.split("\n")):
            if i:
                out.append("")
            if piece:
                out[-1] += f'<span class="{css}">{escape(piece)}</span>' if css else escape(piece)
    # A lexer may add or drop a final newline; the page needs exactly one entry per line.
    out = out[: len(lines)]
    return out + [escape(ln) for ln in lines[len(out) :]]
