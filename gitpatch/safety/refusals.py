"""A disk refusing a write (full, read-only, quota, file size limit) as ``filesystem_error``.

``write_failed`` recognises the refusal in an OS error or in libgit2's words and names what
could not be written; ``refused`` does the same for any OS error met while writing.
"""

from __future__ import annotations

import errno

from gitpatch.errors import FilesystemError

__all__ = ["refused", "write_failed"]

_REFUSALS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.EROFS: "the file system is read-only",
    errno.EFBIG: "the file is larger than this process may write",
}
_REFUSAL_TEXTS = {
    "No space left": errno.ENOSPC,
    "Disk quota": errno.EDQUOT,
    "Read-only file system": errno.EROFS,
    "File too large": errno.EFBIG,
}


def write_failed(what: str, exc: BaseException) -> FilesystemError | None:
    """``filesystem_error`` naming ``what`` when ``exc`` is the disk refusing a write, else None."""
    code = exc.errno if isinstance(exc, OSError) else None
    if code not in _REFUSALS:
        text = str(exc)
        code = next((c for t, c in _REFUSAL_TEXTS.items() if t in text), None)
    if code is None:
        return None
    return FilesystemError(
        f"could not write {what}: {_REFUSALS[code]}; nothing was changed",
        hint="Free some space (or make the file system writable), then retry the same call; "
        "gitpatch cleans up what the failed write left.",
        details={"path": what, "errno": errno.errorcode[code]},
    )


def refused(what: str, exc: OSError) -> FilesystemError:
    """The error for any OS error met while writing ``what`` (see ``write_failed``)."""
    return write_failed(what, exc) or FilesystemError.of(what, exc)
