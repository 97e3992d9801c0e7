"""Bringing the index entries of landed paths up to date, the cheapest way that stays exact.

Every write goes through the land's held ``index.lock`` (``checkout.indexlock``), committed by
one rename after the branch moved. Three ways, tried in order by ``sync``:

1. patch: when every path is an existing plain entry of a regular file that keeps existing,
   with no conversion between disk and blob (no ``core.autocrlf``, ``text``, ``eol``,
   ``filter``, ``ident`` or ``working-tree-encoding`` attribute), only those entries change,
   in a copy of the index bytes (``gitpatch.indexfile``): no whole-index rewrite.
2. git: everything else (and always an index libgit2 cannot read: split index
   ``core.splitIndex``, sparse index ``index.sparse``, in any index version) is updated by the
   ``git`` binary itself on the held index's scratch copy (``git update-index``, as ``git add``
   does), which keeps the format the user chose.
3. libgit2, only when there is no git binary: the whole index rewritten by libgit2, which
   takes ``index.lock`` itself, so the held lock is released for it (the one gap left).

``check_writable`` is the pre-flight: it refuses, before anything moves, an index that only
git can write when no ``git`` binary is found.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Mapping, Sequence

import pygit2

from gitpatch.checkout import gitbin, indexfile, sparse
from gitpatch.checkout.indexlock import HeldIndex
from gitpatch.errors import RepositoryError
from gitpatch.safety.locks import retry_locked

__all__ = ["check_writable", "index_path", "needs_git", "plain_entries", "recorded_blob", "sync"]

_SETTINGS = {"link": "core.splitIndex", "sdir": "index.sparse"}
_NULL_ID = "0" * 40


def index_path(repo: pygit2.Repository) -> str:
    """The index file of ``repo``'s working tree (a linked worktree has its own)."""
    return os.path.join(repo.path, "index")


def needs_git(repo: pygit2.Repository) -> list[str]:
    """The mandatory extensions of the index that libgit2 cannot read (``link``, ``sdir``)."""
    try:
        return indexfile.read_mandatory_extensions(index_path(repo))
    except (FileNotFoundError, indexfile.Unsupported):
        return []


def check_writable(repo: pygit2.Repository) -> None:
    """Refuse (``repository_error``, reason ``unsupported_index``) an index only the ``git``
    binary can update when there is no ``git`` on PATH; run before anything moves."""
    mandatory = needs_git(repo)
    if not mandatory or gitbin.available():
        return
    settings = sorted({_SETTINGS.get(ext, f"the {ext!r} extension") for ext in mandatory})
    raise RepositoryError(
        f"the index uses {', '.join(settings)}, which only the git binary can update, and "
        "no git command was found",
        hint=f"Install git, or turn {' and '.join(settings)} off and rewrite the index "
        "(for example `git config core.splitIndex false && git update-index --no-split-index`"
        ", or `git sparse-checkout init --no-sparse-index`).",
        details={"reason": "unsupported_index", "settings": settings, "extensions": mandatory},
    )


def sync(
    repo: pygit2.Repository,
    held: HeldIndex,
    index: Callable[[], pygit2.Index],
    old: pygit2.Tree | None,
    new: pygit2.Tree | None,
    landed: Sequence[str],
    kept: Sequence[str],
    written: Mapping[str, os.stat_result],
    converts: Callable[[str], bool],
) -> None:
    """Point the index entries of ``landed`` (on disk as in ``new``) and ``kept`` (on disk with
    someone else's content) at ``new`` in ``held``; only ``landed`` entries get fresh stat data.

    ``index()`` gives libgit2's index, up to date with the file. ``written``: the ``fstat``
    of the files the land wrote, taken before their rename; a file whose inode, size or mtime
    differ afterwards was changed by someone else since, and is not patched in place.
    ``converts(path)``: whether git may convert the path (``Filters.converts``); such paths
    are never patched in place.
    """
    if needs_git(repo):
        _with_git(repo, held, new, landed, kept)
    elif not kept and _patch(repo, held, old, new, landed, written, converts):
        return
    elif gitbin.available():
        _with_git(repo, held, new, landed, kept)
    else:
        held.handover(lambda: _with_libgit2(index(), new, landed, kept))


def _with_libgit2(
    index: pygit2.Index, new: pygit2.Tree | None, landed: Sequence[str], kept: Sequence[str]
) -> None:
    """libgit2's way: change the entries in memory and rewrite the whole index."""
    for path in [*landed, *kept]:
        want = _blob(new, path) if new is not None else None
        if want is None:
            with contextlib.suppress(OSError, KeyError):
                index.remove(path)
            continue
        entry = pygit2.IndexEntry(path, want.id, pygit2.enums.FileMode(want.filemode))
        if path in kept:
            index.add(entry)
            continue
        index.add(path)
        # A clean filter (autocrlf, text=auto) may have hashed the file differently from
        # the blob gitpatch committed; the index must name the committed blob.
        if index[path].id != want.id:
            index.add(entry)
    retry_locked(index.write)


def recorded_blob(
    repo: pygit2.Repository, path: str, st: os.stat_result, converts: Callable[[str], bool]
) -> str | None:
    """The blob id (hex) the index records for ``path`` when the file's stat data ``st`` is
    exactly the entry's and the entry is not racy, as git decides a file is unchanged without
    reading it; None when the content must be read (also whenever git may convert it, as
    ``converts``, the working tree's ``Filters.converts``, tells)."""
    try:
        data, index_mtime = indexfile.read_index(index_path(repo))
        where = indexfile.layout(data)
        if where.extensions and any(not e.signature[:1].isupper() for e in where.extensions):
            return None
        oid = indexfile.stat_matches(data, indexfile.find_entry(data, where, path), st, index_mtime)
    except (OSError, indexfile.Unsupported):
        return None
    if oid is None or converts(path):
        return None
    return oid.hex()


def plain_entries(path: str, paths: Sequence[str]) -> dict[str, tuple[str, int]] | None:
    """(blob hex, mode) of each of ``paths`` when every one is a plain stage-0 entry of the
    index file at ``path`` (looked up in its bytes, no whole-index parse); None when one is
    not (absent, conflicted, flagged) or the index is in a shape this cannot read."""
    try:
        data, _mtime = indexfile.read_index(path)
        where = indexfile.layout(data)
        if any(not e.signature[:1].isupper() for e in where.extensions):
            return None
        out: dict[str, tuple[str, int]] = {}
        for name in paths:
            at = indexfile.find_entry(data, where, name)
            mode = int.from_bytes(data[at + 24 : at + 28], "big")
            out[name] = (data[at + 40 : at + 60].hex(), mode)
    except (OSError, indexfile.Unsupported):
        return None
    return out


# -- patch in place -----------------------------------------------------------------------------


def _patch(
    repo: pygit2.Repository,
    held: HeldIndex,
    old: pygit2.Tree | None,
    new: pygit2.Tree | None,
    paths: Sequence[str],
    written: Mapping[str, os.stat_result],
    converts: Callable[[str], bool],
) -> bool:
    if old is None or new is None or not paths or any(converts(p) for p in paths):
        return False
    root = repo.workdir
    updates: dict[str, indexfile.EntryUpdate] = {}
    for path in paths:
        now = _blob(new, path)
        before = written.get(path)
        if now is None or _blob(old, path) is None or before is None:
            return False
        st = os.lstat(os.path.join(root, path))
        same = (st.st_ino, st.st_size, st.st_mtime_ns) == (
            before.st_ino,
            before.st_size,
            before.st_mtime_ns,
        )
        if not same or not stat.S_ISREG(st.st_mode):
            return False
        updates[path] = indexfile.EntryUpdate(now.id.raw, int(now.filemode), st)
    trees = _parent_trees(old, new, paths)
    try:
        held.put(bytes(indexfile.patch(held.read(), updates, trees)))
    except (indexfile.Unsupported, FileNotFoundError):
        return False
    return True


def _blob(tree: pygit2.Tree, path: str) -> pygit2.Object | None:
    try:
        obj = tree[path]
    except KeyError:
        return None
    return obj if obj.type == pygit2.enums.ObjectType.BLOB else None


def _parent_trees(
    old: pygit2.Tree, new: pygit2.Tree, paths: Sequence[str]
) -> dict[str, tuple[bytes | None, bytes | None]]:
    """Each parent directory of ``paths`` -> its tree id (raw) in ``old`` and ``new``."""
    out: dict[str, tuple[bytes | None, bytes | None]] = {}
    for path in paths:
        parts = path.split("/")[:-1]
        for depth in range(len(parts) + 1):
            folder = "/".join(parts[:depth])
            if folder not in out:
                out[folder] = (_tree_id(old, folder), _tree_id(new, folder))
    return out


def _tree_id(tree: pygit2.Tree, folder: str) -> bytes | None:
    if not folder:
        return tree.id.raw
    try:
        obj = tree[folder]
    except KeyError:
        return None
    return obj.id.raw if obj.type == pygit2.enums.ObjectType.TREE else None


# -- through git --------------------------------------------------------------------------------


def _with_git(
    repo: pygit2.Repository,
    held: HeldIndex,
    new: pygit2.Tree | None,
    landed: Sequence[str],
    kept: Sequence[str],
) -> None:
    """Record ``landed`` from disk as ``git add`` does (``update-index --add --remove``), and
    set ``kept`` entries (and any landed one git hashed differently, through a filter) to
    the ids of ``new`` with ``--index-info``, on ``held``'s scratch index. Not ``--refresh``:
    it writes a split index back unsplit."""
    scratch = held.scratch()
    want = {path: _index_line(new, path) for path in dict.fromkeys([*landed, *kept])}
    gone = [p for p in landed if new is None or _blob(new, p) is None]
    if gone:  # first: a directory may stand where a removed file was (a/ replacing a)
        _git(repo, scratch, ["update-index", "--force-remove", "-z", "--stdin"], _z(gone))
    landed = [p for p in landed if p not in gone]
    if landed:
        args = ["update-index", "--add", "--replace", "-z", "--stdin"]
        _git(repo, scratch, args, _z(landed))
        staged = _git(repo, scratch, ["ls-files", "--stage", "-z", "--", *landed], "")
        have = {}
        for row in staged.split("\0"):
            if "\t" in row:
                meta, path = row.split("\t", 1)
                have[path] = f"{meta.rsplit(' ', 1)[0]}\t{path}"
        landed = [p for p in landed if have.get(p) != want[p].rstrip("\0") and p in want]
    fix = [want[p] for p in dict.fromkeys([*landed, *kept])]
    if fix:
        # expanded first: --index-info does not expand a sparse directory (see ``sparse``)
        info = [*sparse.expanding(scratch), "update-index", "-z", "--index-info"]
        _git(repo, scratch, info, "".join(fix))


def _z(paths: Sequence[str]) -> str:
    return "".join(f"{p}\0" for p in paths)


def _index_line(new: pygit2.Tree | None, path: str) -> str:
    """An ``--index-info -z`` record setting ``path`` to its blob in ``new`` (or removing it)."""
    obj = _blob(new, path) if new is not None else None
    if obj is None:
        return f"0 {_NULL_ID}\t{path}\0"
    return f"{int(obj.filemode):o} {obj.id}\t{path}\0"


def _git(repo: pygit2.Repository, index: str, args: list[str], stdin: str) -> str:
    """``git args`` on ``repo``'s checkout, with the index file ``index``, through the one
    git runner; a failure is an ``OSError`` (the land reports it, its journal kept)."""
    try:
        out = gitbin.run(
            repo.path, repo.workdir, args, stdin.encode("utf-8", "surrogateescape"), index=index
        )
    except gitbin.GitFailed as exc:
        raise OSError(f"git {' '.join(args)} failed: {exc.stderr}") from exc
    return out.decode("utf-8", "surrogateescape")
