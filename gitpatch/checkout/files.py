"""Writing working-tree files for ``gitpatch.checkout.worktree``: temp file, fsync, rename.

A file is replaced by a temp file next to it (``.<name>.<pid>.<ns>.gitpatch-tmp``, written by
``safety.atomic``), fsynced and renamed over it, so a reader sees the old or the new content,
never a truncated file; a kill leaves at most a temp file, which the next land removes.
``Flush`` fsyncs a land's staged temp files in a thread of its own while the refs move; the
land waits for it before the first rename.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from gitpatch.checkout._modes import file_mode
from gitpatch.safety import atomic
from gitpatch.safety.atomic import TMP_SUFFIX

__all__ = ["TMP_SUFFIX", "Flush", "remove_temp_files", "temp_file"]


def temp_file(full: Path, data: bytes, mode: int, *, fsync: bool = True) -> Path:
    """A temp file next to ``full`` holding ``data`` with git ``mode``'s permissions, fsynced
    unless ``fsync`` is False (then ``Flush`` does it; ``safety.atomic``, the one atomic write)."""
    return atomic.temp_file(full, data, file_mode(mode), fsync=fsync)


class Flush:
    """fsync ``paths`` (written, closed temp files) in a thread; ``wait`` for it to finish,
    raising the first ``OSError`` it met. The disk's wait then overlaps the ref transaction
    instead of adding to it; every file is still on disk before it is renamed into place."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self._error: OSError | None = None
        self._thread: threading.Thread | None = None
        if paths:
            self._thread = threading.Thread(target=self._run, args=(list(paths),), daemon=True)
            self._thread.start()

    def _run(self, paths: list[Path]) -> None:
        for path in paths:
            try:
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as exc:
                self._error = self._error or exc

    def wait(self) -> None:
        """Block until every file is fsynced; its first failure raises here."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            raise self._error


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
