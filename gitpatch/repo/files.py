"""Writing working-tree files for ``gitpatch.repo.worktree``: temp file, fsync, rename.

A file is replaced by a temp file next to it (``.<name>.<pid>.<ns>.gitpatch-tmp``), written,
fsynced and renamed over it, so a reader sees the old or the new content, never a truncated
file; a kill leaves at most a temp file, which the next land removes. ``refused`` turns an OS
error while writing into the error a caller can act on (``write_failed`` for a full or
read-only disk).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable
from pathlib import Path

import pygit2

from gitpatch.errors import GitpatchError, RepositoryError, write_failed

__all__ = ["TMP_SUFFIX", "refused", "remove_temp_files", "temp_file"]

TMP_SUFFIX = ".gitpatch-tmp"
_EXEC_MODES = (pygit2.enums.FileMode.BLOB_EXECUTABLE,)


def _umask() -> int:
    # os.umask can only be read by setting it; do it once and put it straight back.
    current = os.umask(0o022)
    os.umask(current)
    return current


_UMASK = _umask()


def _file_mode(git_mode: int) -> int:
    base = 0o777 if git_mode in _EXEC_MODES else 0o666
    return base & ~_UMASK


def temp_file(full: Path, data: bytes, mode: int) -> Path:
    """A fsynced temp file next to ``full`` holding ``data`` with git ``mode``'s permissions."""
    tmp = full.parent / f".{full.name}.{os.getpid()}.{time.monotonic_ns()}{TMP_SUFFIX}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _file_mode(mode))
    try:
        with os.fdopen(fd, "wb", closefd=False) as fh:
            fh.write(data)
            fh.flush()
        os.fchmod(fd, _file_mode(mode))
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    return tmp


def remove_temp_files(root: Path, paths: Iterable[str]) -> None:
    """Drop temp files a killed land left next to ``paths``."""
    for parent in {(root / p).parent for p in paths}:
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            if name.endswith(TMP_SUFFIX):
                with contextlib.suppress(OSError):
                    (parent / name).unlink()


def refused(what: str, exc: OSError) -> GitpatchError:
    """The error for an OS error while writing ``what``: ``write_failed`` when the disk refused
    (full, read-only, quota), else ``repository_error``."""
    return write_failed(what, exc) or RepositoryError(
        f"could not write {what}: {exc.strerror or exc}",
        hint="Check the permissions of the repository and its working tree, then retry.",
        details={"what": what},
    )
