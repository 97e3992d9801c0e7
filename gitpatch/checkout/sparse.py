"""Skip-worktree entries: files of a sparse checkout (or hidden with ``--skip-worktree``).

git takes such a file's content from the index, never from the disk (it is usually absent),
so gitpatch reads it from the commit, never records it as deleted, and lands a change to it
in the index only, keeping the bit, without writing the disk. libgit2 drops the bit of an
entry it replaces, so the entries are updated with ``git update-index``.

A sparse index (``index.sparse``) holds a whole directory outside the cone as one entry.
``git update-index --index-info`` adds a file entry inside such a directory WITHOUT expanding
it (git 2.39): the index would then list both ``b/`` and ``b/g.txt``, and the person's next
commit would record a tree with duplicate entries. Every ``--index-info`` therefore runs with
``index.sparse=false`` when the index is sparse (``expanding``): git expands the index as any
command that is not sparse-aware does, and the next write with the person's setting collapses
what can be collapsed again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import pygit2

from gitpatch.checkout import gitbin, indexfile
from gitpatch.safety.crashpoints import crashpoint

__all__ = ["expanding", "skipped", "update_entries"]

_NULL = "0" * 40


def skipped(gitdir: Path, root: Path, paths: Iterable[str]) -> set[str]:
    """Those of ``paths`` whose index entry has the skip-worktree bit.

    The bit lives in the extended entry flags, which need index version 3 or 4: a version 2
    index (the usual one) answers at once, without starting git.
    """
    wanted = list(paths)
    if not wanted or _index_version(gitdir) < 3:
        return set()
    stamp, known = _CACHE.get(str(gitdir), (None, {}))
    now = _stamp(gitdir)
    if stamp != now:
        known = {}
        _CACHE[str(gitdir)] = (now, known)
    asked = [p for p in dict.fromkeys(wanted) if p not in known]
    if asked:
        out = gitbin.run(
            str(gitdir), str(root), ["--literal-pathspecs", "ls-files", "-t", "-z", "--", *asked]
        )
        rows = out.decode("utf-8", "surrogateescape").split("\0")
        hidden = {row[2:] for row in rows if row.startswith("S ")}
        known.update((p, p in hidden) for p in asked)
    return {p for p in wanted if known[p]}


# git directory -> (index file stamp, path -> has the bit): the bits change only with the index
# file, which git and libgit2 always replace (a new inode), so its stat tells a new one.
_CACHE: dict[str, tuple[tuple[int, int, int] | None, dict[str, bool]]] = {}


def _stamp(gitdir: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(gitdir / "index")
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def update_entries(
    gitdir: Path, root: Path, tree: pygit2.Tree | None, paths: Sequence[str], index: str
) -> None:
    """Point the entries of ``paths`` at their blobs in ``tree`` (removing the ones it lacks),
    the skip-worktree bit kept; the disk is not touched. ``index``: the land's scratch index
    (``checkout.index``): the two git steps below reach the real index in one rename, so
    a kill between them never leaves an entry without its bit."""
    if not paths:
        return
    lines = []
    kept = []
    for path in paths:
        obj = _blob(tree, path)
        if obj is None:
            lines.append(f"0 {_NULL}\t{path}\0")
        else:
            lines.append(f"{int(obj.filemode):o} {obj.id}\t{path}\0")
            kept.append(path)
    run = gitbin.run
    info = [*expanding(index), "update-index", "-z", "--index-info"]
    run(str(gitdir), str(root), info, _bytes("".join(lines)), index=index)
    crashpoint("index.skip_worktree")
    if kept:
        stdin = _bytes("".join(f"{p}\0" for p in kept))
        args = ["update-index", "-z", "--skip-worktree", "--stdin"]
        run(str(gitdir), str(root), args, stdin, index=index)


def expanding(index: str) -> list[str]:
    """git options that make an index-writing command expand a sparse index first (empty
    for any other index): see the module docstring. ``index``: the index file's path."""
    try:
        sparse_index = "sdir" in indexfile.read_mandatory_extensions(index)
    except (OSError, indexfile.Unsupported):
        sparse_index = False
    return ["-c", "index.sparse=false"] if sparse_index else []


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _blob(tree: pygit2.Tree | None, path: str) -> pygit2.Object | None:
    if tree is None:
        return None
    try:
        obj = tree[path]
    except KeyError:
        return None
    return obj if obj.type == pygit2.enums.ObjectType.BLOB else None


def _index_version(gitdir: Path) -> int:
    try:
        with open(gitdir / "index", "rb") as fh:
            header = fh.read(8)
    except OSError:
        return 0
    return int.from_bytes(header[4:8], "big") if header[:4] == b"DIRC" else 0
