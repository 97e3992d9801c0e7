"""Indented ``...`` lines in SEARCH/REPLACE blocks: elision, when the file says they are not code.

The parser splits a block only at ``...`` lines at column 0. Agents also indent the elision line
like the code around it (``        ...``), but an indented ``...`` is also Python's Ellipsis, the
body of a stub. So the engine reads a block with its indented ``...`` lines as text FIRST, and
only when that text is not in the file does it read them as elision, and only when that reading
is well formed:

- SEARCH and REPLACE have the same number of indented ``...`` lines, and the k-th of each has the
  same indentation (a REPLACE that indents its ``...`` deeper asks to re-indent the lines it
  skips, which elision cannot do);
- every piece between them that has REPLACE text has SEARCH text to locate it.

Otherwise there is no elision reading, and the block's own error stands.
"""

from __future__ import annotations

from collections.abc import Sequence

from gitpatch.core.model import SearchReplace

__all__ = ["has_indented_elision", "split_indented_elision"]

_DOTS = "..."


def _is_dots(line: str) -> bool:
    return line.strip() == _DOTS and line[:1] in (" ", "\t")


def has_indented_elision(pieces: Sequence[tuple[int, SearchReplace]]) -> bool:
    """True when some piece's SEARCH holds an indented ``...`` line."""
    return any(_is_dots(line) for _, edit in pieces for line in edit.search)


def _cut(lines: Sequence[str]) -> tuple[list[list[str]], list[str]]:
    """``lines`` cut at indented ``...`` lines, and those lines."""
    parts: list[list[str]] = [[]]
    dots: list[str] = []
    for line in lines:
        if _is_dots(line):
            dots.append(line.rstrip())
            parts.append([])
        else:
            parts[-1].append(line)
    return parts, dots


def split_indented_elision(
    pieces: Sequence[tuple[int, SearchReplace]],
) -> list[tuple[int, SearchReplace]] | None:
    """The pieces with their indented ``...`` lines read as elision, or None when that reading is
    not well formed (see the module docstring). Each new piece keeps its edit's index and block.
    """
    out: list[tuple[int, SearchReplace]] = []
    for index, edit in pieces:
        search, search_dots = _cut(edit.search)
        replace, replace_dots = _cut(edit.replace)
        if search_dots != replace_dots:
            return None
        for old, new in zip(search, replace, strict=True):
            if not any(line.strip() for line in old):
                if old == new:
                    continue
                return None
            out.append((index, SearchReplace(tuple(old), tuple(new), edit.source_line, edit.block)))
    return out if out else None
