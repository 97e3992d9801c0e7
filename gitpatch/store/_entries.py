"""Looking up one path in a pygit2 tree: the one implementation, used by the Store, the working
tree, the guards and the resource ids (a ``KeyError`` from pygit2 means "no such path")."""

from __future__ import annotations

import pygit2

__all__ = ["entry", "file_id", "is_dir", "object_at"]


def entry(tree: pygit2.Tree | None, path: str) -> tuple[pygit2.Oid, int] | None:
    """The (blob id, mode) at ``path`` in ``tree``, ``None`` when absent or not a blob."""
    obj = object_at(tree, path)
    if obj is None or obj.type != pygit2.enums.ObjectType.BLOB:
        return None
    return obj.id, int(obj.filemode)


def is_dir(tree: pygit2.Tree | None, path: str) -> bool:
    """True when ``tree`` has a directory at ``path``."""
    obj = object_at(tree, path)
    return obj is not None and obj.type == pygit2.enums.ObjectType.TREE


def file_id(tree: pygit2.Tree | None, path: str) -> pygit2.Oid | None:
    """The id of the entry at ``path`` unless it is a directory (a blob, link or submodule)."""
    obj = object_at(tree, path)
    return None if obj is None or obj.filemode == pygit2.enums.FileMode.TREE else obj.id


def object_at(tree: pygit2.Tree | None, path: str) -> pygit2.Object | None:
    """The entry at ``path`` (``a/b/c``) in ``tree``, None when there is none."""
    if tree is None:
        return None
    try:
        return tree[path]
    except KeyError:
        return None
