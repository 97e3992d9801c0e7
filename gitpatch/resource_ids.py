"""Stable resource ids for files in git history.

A file's id is a hash of the commit that created it and the path it was created at. Walking
back along the first-parent history from a head, an edit keeps the path, a move (git's rename
detection, which also sees gitpatch's own moves) continues at the old path, and the commit
where the path first appears ends the walk. So edits and moves keep the id, and a file deleted
and created again at the same path gets a new one.
"""

from __future__ import annotations

import hashlib

import pygit2

from gitpatch.repo.guards import blob
from gitpatch.store import Store
from gitpatch.store.trees import MODE_TREE

__all__ = ["resource_id", "uuid_like"]


def _file(tree: pygit2.Tree, path: str) -> pygit2.Oid | None:
    try:
        obj = tree[path]
    except KeyError:
        return None
    return None if obj.filemode == MODE_TREE else obj.id


def _moved_from(parent: pygit2.Commit, commit: pygit2.Commit, path: str) -> str | None:
    diff = parent.tree.diff_to_tree(commit.tree)
    diff.find_similar()
    for delta in diff.deltas:
        if delta.status == pygit2.enums.DeltaStatus.RENAMED and delta.new_file.path == path:
            return str(delta.old_file.path)
    return None


def uuid_like(text: str) -> str:
    """A UUID-shaped digest of ``text``."""
    d = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return f"{d[:8]}-{d[8:12]}-{d[12:16]}-{d[16:20]}-{d[20:32]}"


def resource_id(store: Store, head: pygit2.Oid | None, path: str) -> str | None:
    """The stable id of the file at ``path`` on ``head``: a hash of the commit that created it
    and the path it was created at, following moves (git's rename detection) back along the
    first-parent history (at most ``store.HISTORY_DEPTH`` commits)."""
    if head is None or blob(store, head, path) is None:
        return None
    origin = head
    for commit in store.walk(head, first_parent=True):
        origin = commit.id
        if not commit.parents:
            break
        parent = commit.parents[0]
        if _file(parent.tree, path) is not None:
            continue
        source = _moved_from(parent, commit, path)
        if source is None:
            break
        path = source
    return uuid_like(f"{origin}\0{path}")
