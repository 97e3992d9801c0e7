"""Text documents that round-trip byte for byte: BOM, each line's terminator, final newline.

A ``Document`` is the unit every matcher and engine works on. Lines are held without their
terminators (so an LF pattern finds its block in a CRLF file); each line keeps its own ending
(``"\\n"``, ``"\\r\\n"``, ``"\\r"``, or ``""`` for a last line with no newline). Lines an edit
inserts take the file's dominant ending; lines it leaves alone keep theirs.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from gitpatch.errors import NotATextResource, ResourceNotUtf8

__all__ = ["BOM", "Document", "split_lines"]

BOM = b"\xef\xbb\xbf"
_EOL = re.compile(r"(\r\n|\n|\r)")


def _split(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Split text into (lines, endings); a trailing terminator does not start a new line."""
    if not text:
        return (), ()
    if "\r" not in text:
        parts = text.split("\n")
        if parts[-1] == "":
            parts.pop()
            return tuple(parts), ("\n",) * len(parts)
        return tuple(parts), ("\n",) * (len(parts) - 1) + ("",)
    pieces = _EOL.split(text)
    # pieces alternate: line, ending, line, ending, ..., last (possibly empty) line
    lines = pieces[0::2]
    endings = pieces[1::2]
    if lines[-1] == "":
        lines.pop()
    else:
        endings.append("")
    return tuple(lines), tuple(endings)


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` without their terminators (any of ``\\n``, ``\\r\\n``, ``\\r``)."""
    return list(_split(text)[0])


@dataclass(frozen=True)
class Document:
    """An immutable text file: its lines, each line's ending, and whether it starts with a BOM."""

    lines: tuple[str, ...]
    endings: tuple[str, ...]
    bom: bool = False

    def __post_init__(self) -> None:
        if len(self.lines) != len(self.endings):
            raise ValueError("lines and endings differ in length")

    @classmethod
    def from_bytes(cls, data: bytes, path: str | None = None) -> Document:
        """Decode file bytes; refuse binary (a NUL byte) and invalid UTF-8 with their codes."""
        where = f" {path}" if path else ""
        if b"\x00" in data:
            raise NotATextResource(
                f"file{where} is binary (it contains a NUL byte at offset {data.index(0)})",
                hint="Only UTF-8 text files can be edited; replace binary files whole.",
                details={"path": path, "offset": data.index(0)},
            )
        bom = data.startswith(BOM)
        body = data[len(BOM) :] if bom else data
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            offset = exc.start + (len(BOM) if bom else 0)
            raise ResourceNotUtf8(
                f"file{where} is not valid UTF-8 (invalid byte at offset {offset})",
                hint="Only UTF-8 text files can be edited line by line; replace a file in "
                "another encoding whole, or convert it to UTF-8 first.",
                details={"path": path, "offset": offset},
            ) from None
        lines, endings = _split(text)
        return cls(lines, endings, bom)

    @classmethod
    def from_text(cls, text: str, bom: bool = False) -> Document:
        """A document from already-decoded text (a leading U+FEFF is taken as the BOM)."""
        if text.startswith("\ufeff"):
            text, bom = text[1:], True
        lines, endings = _split(text)
        return cls(lines, endings, bom)

    @property
    def text(self) -> str:
        """The content as one string, without the BOM."""
        return "".join(line + end for line, end in zip(self.lines, self.endings, strict=True))

    def to_bytes(self) -> bytes:
        """Encode back to bytes; an unchanged document gives back exactly the bytes it came from."""
        body = self.text.encode("utf-8")
        return BOM + body if self.bom else body

    @property
    def final_newline(self) -> bool:
        """True when the last line ends with a terminator (False for an empty document)."""
        return bool(self.endings) and self.endings[-1] != ""

    @property
    def eol(self) -> str:
        """The dominant line ending: the most common one, ``\\n`` on a tie or with none."""
        counts = Counter(e for e in self.endings if e)
        if not counts:
            return "\n"
        best = max(counts.values())
        if counts.get("\n", 0) == best:
            return "\n"
        return max(counts, key=lambda e: (counts[e], e == "\r\n"))

    def __len__(self) -> int:
        return len(self.lines)

    def splice(self, start: int, end: int, new_lines: Sequence[str]) -> Document:
        """Replace lines ``[start, end)`` (0-based) with ``new_lines``.

        Inserted lines take the dominant ending; the lines around keep theirs. The final-newline
        state of the document is preserved (a document without one stays without one).
        """
        if not 0 <= start <= end <= len(self.lines):
            raise ValueError(f"splice range {start}:{end} outside 0:{len(self.lines)}")
        eol = self.eol
        lines = list(self.lines[:start]) + list(new_lines) + list(self.lines[end:])
        endings = list(self.endings[:start]) + [eol] * len(new_lines) + list(self.endings[end:])
        for i in range(len(endings) - 1):
            if not endings[i]:
                endings[i] = eol
        if endings and self.lines and not self.final_newline:
            endings[-1] = ""
        elif endings and not endings[-1]:
            endings[-1] = eol
        return Document(tuple(lines), tuple(endings), self.bom)

    def with_text(self, text: str) -> Document:
        """The same BOM with new content (used by substring edits that splice raw text)."""
        lines, endings = _split(text)
        return Document(lines, endings, self.bom)
