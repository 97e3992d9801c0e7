"""Tree comparison and trivial merges for ``gitpatch.review``, at the cost of the change.

libgit2's tree diff and its merge and revert (through an in-memory index of the whole tree) all
grow with the repository: about 50 ms, 3 s and 3 s in a 100,000-file repository here, for a
one-file change. Review only needs the paths a change touches, and most approvals and undos
touch paths nobody else changed since, so both are done here by walking the two trees and
skipping identical subtrees by id. Anything that needs a content merge returns None and the
caller falls back to ``Store.merge`` / ``Store.revert``.
"""

from __future__ import annotations

import pygit2

from gitpatch.errors import GitpatchError
from gitpatch.model import FileChange
from gitpatch.store import Store, TreeEntry
from gitpatch.store._errors import git_errors
from gitpatch.store.trees import MODE_BLOB, MODE_TREE

__all__ = ["changed_paths", "replay"]

_REGULAR = (MODE_BLOB, int(pygit2.enums.FileMode.BLOB_EXECUTABLE))


def changed_paths(store: Store, old: pygit2.Oid | None, new: pygit2.Oid) -> list[str]:
    """Sorted paths of the non-directory entries that differ (id or mode) between two commits.

    Both sides of a move are listed, as ``Store.changed_paths`` does; cost ~ changed paths x
    depth x directory width, never the repository's size.
    """
    out: list[str] = []
    with git_errors(f"compare {old} and {new}"):
        before = None if old is None else store.repo[old].peel(pygit2.Tree)
        _compare(store.repo, before, store.repo[new].peel(pygit2.Tree), "", out)
    return sorted(out)


def _compare(
    repo: pygit2.Repository,
    a: pygit2.Tree | None,
    b: pygit2.Tree | None,
    prefix: str,
    out: list[str],
) -> None:
    if a is not None and b is not None and a.id == b.id:
        return
    pairs: dict[str, list[pygit2.Object | None]] = {}
    for side, tree in enumerate((a, b)):
        for entry in tree if tree is not None else ():
            pairs.setdefault(entry.name or "", [None, None])[side] = entry
    for name, (x, y) in pairs.items():
        if x is not None and y is not None and x.id == y.id and x.filemode == y.filemode:
            continue
        path = prefix + name
        if any(e is not None and e.filemode != MODE_TREE for e in (x, y)):
            out.append(path)
        left, right = (_subtree(repo, e) for e in (x, y))
        if left is not None or right is not None:
            _compare(repo, left, right, path + "/", out)


def _subtree(repo: pygit2.Repository, entry: pygit2.Object | None) -> pygit2.Tree | None:
    if entry is None or entry.filemode != MODE_TREE:
        return None
    tree = repo[entry.id]
    assert isinstance(tree, pygit2.Tree)
    return tree


def replay(store: Store, onto: pygit2.Oid, frm: pygit2.Oid, to: pygit2.Oid) -> pygit2.Oid | None:
    """The tree of ``onto`` with the change ``frm`` -> ``to`` applied, or None.

    Trivial cases only: every path the change touches must hold in ``onto`` what it held in
    ``frm`` (it then takes its content in ``to``) or already what it holds in ``to``. A path
    changed on both sides, a mode the tree builder would not keep, or a file/directory swap
    answers None, and the caller runs a real 3-way merge. A merge of ``to`` into ``onto`` is
    ``replay(onto, merge_base, to)``; a revert of ``c`` is ``replay(onto, c, parent_of_c)``.
    """
    changes: list[FileChange] = []
    for path in changed_paths(store, frm, to):
        have, was, want = (_leaf(store, c, path) for c in (onto, frm, to))
        if have == want:
            continue
        if have != was:
            return None
        if want is None:
            changes.append(FileChange(path, None))
            continue
        if not _keeps_mode(have, want):
            return None
        changes.append(FileChange(path, store.read(to, path)))
    # Deletions first: an added file may need the place a deleted one held.
    changes.sort(key=lambda change: change.content is not None)
    try:
        return store.build_tree(onto, changes)
    except GitpatchError:
        return None


def _leaf(store: Store, commit: pygit2.Oid, path: str) -> TreeEntry | None:
    """The entry at ``path`` unless it is a directory: a file turned into a directory (or back)
    shows up as the file's deletion (or addition) plus the files below it."""
    entry = store.entry(commit, path)
    return None if entry is None or entry.mode == MODE_TREE else entry


def _keeps_mode(have: TreeEntry | None, want: TreeEntry) -> bool:
    """True when writing ``want``'s content over ``have`` leaves ``want``'s mode, as the tree
    builder keeps an existing file's mode and gives a new file the plain blob mode."""
    if want.mode not in _REGULAR:
        return False
    return want.mode == (have.mode if have is not None else MODE_BLOB)
