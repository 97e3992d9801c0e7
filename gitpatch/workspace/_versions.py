"""Versions of what an agent reads, uncommitted disk content included.

A version is a commit id. When the branch is checked out and a file's disk content is not the
one committed, ``read`` hands out a *pin*: a commit on top of the head holding that content (as
``git add`` would store it), which no ref points at. A later edit passing that version applies
only while the disk still holds what was read (``check_disk``): a person's edit in between is
a ``resource_conflict`` whatever the edit kind (line ranges, ``after_line``, hints), never an
edit applied to shifted lines. ``unpin`` gives the head a pin was read on, which the usual
"changed since the version" check then uses.
"""

from __future__ import annotations

from collections.abc import Sequence

import pygit2

from gitpatch.checkout import indexfile
from gitpatch.checkout.filters import Filters
from gitpatch.checkout.worktree import WorkingTree
from gitpatch.core.model import FileChange
from gitpatch.errors import ResourceConflict
from gitpatch.store import Store
from gitpatch.workspace import _guards as guards

__all__ = ["READ_TRAILER", "check_disk", "pin", "read", "unpin"]

#: Trailer of a commit pinning uncommitted disk content that ``read`` handed out as a version.
READ_TRAILER = "Gitpatch-Read"


def read(
    store: Store,
    disk: WorkingTree | None,
    head: pygit2.Oid | None,
    path: str,
    filters: Filters | None = None,
) -> tuple[bytes | None, pygit2.Oid | None]:
    """(the bytes an edit of ``path`` applies to, the version naming them).

    ``disk``: the working tree when it shows the branch. Its content is read (as checkout
    wrote it), except for skip-worktree files, which come from the branch like on a bare one.
    ``filters``: the working tree's conversions, for content read from the branch (edits
    apply to it as checkout would write it, see ``gitpatch.workspace.build``).
    """
    filters = disk.filters if disk is not None else filters
    if disk is not None and not indexfile.skipped(disk.gitdir, disk.root, [path]):
        data = disk.read(path)
        if data is not None:
            disk.filters.refuse_encoded(path, data)
        if data is None or disk.disk_blob(path) == str(guards.blob(store, head, path)):
            return data, head
        return data, pin(store, head, path, disk.filters.to_blob(path, data))
    found = guards.blob(store, head, path)
    if found is not None and filters is not None:
        return filters.checkout_bytes(path, found), head
    return (None if head is None else store.read(head, path)), head


def pin(store: Store, head: pygit2.Oid | None, path: str, data: bytes) -> pygit2.Oid:
    """A commit on top of ``head`` holding ``data`` (as git stores it) at ``path``; no ref
    points at it."""
    tree = store.build_tree(head, [FileChange(path, data)])
    parents = [head] if head is not None else []
    return store.commit(tree, parents, f"Pin uncommitted {path} as read", {READ_TRAILER: path})


def unpin(store: Store, version: pygit2.Oid) -> pygit2.Oid | None:
    """The branch head a version was read on: a pin's parent, any other commit itself."""
    info = store.info(version)
    if READ_TRAILER not in info.trailers:
        return version
    return info.parents[0] if info.parents else None


def check_disk(
    store: Store, disk: WorkingTree | None, version: pygit2.Oid | None, paths: Sequence[str]
) -> None:
    """``resource_conflict`` when a touched file's disk content is no longer the content
    ``version`` (a commit or a pin) holds: a person edited it since it was read."""
    if version is None or disk is None:
        return
    present = [p for p in paths if guards.blob(store, version, p) is not None]
    changed = disk.modified(str(version), present)
    if changed:
        raise ResourceConflict(
            f"{changed[0]} changed on disk since version {str(version)[:12]} was read",
            hint="Read the file again and redo the edit on its current content, passing the "
            "new version as expected_version.",
            details={"path": changed[0], "paths": changed, "expected_version": str(version)},
        )
