"""SEARCH/REPLACE blocks: the ``patch`` tool's edit language, and its multi-file form.

Grammar (one block)::

    <<<<<<< SEARCH
    lines already in the file
    =======
    lines to put in their place
    >>>>>>> REPLACE

Markers take 5 to 9 marker characters and may carry trailing spaces; the words are matched
without case. Between blocks only blank lines and Markdown code fences may appear, plus, in the
multi-file form (``parse(text)`` without ``path``), one path line naming the file the next block
edits; a block without its own path line edits the file of the block before it. With ``path``
given, a line repeating that path is tolerated too, since models often copy it.

A line ``...`` (at column 0, nothing else on it) that appears the same number of times in SEARCH
and in REPLACE cuts the block into pieces: piece *k* of SEARCH becomes piece *k* of REPLACE. This
is the elision habit of models (``keep what is between``); each piece is matched on its own, and
all pieces carry the block's number. An indented ``...`` line stays in the block: it may be
code (a Python stub body), so the engine reads it as text first and as elision only when that
text is not in the file (``gitpatch.engine.elision``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gitpatch.core.model import Edit, Proposal, SearchReplace, UpdateFile
from gitpatch.formats._common import invalid, is_fence, path_key, require_text, text_lines

__all__ = ["parse"]

_SEARCH = re.compile(r"^<{5,9}\s*SEARCH\s*$", re.IGNORECASE)
_DIVIDER = re.compile(r"^={5,9}\s*$")
_REPLACE = re.compile(r"^>{5,9}\s*REPLACE\s*$", re.IGNORECASE)
# Marker-like lines outside a block get a precise message instead of "stray text".
_NEAR_MARKER = re.compile(r"^\s*(<{3,}|={3,}|>{3,})\s*(SEARCH|REPLACE)?\s*$", re.IGNORECASE)
_ELISION = "..."

_FORMAT_HINT = (
    "Write each edit as:\n<<<<<<< SEARCH\nexact lines from the file\n=======\n"
    "replacement lines\n>>>>>>> REPLACE"
)


@dataclass(frozen=True)
class _Block:
    """One parsed block: its marker line (1-based) and both sides as lines."""

    line: int
    search: list[str]
    replace: list[str]


def parse(text: str, path: str | None = None) -> Proposal:
    """Parse SEARCH/REPLACE blocks into a Proposal (``format="search_replace"``).

    With ``path``: bare blocks, all for that file. Without: each block is preceded by a path line
    (blocks for the same path merge into one ``UpdateFile``, in order).
    """
    text = require_text(text, "edits")
    if path is not None:
        path = require_text(path, "path")
    lines = text_lines(text)
    files: dict[str, tuple[str, list[Edit]]] = {}
    for number, (file_path, block) in enumerate(_scan(lines, path), start=1):
        key = path_key(file_path)
        edits = files.setdefault(key, (file_path, []))[1]
        edits.extend(_pieces(block, number))
    if not files:
        raise invalid(
            "no SEARCH/REPLACE block found in the edit text",
            None,
            _FORMAT_HINT,
        )
    ops = tuple(UpdateFile(p, tuple(edits)) for p, edits in files.values())
    return Proposal(operations=ops, format="search_replace")


def _scan(lines: list[str], path: str | None) -> list[tuple[str, _Block]]:
    """Walk the text: blocks, with the path each one edits; refuse anything else."""
    found: list[tuple[str, _Block]] = []
    pending: tuple[str, int] | None = None
    current = path
    i = 0
    while i < len(lines):
        line = lines[i]
        if _SEARCH.match(line):
            if pending is not None:
                current = pending[0]
                pending = None
            if current is None:
                raise invalid(
                    "this SEARCH block has no path line before it",
                    i + 1,
                    "In the multi-file form put the file's path on its own line before each block.",
                )
            block, i = _read_block(lines, i)
            found.append((current, block))
            continue
        if not line.strip() or is_fence(line):
            i += 1
            continue
        _check_outside_line(lines, i, path, pending)
        if path is None:
            pending = (_clean_path(line), i + 1)
        i += 1
    if pending is not None:
        raise invalid(
            f"path line {pending[0]!r} is not followed by a SEARCH/REPLACE block",
            pending[1],
            "Remove the line, or add the block that edits that file after it.",
        )
    return found


def _check_outside_line(
    lines: list[str], i: int, path: str | None, pending: tuple[str, int] | None
) -> None:
    """Refuse a non-blank line between blocks unless it is an acceptable path line."""
    line, number = lines[i], i + 1
    shown = _show(line)
    if _DIVIDER.match(line) or _REPLACE.match(line) or _NEAR_MARKER.match(line):
        raise invalid(
            f"marker {shown} outside a block (no '<<<<<<< SEARCH' opened one)",
            number,
            "Every block starts with '<<<<<<< SEARCH' (5-9 '<'), then '=======', then "
            "'>>>>>>> REPLACE'.",
        )
    if path is not None:
        cleaned = _clean_path(line)
        if cleaned and _same_file(cleaned, path):
            return
        raise invalid(
            f"text outside a SEARCH/REPLACE block: {shown}",
            number,
            f"Edits for {path} hold only SEARCH/REPLACE blocks (blank lines and code fences may "
            "separate them); remove any other text.",
        )
    if pending is not None:
        raise invalid(
            f"text outside a SEARCH/REPLACE block: {_show(lines[pending[1] - 1])} and then {shown}",
            pending[1],
            "Only one line, the file's path, may come before each block; remove the other text.",
        )
    if not _clean_path(line):
        raise invalid(
            f"text outside a SEARCH/REPLACE block: {shown}",
            number,
            "Put only the file's path on the line before each block.",
        )


def _read_block(lines: list[str], start: int) -> tuple[_Block, int]:
    """Read the block whose SEARCH marker is ``lines[start]``; return it and the next index."""
    opened = start + 1
    dividers: list[int] = []
    j = start + 1
    while j < len(lines) and not _REPLACE.match(lines[j]):
        if _SEARCH.match(lines[j]):
            raise invalid(
                f"unterminated block: the block opened at line {opened} has no "
                + ("'>>>>>>> REPLACE'" if dividers else "'=======' divider")
                + " before the next '<<<<<<< SEARCH'",
                j + 1,
                "Close each block: SEARCH lines, '=======', REPLACE lines, '>>>>>>> REPLACE'.",
            )
        if _DIVIDER.match(lines[j]):
            dividers.append(j)
        j += 1
    if j >= len(lines):
        raise invalid(
            "unterminated block: no '>>>>>>> REPLACE' after "
            + (
                "its '=======' divider" if dividers else "'<<<<<<< SEARCH' and no '=======' divider"
            ),
            opened,
            "Finish the block with '=======', the replacement lines and '>>>>>>> REPLACE'.",
        )
    if not dividers:
        raise invalid(
            f"missing '=======' divider in the block opened at line {opened}",
            j + 1,
            "Put a line '=======' between the SEARCH lines and the REPLACE lines.",
        )
    d = _divider(lines, dividers, start)
    return _Block(opened, lines[start + 1 : d], lines[d + 1 : j]), j + 1


def _divider(lines: list[str], dividers: list[int], start: int) -> int:
    """The divider of a block; with several '=' lines, the one as wide as the SEARCH marker.

    A file may hold a line like ``=======`` (a Markdown underline, a conflict marker); guessing
    which one splits the block could put the change in the wrong place, so a tie is refused.
    """
    if len(dividers) == 1:
        return dividers[0]
    width = len(lines[start]) - len(lines[start].lstrip("<"))
    same = [d for d in dividers if len(lines[d].rstrip()) == width]
    if len(same) == 1:
        return same[0]
    numbers = ", ".join(str(d + 1) for d in dividers)
    raise invalid(
        f"the block has several divider lines (lines {numbers}); it is unclear which one "
        "separates SEARCH from REPLACE",
        start + 1,
        "If the text itself has such a line, give this block's markers a different width "
        "(5-9 characters), e.g. '<<<<<<<<< SEARCH', '=========', '>>>>>>>>> REPLACE'.",
        lines=[d + 1 for d in dividers],
    )


def _pieces(block: _Block, number: int) -> list[SearchReplace]:
    """Split a block on ``...`` elision lines into SearchReplace pieces."""
    search = _split_elision(block.search)
    replace = _split_elision(block.replace)
    if not any(s.strip() for part in search for s in part):
        raise invalid(
            "empty SEARCH: the block has no text to find",
            block.line,
            "Copy the exact lines to change into SEARCH; to create a file use the write tool, "
            "to add lines include a neighbouring line in SEARCH and REPLACE.",
            block=number,
        )
    if len(search) != len(replace):
        raise invalid(
            f"'...' appears {len(search) - 1} time(s) in SEARCH but {len(replace) - 1} time(s) "
            "in REPLACE",
            block.line,
            "Use '...' on its own line in both halves at matching places to skip unchanged "
            "lines, or write out the lines in full.",
            block=number,
        )
    out: list[SearchReplace] = []
    for old, new in zip(search, replace, strict=True):
        if not any(s.strip() for s in old):
            if old == new:
                continue
            raise invalid(
                "a REPLACE part between '...' lines has no SEARCH text to locate it",
                block.line,
                "Each part between '...' lines must have SEARCH text to find; include a "
                "neighbouring line from the file in both halves.",
                block=number,
            )
        out.append(SearchReplace(tuple(old), tuple(new), source_line=block.line, block=number))
    return out


def _split_elision(lines: list[str]) -> list[list[str]]:
    """Cut ``lines`` at each column-0 ``...`` line (an indented one is the engine's call)."""
    parts: list[list[str]] = [[]]
    for line in lines:
        if line.rstrip() == _ELISION:
            parts.append([])
        else:
            parts[-1].append(line)
    return parts


def _clean_path(line: str) -> str:
    """The path a path line names, without the decoration models add (backticks, bold, colon)."""
    cleaned = line.strip()
    while True:
        shorter = cleaned.strip().strip("`*\"'").rstrip(":")
        if shorter == cleaned:
            return cleaned
        cleaned = shorter


def _same_file(written: str, path: str) -> bool:
    """True when a path line names ``path`` (equal, or one is a trailing part of the other)."""
    a, b = path_key(written), path_key(path)
    return a == b or b.endswith("/" + a) or a.endswith("/" + b)


def _show(line: str) -> str:
    """A line quoted for a message, shortened when long."""
    return repr(line if len(line) <= 80 else line[:77] + "...")
