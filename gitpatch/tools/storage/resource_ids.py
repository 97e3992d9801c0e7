"""Stable resource ids for files in git history.

A file's id is a hash of the commit that created it and the path it was created at. Walking
back along the first-parent history from a head, an edit keeps the path, a move (git's rename
detection, which also sees gitpatch's own moves) continues at the old path, and the commit
where the path first appears ends the walk. So edits and moves keep the id, and a file deleted
and created again at the same path gets a new one.

Also here, since it is where those ids are found for a change: ``applied``, the one builder of
the storage's answer (``Applied``) from the Workspace's ``ProposalResult``, with family keys
(``work://s1/a.md``) for paths on a scratch ref.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence

import pygit2

from gitpatch.core.model import EditReport
from gitpatch.core.paths import Address
from gitpatch.store import Store, file_id
from gitpatch.tools.storage.base import Applied
from gitpatch.workspace import blob
from gitpatch.workspace.results import EditResult, FileResult, ProposalResult

__all__ = ["Share", "applied", "resource_id", "uuid_like"]


def _moved_from(
    store: Store, parent: pygit2.Commit, commit: pygit2.Commit, path: str
) -> str | None:
    # Only a path this commit deletes can be where ``path`` moved from. Looking for one first
    # costs what the commit changed; libgit2's tree diff (for its rename detection) walks every
    # entry of both trees (27 ms on a 20,000-file tree for a commit that adds one file).
    changed = store.changed_paths(parent.id, commit.id)
    gone = [p for p in changed if file_id(commit.tree, p) is None]
    if not any(file_id(parent.tree, p) is not None for p in gone):
        return None
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


#: (commit hex, path) -> id, for commits already walked; bounded, cleared when full.
_KNOWN: dict[tuple[str, str], str] = {}
_KNOWN_LIMIT = 100_000
_KNOWN_LOCK = threading.Lock()


def resource_id(store: Store, head: pygit2.Oid | None, path: str) -> str | None:
    """The stable id of the file at ``path`` on ``head``: a hash of the commit that created it
    and the path it was created at, following moves (git's rename detection) back along the
    first-parent history (at most ``store.HISTORY_DEPTH`` commits). Every (commit, path) the
    walk passes is remembered, so the next edit's lookup stops at its parent."""
    if head is None or blob(store, head, path) is None:
        return None
    seen: list[tuple[str, str]] = []
    found: str | None = None
    origin = head
    for commit in store.first_parents(head):
        origin = commit.id
        with _KNOWN_LOCK:
            found = _KNOWN.get((str(commit.id), path))
        if found is not None:
            break
        seen.append((str(commit.id), path))
        if not commit.parents:
            break
        parent = commit.parents[0]
        if file_id(parent.tree, path) is not None:
            continue
        source = _moved_from(store, parent, commit, path)
        if source is None:
            break
        path = source
    ident = found or uuid_like(f"{origin}\0{path}")
    with _KNOWN_LOCK:
        if len(_KNOWN) + len(seen) > _KNOWN_LIMIT:
            _KNOWN.clear()
        _KNOWN.update(dict.fromkeys(seen, ident))
    return ident


# -- the storage's answer for a change ----------------------------------------------------------


def key(path: str, root: Address | None) -> str:
    """A path on ``root``'s ref as the storage key (``work://s1/path``)."""
    return path if root is None else f"{root.family}://{root.root}/{path}"


def _rename(f: FileResult, root: Address | None) -> FileResult:
    """A file result with its paths as storage keys."""
    moved = None if f.moved_from is None else key(f.moved_from, root)
    return FileResult(path=key(f.path, root), action=f.action, moved_from=moved)


def _edit_report(e: EditResult, root: Address | None) -> EditReport:
    """An edit result with its path as a storage key."""
    return EditReport(key(e.path, root), e.index, e.start_line, e.end_line, e.level)


#: One ref's share of a change: the store holding it, its result, its family root (or None).
Share = tuple["Store", ProposalResult, Address | None]


def applied(shares: Sequence[Share]) -> Applied:
    """The storage's answer for a change, from each ref's ``ProposalResult`` (the one place
    resource ids are found for it): paths as storage keys, and with several refs, every
    ref's new commit; the ordinary ref's share (else the only one) names the change."""
    files: list[FileResult] = []
    edits: list[EditReport] = []
    ids: dict[str, str] = {}
    for store, result, root in shares:
        commit = pygit2.Oid(hex=result.version)
        for f in result.files:
            files.append(_rename(f, root))
            ident = resource_id(store, commit, f.path) if f.action != "delete" else None
            if ident is not None:
                ids[key(f.path, root)] = ident
        edits += [_edit_report(e, root) for e in result.edits]
    _store, main, root = next((s for s in shares if s[2] is None), shares[0])
    named = root is None or len(shares) == 1
    return Applied(
        version=main.version,
        files=tuple(files),
        edits=tuple(edits),
        ids=ids,
        proposal_id=main.proposal_id,
        branch=main.branch if named else None,
        review=main.mode == "review",
        target=main.target if named else None,
        versions={r.branch: r.version for _s, r, _root in shares} if len(shares) > 1 else {},
        # the session's own worktree, and the person's uncommitted work recorded or carried
        worktree=main.worktree or None,
        recorded=tuple(key(p, root) for p in main.recorded),
        carried=tuple(key(p, root) for p in main.carried),
        hidden=tuple(key(p, root) for p in main.hidden),
    )
