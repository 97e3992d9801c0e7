"""Text documents that round-trip byte for byte: BOM, each line's terminator, final newline.

A ``Document`` is the unit every matcher and engine works on. Lines are held without their
terminators (so an LF pattern finds its block in a CRLF file); each line keeps its own ending
(``"\\n"``, ``"\\r\\n"``, ``"\\r"``, or ``""`` for a last line with no newline). Lines an edit
inserts take the file's dominant ending; lines it leaves alone keep theirs.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass

from gitpatch.errors import InvalidPatch, NotATextResource, ResourceNotUtf8

__all__ = [
    "BOM",
    "Document",
    "LinePiece",
    "encode_utf8",
    "is_utf8_text",
    "join_lines",
    "split_lines",
]

BOM = b"\xef\xbb\xbf"
_EOL = re.compile(r"(\r\n|\n|\r)")
#: Lines ``[start, end)`` and what replaces them: ``(text, ending)`` pairs, ``None`` meaning the
#: document's dominant ending (see ``Document.replace_lines``).
LinePiece = tuple[int, int, Sequence[tuple[str, str | None]]]


def is_utf8_text(data: bytes) -> bool:
    """True for bytes a line merge or an encoding check may treat as text: no NUL, valid UTF-8."""
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


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


def encode_utf8(text: str, path: str | None = None) -> bytes:
    """UTF-8 bytes of new file content; text that cannot be UTF-8 is the edit's fault."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        # JSON can carry lone surrogates ("\\ud800"), which no UTF-8 file can hold
        where = f"{path}: " if path else ""
        raise InvalidPatch(
            f"{where}the new text has a character that cannot be written as UTF-8 "
            f"({text[exc.start]!r} at offset {exc.start})",
            hint="Send the text as valid Unicode: a lone surrogate escape such as \\ud800 is "
            "not a character.",
            details={"path": path, "offset": exc.start},
        ) from None


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` without their terminators (any of ``\\n``, ``\\r\\n``, ``\\r``)."""
    return list(_split(text)[0])


# Byte order marks of the wide encodings, longest first (UTF-32LE starts like UTF-16LE).
_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32LE"),
    (b"\x00\x00\xfe\xff", "UTF-32BE"),
    (b"\xff\xfe", "UTF-16LE"),
    (b"\xfe\xff", "UTF-16BE"),
)


def _is_wide(data: bytes, bom: bytes, name: str) -> bool:
    """True when ``data`` is text in the wide encoding ``name`` behind its byte order mark."""
    if not data.startswith(bom):
        return False
    try:
        data[len(bom) :].decode(name.lower().replace("utf-", "utf_"))
    except UnicodeDecodeError:
        return False
    return True


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
        wide = next((name for bom, name in _WIDE_BOMS if _is_wide(data, bom, name)), None)
        if wide is not None:
            raise ResourceNotUtf8(
                f"file{where} is {wide} text (it starts with a {wide} byte order mark)",
                hint="Only UTF-8 text files can be edited line by line; replace the file whole, "
                "or convert it to UTF-8 first.",
                details={"path": path, "encoding": wide},
            )
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
        return join_lines(self.lines, self.endings)

    def to_bytes(self, path: str | None = None) -> bytes:
        """Encode back to bytes; an unchanged document gives back exactly the bytes it came from."""
        return self.encode(self.text, path)

    def encode(self, text: str, path: str | None = None) -> bytes:
        """The file bytes for ``text`` with this document's BOM (see ``encode_utf8``)."""
        return (BOM if self.bom else b"") + encode_utf8(text, path)

    @property
    def final_newline(self) -> bool:
        """True when the last line ends with a terminator (False for an empty document)."""
        return bool(self.endings) and self.endings[-1] != ""

    @property
    def eol(self) -> str:
        """The dominant line ending: the most common one, ``\\n`` on a tie or with none."""
        # C-level counts: this runs once per edited file, of any size.
        counts = {e: self.endings.count(e) for e in ("\n", "\r\n", "\r")}
        best = max(counts.values())
        if best == 0 or counts["\n"] == best:
            return "\n"
        return "\r\n" if counts["\r\n"] == best else "\r"

    def __len__(self) -> int:
        return len(self.lines)

    def splice(self, start: int, end: int, new_lines: Sequence[str]) -> Document:
        """Replace lines ``[start, end)`` (0-based) with ``new_lines``.

        Inserted lines take the dominant ending; the lines around keep theirs. The final-newline
        state of the document is preserved (a document without one stays without one).
        """
        if not 0 <= start <= end <= len(self.lines):
            raise ValueError(f"splice range {start}:{end} outside 0:{len(self.lines)}")
        return self.replace_lines([(start, end, [(line, None) for line in new_lines])])

    def replace_lines(
        self, pieces: Sequence[LinePiece], final_newline: bool | None = None
    ) -> Document:
        """Replace several line ranges in one pass: ``(start, end, new lines)`` in document
        order, not overlapping; each new line is ``(text, ending)``, ``None`` for the dominant
        ending.

        Untouched lines keep their endings, and the final-newline state is kept unless
        ``final_newline`` says what it must become.
        """
        eol = self.eol
        lines: list[str] = []
        endings: list[str] = []
        pos = 0
        for start, end, new in pieces:
            lines.extend(self.lines[pos:start])
            endings.extend(self.endings[pos:start])
            for text, ending in new:
                lines.append(text)
                endings.append(eol if ending is None else ending)
            pos = end
        lines.extend(self.lines[pos:])
        endings.extend(self.endings[pos:])
        # Only the file's last line can lack a terminator; if lines now follow it, it needs one.
        if "" in endings[:-1]:
            endings[endings.index("")] = eol
        keep = self.final_newline or not self.lines
        if endings:
            final = keep if final_newline is None else final_newline
            endings[-1] = (endings[-1] or eol) if final else ""
        return Document(tuple(lines), tuple(endings), self.bom)
