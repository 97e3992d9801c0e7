"""File modes between git and the disk: what a checkout gives a file, what ``git add`` records."""

from __future__ import annotations

import os
import stat

import pygit2

__all__ = ["EXECUTABLE", "REGULAR", "disk_mode", "file_mode"]

EXECUTABLE = int(pygit2.enums.FileMode.BLOB_EXECUTABLE)
REGULAR = int(pygit2.enums.FileMode.BLOB)


def _umask() -> int:
    # os.umask can only be read by setting it; do it once and put it straight back.
    current = os.umask(0o022)
    os.umask(current)
    return current


_UMASK = _umask()


def file_mode(git_mode: int) -> int:
    """The permission bits checkout gives a file of ``git_mode`` (the umask applied)."""
    base = 0o777 if git_mode == EXECUTABLE else 0o666
    return base & ~_UMASK


def disk_mode(st: os.stat_result, trust_executable_bit: bool) -> int | None:
    """The git mode ``git add`` records for a file with stat ``st``; None when that is not
    the disk's to say (not a regular file, or ``core.fileMode`` false: git keeps the mode)."""
    if not stat.S_ISREG(st.st_mode) or not trust_executable_bit:
        return None
    return EXECUTABLE if st.st_mode & 0o100 else REGULAR
