"""The files a land replaced, kept until the land is over, for ``gitpatch.checkout.saves``.

A land's rename swaps its new file with the person's (``atomic.exchange``), so the replaced
file survives the rename; the land checks it right away. An editor that opened the file before
the rename (``O_APPEND``, as a log or an autosave does) may still write to it after that check:
the write goes to the replaced file. So the replaced file is kept, under a name that says what
it held when checked, until the land is over (index written, branch moved), then checked once
more (``saves.settle``). The name is given before the swap, so a kill at any point leaves a file
that recovery recognises and settles the same way (``saves.recover``):
``.kept.<path key>.<blob checked>.<blob the land wrote>.<size checked>.<pid>.<ns>.gitpatch-tmp``,
in ``.git/gitpatch/tmp`` (or beside the file when that folder is on another file system).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gitpatch.checkout.files import KEPT_PREFIX, TMP_SUFFIX

__all__ = ["Kept", "Mark", "found", "key", "name"]

#: What tells a file from any later save of it (``saves.mark``): (inode, size, mtime), a
#: digest of its bytes, or None.
Mark = tuple[int, int, int] | str | None


def key(path: str) -> str:
    """A short stable key of a repository path, for a kept file's name."""
    return hashlib.sha1(path.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def name(src: Path, path: str, expect: str | None, wrote: str, size: int, folder: Path) -> Path:
    """Rename ``src`` into ``folder`` under the name of a kept file: the land's new file for
    ``path``, which once swapped holds the file that held the blob ``expect`` (``size`` bytes)
    when the land checked it, ``wrote`` being what the land put in its place ("none": the
    land deletes ``path``, and ``src`` is the file itself)."""
    kept = folder / (
        f"{KEPT_PREFIX}{key(path)}.{expect or 'none'}.{wrote}.{size}."
        f"{os.getpid()}.{time.monotonic_ns()}{TMP_SUFFIX}"
    )
    os.rename(src, kept)
    return kept


@dataclass(frozen=True)
class Kept:
    """One kept file: the file ``file`` replaced at ``path`` held ``expect`` (``size`` bytes,
    -1 unknown) when the land checked it, and the land wrote ``wrote`` in its place; ``mark``
    (``saves.mark``, taken right before that check) or, when None, its content tells whether
    anything wrote to it since."""

    path: str
    file: Path
    expect: str | None
    wrote: str
    size: int
    mark: Mark = None

    @classmethod
    def of(cls, file: Path, path: str | None, mark: Mark = None) -> Kept | None:
        """The kept file ``file`` read from its name (None when it is not one); ``path`` is
        the repository path its key names (None: unknown, an orphan)."""
        parts = file.name[len(KEPT_PREFIX) : -len(TMP_SUFFIX)].split(".")
        if not file.name.startswith(KEPT_PREFIX) or len(parts) != 6:
            return None
        _key, expect, wrote, size = parts[:4]
        try:
            count = int(size)
        except ValueError:
            return None
        return cls(path or "", file, None if expect == "none" else expect, wrote, count, mark)

    def key(self) -> str:
        """The path key in this file's name."""
        return self.file.name[len(KEPT_PREFIX) :].split(".", 1)[0]


def found(folders: Iterable[Path]) -> list[Path]:
    """The kept files in ``folders`` (a killed land's)."""
    out: list[Path] = []
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        out += [folder / n for n in names if n.startswith(KEPT_PREFIX) and n.endswith(TMP_SUFFIX)]
    return out
