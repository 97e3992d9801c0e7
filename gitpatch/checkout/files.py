"""Writing working-tree files for ``gitpatch.checkout.worktree``: temp file, fsync, rename.

A file is replaced by a temp file next to it (``.<name>.<pid>.<ns>.gitpatch-tmp``, written by
``safety.atomic``), fsynced and renamed over it, so a reader sees the old or the new content,
never a truncated file; a kill leaves at most a temp file, which the next land removes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from gitpatch.checkout._modes import file_mode
from gitpatch.safety import atomic
from gitpatch.safety.atomic import TMP_SUFFIX

__all__ = ["TMP_SUFFIX", "remove_temp_files", "temp_file"]


def temp_file(full: Path, data: bytes, mode: int) -> Path:
    """A fsynced temp file next to ``full`` holding ``data`` with git ``mode``'s permissions
    (``safety.atomic``, the one atomic write)."""
    return atomic.temp_file(full, data, file_mode(mode))


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
