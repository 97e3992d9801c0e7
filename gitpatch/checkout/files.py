"""Writing working-tree files for ``gitpatch.checkout.worktree``: temp file, fsync, rename.

A file is replaced by a temp file (``.<name>.<pid>.<ns>.gitpatch-tmp``, written by
``safety.atomic``), fsynced and renamed over it, so a reader sees the old or the new content,
never a truncated file. The temp file lives where git never lists it as untracked (a person's
``git add -A`` during a land would commit it): in ``<git dir>/gitpatch/tmp`` when that is on
the file system of the file's folder (a rename across file systems is not atomic), else beside
the file with ``*.gitpatch-tmp`` in ``info/exclude``. A kill leaves at most a temp file, which
the next land removes. File modes between git and the disk live here too: what a checkout
gives a file (``file_mode``), what ``git add`` records (``disk_mode``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import stat
from collections.abc import Iterable
from pathlib import Path

import pygit2

from gitpatch.core.spliced import Content
from gitpatch.safety import atomic
from gitpatch.safety.atomic import TMP_SUFFIX
from gitpatch.safety.owners import common_dir

__all__ = [
    "EXECUTABLE",
    "KEPT_PREFIX",
    "REGULAR",
    "TMP_SUFFIX",
    "Staging",
    "check_room_for_index",
    "disk_mode",
    "file_mode",
    "remove_temp_files",
]

_EXCLUDE = f"*{TMP_SUFFIX}"
#: How the temp files holding a file a land replaced begin (``saves.Kept``): they may hold
#: a person's save, so clearing temp files leaves them to ``saves.recover``.
KEPT_PREFIX = ".kept."

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


class Staging:
    """Where the temp files of one checkout go (see the module docstring)."""

    def __init__(self, gitdir: Path) -> None:
        self.gitdir = gitdir
        self.folder = gitdir / "gitpatch" / "tmp"
        self._devices: dict[Path, bool] = {}  # folder -> on the git dir's file system

    def where(self, full: Path) -> Path | None:
        """The folder for the temp file of ``full``; None: beside it (excluded)."""
        parent = full.parent
        same = self._devices.get(parent)
        if same is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            same = os.stat(parent).st_dev == os.stat(self.folder).st_dev
            self._devices[parent] = same
            if not same:
                self._exclude()
        return self.folder if same else None

    def _exclude(self) -> None:
        """``*.gitpatch-tmp`` in ``info/exclude``, so git never lists a temp file beside the
        file it replaces (a folder on another file system than the git dir)."""
        exclude = common_dir(str(self.gitdir)) / "info" / "exclude"
        try:
            text = exclude.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = ""
        if _EXCLUDE in text.splitlines():
            return
        exclude.parent.mkdir(parents=True, exist_ok=True)
        sep = "" if not text or text.endswith("\n") else "\n"
        with open(exclude, "a", encoding="utf-8") as fh:
            fh.write(f"{sep}# temp files of gitpatch lands on another file system\n{_EXCLUDE}\n")

    def temp_file(self, full: Path, data: Content, mode: int, *, fsync: bool = True) -> Path:
        """A temp file for ``full`` holding ``data`` with git ``mode``'s permissions, fsynced
        unless ``fsync`` is False (``safety.atomic``, the one atomic write)."""
        where = self.where(full)
        return atomic.temp_file(full, data, file_mode(mode), fsync=fsync, folder=where)

    def clear(self, root: Path, paths: Iterable[str]) -> None:
        """Drop the temp files a killed land left (here, and beside ``paths``), but not the
        files it kept (``saves.Kept``)."""
        with contextlib.suppress(OSError):
            for name in os.listdir(self.folder):
                if name.startswith(KEPT_PREFIX):
                    continue
                with contextlib.suppress(OSError):
                    (self.folder / name).unlink()
        remove_temp_files(root, paths)

    def left(self) -> bool:
        """True when a temp file is waiting in the git dir's folder (a killed land's)."""
        try:
            return bool(os.listdir(self.folder))
        except OSError:
            return False


def remove_temp_files(root: Path, paths: Iterable[str]) -> None:
    """Drop temp files a killed land left next to ``paths``."""
    for parent in {(root / p).parent for p in paths}:
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            if name.endswith(TMP_SUFFIX) and not name.startswith(KEPT_PREFIX):
                with contextlib.suppress(OSError):
                    (parent / name).unlink()


def check_room_for_index(gitdir: Path) -> None:
    """Make sure the disk and this process's file size limit leave room for a new copy of
    the index before a land writes anything (``OSError`` otherwise)."""
    index = gitdir / "index"
    size = index.stat().st_size if index.exists() else 0
    st = os.statvfs(gitdir)
    if st.f_bavail * st.f_frsize < size + 65536:
        raise OSError(errno.ENOSPC, "no room for a new index", str(index))
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    if limit != resource.RLIM_INFINITY and limit < size + 65536:
        raise OSError(errno.EFBIG, "the index would pass the file size limit", str(index))
