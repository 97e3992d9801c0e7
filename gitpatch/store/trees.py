"""Building a new tree from a base tree and a list of file changes, without index or worktree.

Only the directories on the paths that change are touched: each gets one ``TreeBuilder`` seeded
with its old entries, so the cost is (changed paths x depth), whatever the repository's size.
Untouched subtrees keep their ids, and a moved file keeps its blob id and mode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pygit2
from pygit2.enums import FileMode

from gitpatch.core.model import FileChange
from gitpatch.core.spliced import Content, as_bytes
from gitpatch.errors import (
    InvalidArguments,
    NotATextResource,
    ResourceExists,
    ResourceNotFound,
    UnsafePath,
)
from gitpatch.safety import durability
from gitpatch.safety.owners import common_dir
from gitpatch.store import loose

__all__ = [
    "MODE_BLOB",
    "MODE_EXEC",
    "MODE_LINK",
    "MODE_SUBMODULE",
    "MODE_TREE",
    "build",
    "build_entries",
    "kind_of",
    "raise_tree_cache",
]

MODE_BLOB = int(FileMode.BLOB)
MODE_EXEC = int(FileMode.BLOB_EXECUTABLE)
MODE_LINK = int(FileMode.LINK)
MODE_SUBMODULE = int(FileMode.COMMIT)
MODE_TREE = int(FileMode.TREE)
#: Trees up to this size stay parsed in libgit2's object cache. Its default (4 KB) leaves out
#: the root tree of any sizeable repository, which every lookup then re-reads, re-hashes and
#: re-parses; a proposal looks a root tree up a dozen times.
TREE_CACHE_LIMIT = 1 << 20
#: Blobs from this size up are remembered by ``build`` for the working tree (see ``build``).
FRESH_MIN = 1 << 20
#: How many such blobs are remembered (the oldest goes first; a land takes its own out), which
#: bounds what a long-lived process keeps of proposals that never land (review mode).
FRESH_MAX = 2


def kind_of(mode: int) -> str:
    """A word for what an entry of this filemode is, for messages."""
    return {
        MODE_TREE: "a directory",
        MODE_LINK: "a symbolic link",
        MODE_SUBMODULE: "a submodule",
    }.get(mode, "a file")


@dataclass(frozen=True)
class _Leaf:
    oid: pygit2.Oid
    mode: int


@dataclass
class _Dir:
    """A directory being rebuilt: its old tree (None when new) and the entries that change.

    In ``changes`` a name maps to a ``_Dir`` (descend), a ``_Leaf`` (write) or None (remove).
    """

    path: str
    base: pygit2.Tree | None
    changes: dict[str, _Dir | _Leaf | None] = field(default_factory=dict)


_Entry = _Dir | _Leaf | None


class _Overlay:
    """The base tree with the changes applied so far; answers lookups the way the result will."""

    def __init__(self, repo: pygit2.Repository, base: pygit2.Tree | None) -> None:
        self.repo = repo
        self.root = _Dir("", base)

    def _child(self, node: _Dir, name: str) -> _Entry:
        if name in node.changes:
            return node.changes[name]
        if node.base is None or name not in node.base:
            return None
        obj = node.base[name]
        path = f"{node.path}/{name}" if node.path else name
        if obj.filemode == MODE_TREE:
            subtree = self.repo[obj.id]
            assert isinstance(subtree, pygit2.Tree)
            sub = _Dir(path, subtree)
            node.changes[name] = sub  # cached so later edits below it share one builder
            return sub
        return _Leaf(obj.id, obj.filemode)

    def _parent(self, path: str, create: bool) -> tuple[_Dir, str] | None:
        """The directory holding ``path`` (made when ``create``), or None if it does not exist."""
        *dirs, name = path.split("/")
        node = self.root
        for depth, part in enumerate(dirs):
            child = self._child(node, part)
            here = "/".join(dirs[: depth + 1])
            if isinstance(child, _Leaf):
                raise ResourceExists(
                    f"cannot place {path!r}: {here!r} is {kind_of(child.mode)}, not a directory",
                    hint=f"Choose a path that does not go through the file {here!r}, or delete "
                    "that file in the same proposal.",
                    details={"path": path, "blocking": here},
                )
            if child is None:
                if not create:
                    return None
                child = _Dir(here, None)
                node.changes[part] = child
            node = child
        return node, name

    def lookup(self, path: str) -> _Entry:
        """What ``path`` holds now: a leaf, a non-empty directory, or None."""
        found = self._parent(path, create=False) if "/" in path else (self.root, path)
        try:
            current = None if found is None else self._child(*found)
        except ResourceExists:
            return None
        return None if isinstance(current, _Dir) and _empty(current) else current

    def put(self, path: str, leaf: _Leaf) -> None:
        """Write ``leaf`` at ``path``; refuses to overwrite a directory that still has files."""
        parent, name = self._parent(path, create=True) or (self.root, path)
        current = self._child(parent, name)
        # A directory emptied by earlier changes disappears, so a file may take its name.
        if isinstance(current, _Dir) and not _empty(current):
            raise NotATextResource(
                f"cannot write {path!r}: it is a directory",
                hint="Write to a file path inside the directory instead.",
                details={"path": path},
            )
        parent.changes[name] = leaf

    def remove(self, path: str) -> _Leaf:
        """Remove the file at ``path`` and return what it was; it must exist and not be a dir."""
        found = self._parent(path, create=False) if "/" in path else (self.root, path)
        current = None if found is None else self._child(*found)
        if current is None or found is None:
            raise ResourceNotFound(
                f"cannot remove {path!r}: no such file in the base commit",
                hint="Read the file list again; the path may have been moved or deleted.",
                details={"path": path},
            )
        if isinstance(current, _Dir):
            raise NotATextResource(
                f"cannot remove {path!r}: it is a directory",
                hint="Delete the files inside it one by one.",
                details={"path": path},
            )
        found[0].changes[found[1]] = None
        return current


def _empty(node: _Dir) -> bool:
    """True when ``node`` will hold nothing once the changes are applied."""
    names = {entry.name for entry in node.base} if node.base is not None else set()
    for name, entry in node.changes.items():
        if entry is None or (isinstance(entry, _Dir) and _empty(entry)):
            names.discard(name)
        else:
            names.add(name)
    return not names


def _dirty(node: _Dir) -> bool:
    """True when something below ``node`` changes (lookups alone cache unchanged dirs)."""
    return node.base is None or any(
        not isinstance(entry, _Dir) or _dirty(entry) for entry in node.changes.values()
    )


def _write(repo: pygit2.Repository, node: _Dir) -> pygit2.Oid | None:
    """Write ``node`` and its changed subdirectories; None when the result is empty."""
    builder = repo.TreeBuilder(node.base) if node.base is not None else repo.TreeBuilder()
    count = len(node.base) if node.base is not None else 0
    for name, entry in node.changes.items():
        if isinstance(entry, _Dir) and not _dirty(entry):
            continue  # only looked at: its tree id stays as it is
        present = builder.get(name) is not None
        if isinstance(entry, _Dir):
            oid = _write(repo, entry)
            if oid is None:
                entry = None
            else:
                builder.insert(name, oid, MODE_TREE)
                count += 0 if present else 1
                continue
        if entry is None:
            if present:
                builder.remove(name)
                count -= 1
            continue
        builder.insert(name, entry.oid, entry.mode)
        count += 0 if present else 1
    if count == 0 and node.path:
        return None
    return builder.write()


def _check_path(path: str) -> None:
    if not path or path.startswith("/") or path.endswith("/") or "\x00" in path:
        raise InvalidArguments(
            f"invalid repository path {path!r}",
            hint="Pass a normalized path relative to the repository root.",
            details={"path": path},
        )
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise InvalidArguments(
            f"invalid repository path {path!r}: empty, '.' or '..' component",
            hint="Pass a normalized path relative to the repository root.",
            details={"path": path},
        )
    # A tree entry named .git (in any case) is refused by `git fsck` and by checkouts.
    if any(part.lower() == ".git" for part in parts):
        raise UnsafePath(
            f"path {path!r} is inside .git",
            hint="gitpatch never writes git's own files.",
            details={"path": path},
        )


def raise_tree_cache() -> None:
    """Let libgit2 cache trees up to ``TREE_CACHE_LIMIT`` (process-wide; cheap to repeat)."""
    pygit2.settings.cache_object_limit(pygit2.enums.ObjectType.TREE, TREE_CACHE_LIMIT)


def _create_blob(
    repo: pygit2.Repository, content: Content, fresh: dict[pygit2.Oid, Content] | None
) -> pygit2.Oid:
    """Write a blob; a large one is also remembered in ``fresh`` (a few, newest last).

    A large one is written by ``loose`` (hashed and deflated in one pass, as git does).
    """
    if len(content) >= loose.LARGE:
        hexid = loose.write_blob(
            common_dir(repo.path) / "objects",
            content,
            level=_loose_level(repo),
            durable=durability.enabled(),
        )
        oid = pygit2.Oid(hex=hexid)
    else:
        oid = repo.create_blob(as_bytes(content))
    if fresh is not None and len(content) >= FRESH_MIN:
        fresh[oid] = content
        while len(fresh) > FRESH_MAX:
            del fresh[next(iter(fresh))]
    return oid


def _loose_level(repo: pygit2.Repository) -> int:
    """git's zlib level for loose objects: ``core.looseCompression``, ``core.compression``, 1."""
    for key in ("core.looseCompression", "core.compression"):
        try:
            level = int(str(repo.config[key])) if key in repo.config else None
        except (KeyError, ValueError, pygit2.GitError):
            level = None
        if level is not None and -1 <= level <= 9:
            return level
    return loose.DEFAULT_LEVEL


def _apply(
    repo: pygit2.Repository,
    tree: _Overlay,
    change: FileChange,
    fresh: dict[pygit2.Oid, Content] | None = None,
) -> None:
    _check_path(change.path)
    if change.source is not None:
        _check_path(change.source)
        moved = tree.remove(change.source)
        if change.path != change.source and tree.lookup(change.path) is not None:
            raise ResourceExists(
                f"cannot move {change.source!r} to {change.path!r}: the target already exists",
                hint="Pick a new target path, or delete the existing file first.",
                details={"path": change.path, "source": change.source},
            )
        if change.content is not None and moved.mode in (MODE_LINK, MODE_SUBMODULE):
            raise NotATextResource(
                f"cannot edit {change.source!r}: it is {kind_of(moved.mode)}",
                hint="Move it without changing its content, or edit regular files only.",
                details={"path": change.source},
            )
        # Same bytes hash to the same id, so an unchanged move reuses the blob either way.
        content = change.content
        oid = moved.oid if content is None else _create_blob(repo, content, fresh)
        mode = moved.mode
        if change.mode is not None and mode not in (MODE_LINK, MODE_SUBMODULE):
            mode = change.mode
        tree.put(change.path, _Leaf(oid, mode))
        return
    if change.content is None:
        tree.remove(change.path)
        return
    current = tree.lookup(change.path)
    mode = current.mode if isinstance(current, _Leaf) else MODE_BLOB
    if change.mode is not None and mode not in (MODE_LINK, MODE_SUBMODULE):
        mode = change.mode
    if mode in (MODE_LINK, MODE_SUBMODULE):
        raise NotATextResource(
            f"cannot write {change.path!r}: it is {kind_of(mode)}, not a regular file",
            hint="gitpatch edits regular files only.",
            details={"path": change.path},
        )
    tree.put(change.path, _Leaf(_create_blob(repo, change.content, fresh), mode))


def build(
    repo: pygit2.Repository,
    base: pygit2.Tree | None,
    changes: Sequence[FileChange],
    fresh: dict[pygit2.Oid, Content] | None = None,
) -> pygit2.Oid:
    """Write the tree ``base`` becomes after ``changes`` (applied in order); return its id.

    Blobs of ``FRESH_MIN`` bytes or more are remembered in ``fresh`` (id -> content), so the
    working tree can write a large file it lands without reading it back from the store.
    """
    tree = _Overlay(repo, base)
    for change in changes:
        _apply(repo, tree, change, fresh)
    oid = _write(repo, tree.root)
    assert oid is not None  # the root is always written, even when empty
    return oid


def build_entries(
    repo: pygit2.Repository,
    base: pygit2.Tree | None,
    entries: Mapping[str, tuple[pygit2.Oid, int] | None],
) -> pygit2.Oid:
    """Like ``build`` for entries that already exist as objects: path -> (id, mode), or None
    to remove. Used to replay one side of a merge onto the other, modes included."""
    tree = _Overlay(repo, base)
    # Removals first: a file may take the place of a directory whose files go (and back).
    for path, side in sorted(entries.items(), key=lambda item: item[1] is not None):
        _check_path(path)
        if side is None:
            tree.remove(path)
        else:
            tree.put(path, _Leaf(*side))
    oid = _write(repo, tree.root)
    assert oid is not None
    return oid
