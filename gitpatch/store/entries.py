"""Looking up one path in a pygit2 tree, for the working-tree code of this package."""

from __future__ import annotations

import pygit2

__all__ = ["entry", "is_dir"]


def entry(tree: pygit2.Tree | None, path: str) -> tuple[pygit2.Oid, int] | None:
    """The (blob id, mode) at ``path`` in ``tree``, ``None`` when absent or not a blob."""
    obj = _at(tree, path)
    if obj is None or obj.type != pygit2.enums.ObjectType.BLOB:
        return None
    return obj.id, int(obj.filemode)


def is_dir(tree: pygit2.Tree | None, path: str) -> bool:
    """True when ``tree`` has a directory at ``path``."""
    obj = _at(tree, path)
    return obj is not None and obj.type == pygit2.enums.ObjectType.TREE


def _at(tree: pygit2.Tree | None, path: str) -> pygit2.Object | None:
    if tree is None:
        return None
    try:
        return tree[path]
    except KeyError:
        return None
