"""Atomic file writes: temp file next to the target, written, fsynced, renamed over it.

The one way gitpatch replaces a file it owns: working-tree files (``checkout.files``), the
land journal (``recovery.Journal``), the hosted service's credentials file (0600: the temp file
has its permissions from the first byte) and a space's generation seed. A reader sees the old
content or the new, never a truncated file; a kill leaves at most a temp file named
``.<name>.<pid>.<ns>.gitpatch-tmp`` beside the target, which its owner's recovery removes.

What this does not do: decide whether the directory must be fsynced too (``durable``: the
caller knows whether git was asked to fsync what the file guards) or retry a failed write.
"""

from __future__ import annotations

import ctypes
import errno
import os
import time
from pathlib import Path

from gitpatch.core.spliced import Content

__all__ = ["TMP_SUFFIX", "exchange", "fsync_dir", "temp_file", "write_atomic"]

#: How every temp file gitpatch writes ends (recovery looks for it).
TMP_SUFFIX = ".gitpatch-tmp"


def temp_file(
    target: Path,
    data: Content,
    perms: int = 0o644,
    *,
    fsync: bool = True,
    folder: Path | None = None,
) -> Path:
    """A new temp file beside ``target`` (or in ``folder``, on the same file system) holding
    ``data`` with permissions ``perms`` (fsynced unless ``fsync`` is False); removed again if
    writing it fails. A ``Spliced`` is written chunk by chunk, never joined."""
    where = target.parent if folder is None else folder
    tmp = where / f".{target.name}.{os.getpid()}.{time.monotonic_ns()}{TMP_SUFFIX}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, perms)
    try:
        for chunk in (data,) if isinstance(data, bytes) else data.chunks():
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]
        os.fchmod(fd, perms)  # the umask narrowed what os.open was given
        if fsync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    return tmp


def write_atomic(target: Path, data: bytes, perms: int = 0o644, *, durable: bool = True) -> None:
    """Replace ``target`` with ``data`` by temp file and rename; with ``durable`` the file and
    then its directory are fsynced, so the rename survives a power loss."""
    tmp = temp_file(target, data, perms, fsync=durable)
    try:
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(target.parent)


def fsync_dir(folder: Path) -> None:
    """fsync a directory, so a rename or unlink in it survives a power loss."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_libc = ctypes.CDLL(None, use_errno=True)
_renameat2 = getattr(_libc, "renameat2", None)
#: errnos that say the kernel, libc or file system cannot exchange (then a plain rename is used)
_NO_EXCHANGE = (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP)


def exchange(src: Path, dst: Path) -> bool:
    """Put ``src`` at ``dst`` in one step and ``dst``'s file at ``src``'s name, so what was
    replaced is kept, whatever wrote it a moment before (Linux ``renameat2`` with
    ``RENAME_EXCHANGE``). When ``dst`` does not exist, ``src`` is renamed there unless
    something appears first (``FileExistsError``). False when this system or file system
    cannot exchange; nothing moved then."""
    if _renameat2 is None:
        return False
    flags = _RENAME_EXCHANGE if os.path.lexists(dst) else _RENAME_NOREPLACE
    done = _renameat2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags)
    if done == 0:
        return True
    err = ctypes.get_errno()
    if err in _NO_EXCHANGE:
        return False
    if err == errno.ENOENT and flags == _RENAME_EXCHANGE and not os.path.lexists(dst):
        return exchange(src, dst)  # dst went meanwhile: a rename
    raise OSError(err, os.strerror(err), str(dst))
