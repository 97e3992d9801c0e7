"""Large blobs as loose objects, read and written with ``hashlib`` and ``zlib``.

libgit2 reads a blob by inflating it into its own buffer, checking its id with its
collision-detecting SHA-1 and then copying it into Python; it writes one the same way in
reverse. On a 50 MB file that is about a second for the read alone. A loose object is
``zlib("blob <size>\\0" + content)`` in ``objects/xx/yyyy...``, so for large blobs this module
does what git itself does: inflate straight into the one bytes object the caller gets, hash
with OpenSSL's SHA-1 (several times faster), deflate at git's loose-object level while it
hashes, and write through a temp file renamed into place (fsync'd when the repository asks
git to fsync loose objects). Anything unusual (a packed object, an alternate, a header that
is not a blob's, an id that does not match) is left to libgit2: ``read_blob`` returns None.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import zlib
from pathlib import Path

from gitpatch.core.spliced import Content

__all__ = ["LARGE", "blob_id", "chunks_of", "read_blob", "write_blob"]

#: From this size on, the store reads and writes blobs here rather than through libgit2.
LARGE = 1 << 20
#: git's default ``core.looseCompression`` (``Z_BEST_SPEED``).
DEFAULT_LEVEL = 1
_CHUNK = 1 << 20


#: The last large content ``blob_id`` hashed and its id: the fingerprint hashes a new file's
#: content just before the tree takes it, and one SHA-1 of it is enough (by identity, the
#: same object; taken by the write that uses it).
_known: list[tuple[Content, str]] = []


def chunks_of(content: Content) -> tuple[bytes | memoryview, ...]:
    """``content`` as the chunks ``write_blob`` takes."""
    return (content,) if isinstance(content, bytes) else tuple(content.chunks())


def blob_id(content: Content) -> str:
    """git's blob id of ``content`` (``hashlib``: several times faster than libgit2's
    collision-detecting SHA-1 on a large file); a large one is remembered for ``write_blob``."""
    digest = hashlib.sha1(b"blob %d\0" % len(content))
    for chunk in chunks_of(content):
        digest.update(chunk)
    hexid = digest.hexdigest()
    if len(content) >= LARGE:
        _known[:] = [(content, hexid)]
    return hexid


def _known_id(content: Content) -> str | None:
    known = _known[:1]
    if known and known[0][0] is content:
        _known.clear()
        return known[0][1]
    return None


def _path(objects: Path, hexid: str) -> Path:
    return objects / hexid[:2] / hexid[2:]


def read_blob(objects: Path, hexid: str) -> bytes | None:
    """The content of loose blob ``hexid`` under ``objects``, checked against its id; None
    when it is not a loose blob there or does not check out (libgit2 then reads or refuses)."""
    try:
        with open(_path(objects, hexid), "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                return None
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as raw:
                return _inflate(raw, hexid)
    except (OSError, ValueError, zlib.error):
        return None


def _inflate(raw: mmap.mmap, hexid: str) -> bytes | None:
    head = zlib.decompressobj().decompress(raw, 64)
    end = head.find(b"\0")
    kind, _, size = head[:end].partition(b" ")
    if end < 0 or kind != b"blob" or not size.isdigit():
        return None
    inflater = zlib.decompressobj()
    header = inflater.decompress(raw, end + 1)
    # flush() inflates the rest into one buffer of the size given: the content, never copied
    content = inflater.flush(int(size)) if int(size) else b""
    if len(content) != int(size) or not inflater.eof:
        return None
    digest = hashlib.sha1(header)
    digest.update(content)
    return content if digest.hexdigest() == hexid else None


def write_blob(
    objects: Path,
    content: Content,
    *,
    level: int = DEFAULT_LEVEL,
    durable: bool = False,
) -> str:
    """Write the blob ``content`` (bytes, or a ``Spliced`` streamed chunk by chunk) as a loose
    object; its hex id.

    An object already there is kept (same id, same content). OS errors propagate: the caller
    names them (a full disk is ``filesystem_error``); the temp file never stays behind.
    """
    known = _known_id(content)
    if known is not None and _path(objects, known).exists():
        return known  # the same content again (a revert, a replay): nothing to write
    size = len(content)
    digest = hashlib.sha1(b"blob %d\0" % size)
    deflater = zlib.compressobj(level)
    objects.mkdir(exist_ok=True)
    fd, tmp = _temp(objects)
    try:
        with os.fdopen(fd, "wb") as out:  # buffered: every write is whole
            out.write(deflater.compress(b"blob %d\0" % size))
            written = 0
            for chunk in chunks_of(content):
                view = memoryview(chunk)
                for start in range(0, len(view), _CHUNK):
                    part = view[start : start + _CHUNK]
                    if known is None:
                        digest.update(part)
                    out.write(deflater.compress(part))
                written += len(view)
            if written != size:
                raise ValueError(f"blob of {written} bytes announced as {size}")
            out.write(deflater.flush())
            out.flush()
            if durable:
                os.fsync(out.fileno())
        hexid = known or digest.hexdigest()
        final = _path(objects, hexid)
        final.parent.mkdir(exist_ok=True)
        if final.exists():
            os.unlink(tmp)
        else:
            os.chmod(tmp, 0o444)
            os.replace(tmp, final)
            if durable:
                _fsync_dir(final.parent)
        return hexid
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _temp(objects: Path) -> tuple[int, str]:
    import tempfile

    # named as libgit2 names its own, so recovery sweeps one a kill left (safety.recovery)
    return tempfile.mkstemp(prefix="tmp_object_git2_", dir=objects)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
