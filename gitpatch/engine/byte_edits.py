"""patch_resource replacements made on a file's bytes, for files of any size.

The text path (``gitpatch.engine.text_edits``) decodes the file, builds its ``Document`` and
joins it back: several times the file's size in memory and seconds for a file of 50 MB. An
update made only of ``Replace`` edits on an LF-only UTF-8 file without BOM needs none of that:
UTF-8 is self-synchronising, so the byte matches of ``old_string`` are exactly its text
matches, and the new file is the old bytes around the new ones, built in one allocation.

Whatever is not that simple returns None and the text path decides, with its messages: no
match or several without ``replace_all`` (the errors carry hints), CR in the file or the
edit (line-ending rules), a BOM, binary or invalid UTF-8 content, text that cannot be UTF-8,
and a match reaching the end of the file (the final-newline rule).
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence

from gitpatch.core.budget import checkpoint
from gitpatch.core.model import Edit, EditReport, Replace
from gitpatch.core.spliced import LARGE, Content, Spliced, as_bytes
from gitpatch.core.text import BOM

__all__ = ["replace_on_bytes"]

_CHUNK = 1 << 22


def replace_on_bytes(
    path: str, data: bytes, edits: Sequence[Edit]
) -> tuple[Content, list[EditReport]] | None:
    """The new bytes and reports of ``edits`` (all ``Replace``) on ``data``, or None when the
    text path must do it (see the module docstring). Results are the text path's, byte for
    byte; a large file's last edit gives a ``Spliced`` (the file is never copied whole)."""
    if not edits or not all(isinstance(e, Replace) for e in edits):
        return None
    if data.startswith(BOM) or b"\r" in data or b"\x00" in data or not _is_utf8(data):
        return None
    current: Content = data
    reports: list[EditReport] = []
    for index, edit in enumerate(edits):
        checkpoint()
        assert isinstance(edit, Replace)
        step = _replace(as_bytes(current), edit, spliced=index == len(edits) - 1)
        if step is None:
            return None
        current, first, last = step
        reports.append(EditReport(path, index, first, last, "exact"))
    return current, reports


def _replace(data: bytes, edit: Replace, *, spliced: bool) -> tuple[Content, int, int] | None:
    try:
        old, new = edit.old.encode("utf-8"), edit.new.encode("utf-8")
    except UnicodeEncodeError:
        return None
    if b"\r" in old or b"\r" in new:
        return None
    spans = _find(data, old)
    checkpoint()
    if not spans or (len(spans) > 1 and not edit.replace_all) or spans[-1][1] >= len(data):
        return None
    first = data.count(b"\n", 0, spans[0][0]) + 1
    last_at = max(spans[-1][0], spans[-1][1] - 1)
    last = data.count(b"\n", 0, last_at) + 1
    if spliced and len(data) >= LARGE:
        return Spliced(data, [(start, end, new) for start, end in spans]), first, last
    view = memoryview(data)
    pieces: list[bytes | memoryview] = []
    pos = 0
    for start, end in spans:
        pieces += (view[pos:start], new)
        pos = end
        if not len(pieces) & 8191:
            checkpoint()
    pieces.append(view[pos:])
    out = b"".join(pieces)
    view.release()
    return out, first, last


def _find(data: bytes, needle: bytes) -> list[tuple[int, int]]:
    """Non-overlapping spans of ``needle``, leftmost first (as ``match.find_substring``)."""
    out: list[tuple[int, int]] = []
    at = data.find(needle)
    while at >= 0:
        out.append((at, at + len(needle)))
        if not len(out) & 4095:
            checkpoint()
        at = data.find(needle, at + len(needle))
    return out


def _is_utf8(data: bytes) -> bool:
    """True when ``data`` is valid UTF-8, checked in chunks (no copy of the whole file)."""
    if data.isascii():
        return True
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    try:
        for at in range(0, len(data), _CHUNK):
            decoder.decode(view[at : at + _CHUNK])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    finally:
        view.release()
    return True
