"""A large file's new content as its old bytes with a few spans replaced, never copied whole.

A one-line edit of a 50 MB file would otherwise hold the old and the new file at once. A
``Spliced`` keeps the old bytes (which the snapshot holds anyway) and the replacements; the
ones that need the content stream its ``chunks`` (the blob's hash and deflate, the working
file's write) and the rare rest asks ``as_bytes``. The engine makes one only for files of
``LARGE`` bytes or more; every smaller content stays ``bytes``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

__all__ = ["LARGE", "Content", "Spliced", "as_bytes"]

#: From this size on, the byte-level engine returns a ``Spliced`` instead of joined bytes.
LARGE = 1 << 20


class Spliced:
    """``base`` with each ``(start, end, new)`` span replaced by ``new``; spans sorted and
    disjoint. Compares equal to the bytes it stands for."""

    __slots__ = ("_size", "base", "spans")

    def __init__(self, base: bytes, spans: Sequence[tuple[int, int, bytes]]) -> None:
        at = 0
        for start, end, _new in spans:
            if not at <= start <= end <= len(base):
                raise ValueError(f"span {start}:{end} out of order or outside {len(base)} bytes")
            at = end
        self.base = base
        self.spans = tuple(spans)
        self._size = len(base) + sum(len(new) - (end - start) for start, end, new in spans)

    def __len__(self) -> int:
        return self._size

    def chunks(self) -> Iterator[bytes | memoryview]:
        """The content in order: views of ``base`` between the spans, and each replacement."""
        view = memoryview(self.base)
        at = 0
        for start, end, new in self.spans:
            yield view[at:start]
            yield new
            at = end
        yield view[at:]

    def __bytes__(self) -> bytes:
        return b"".join(self.chunks())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Spliced):
            other = bytes(other)
        if not isinstance(other, bytes | bytearray | memoryview):
            return NotImplemented
        if len(other) != self._size:
            return False
        if other is self.base and all(len(new) == end - start for start, end, new in self.spans):
            return all(self.base[start:end] == new for start, end, new in self.spans)
        return bytes(self) == other

    def __hash__(self) -> int:
        return hash(bytes(self))

    def __repr__(self) -> str:
        return f"Spliced({self._size} bytes, {len(self.spans)} spans)"


#: A file's content as the stages pass it on: bytes, or a large file's ``Spliced``.
Content = bytes | Spliced


def as_bytes(content: Content) -> bytes:
    """``content`` as one bytes object (a copy for a ``Spliced``: for the rare paths only)."""
    return content if isinstance(content, bytes) else bytes(content)
