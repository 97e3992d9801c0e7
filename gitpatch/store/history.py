"""Comparing and combining commits: changed paths, diffs, 3-way merges and reverts.

All of it works on trees in the object store: nothing here reads or writes the index file or
the working tree. Callers turn the resulting tree into a commit.
"""

from __future__ import annotations

from collections.abc import Iterator

import pygit2
from pygit2.enums import MergeFlag

from gitpatch.errors import MergeConflict
from gitpatch.store.trees import MODE_TREE

__all__ = [
    "changed_paths",
    "empty_tree",
    "file_changes",
    "merge_tree",
    "revert_tree",
    "tree_id",
]


def empty_tree(repo: pygit2.Repository) -> pygit2.Tree:
    """The empty tree (written once; it is the same object in every repository)."""
    tree = repo[repo.TreeBuilder().write()]
    assert isinstance(tree, pygit2.Tree)
    return tree


Side = tuple[pygit2.Oid, int] | None  # (object id, filemode) of a non-directory entry


def _children(
    repo: pygit2.Repository, tree_id: pygit2.Oid | None
) -> dict[str, tuple[pygit2.Oid, int]]:
    if tree_id is None:
        return {}
    tree = repo[tree_id]
    assert isinstance(tree, pygit2.Tree)
    return {entry.name or "": (entry.id, entry.filemode) for entry in tree}


def file_changes(
    repo: pygit2.Repository, old: pygit2.Oid | None, new: pygit2.Oid | None, prefix: str = ""
) -> Iterator[tuple[str, Side, Side]]:
    """(path, old side, new side) for every non-directory entry that differs between two trees.

    Identical subtrees are skipped by id, so the cost follows the change (paths x depth x
    directory width), never the repository: libgit2's own tree diff walks every entry (24 ms
    for a one-file change among 100,000 files here, against about 1 ms this way).
    """
    if old == new:
        return
    before, after = _children(repo, old), _children(repo, new)
    for name in sorted(before.keys() | after.keys()):
        a, b = before.get(name), after.get(name)
        if a == b:
            continue
        file_a = a if a is not None and a[1] != MODE_TREE else None
        file_b = b if b is not None and b[1] != MODE_TREE else None
        if file_a is not None or file_b is not None:
            yield prefix + name, file_a, file_b
        dir_a = a[0] if a is not None and a[1] == MODE_TREE else None
        dir_b = b[0] if b is not None and b[1] == MODE_TREE else None
        if dir_a is not None or dir_b is not None:
            yield from file_changes(repo, dir_a, dir_b, f"{prefix}{name}/")


def tree_id(repo: pygit2.Repository, commit: pygit2.Oid | None) -> pygit2.Oid | None:
    """The tree of ``commit`` (None stays None)."""
    return None if commit is None else repo[commit].peel(pygit2.Tree).id


def changed_paths(repo: pygit2.Repository, old: pygit2.Oid | None, new: pygit2.Oid) -> list[str]:
    """Paths whose entries differ between two commits (both sides of a move are listed)."""
    changes = file_changes(repo, tree_id(repo, old), tree_id(repo, new))
    return sorted({path for path, _a, _b in changes})


def _conflicts(index: pygit2.Index) -> list[str]:
    if index.conflicts is None:
        return []
    paths: set[str] = set()
    for ancestor, ours, theirs in index.conflicts:
        for side in (ancestor, ours, theirs):
            if side is not None:
                paths.add(side.path)
    return sorted(paths)


def _refuse(what: str, paths: list[str]) -> MergeConflict:
    return MergeConflict(
        f"{what} conflicts in {len(paths)} file(s): {', '.join(paths)}",
        hint="Both sides changed the same lines. Rebuild the change on top of the current "
        "branch (read the files again), or resolve it by hand with git.",
        details={"paths": paths},
    )


def merge_tree(repo: pygit2.Repository, ours: pygit2.Oid, theirs: pygit2.Oid) -> pygit2.Oid:
    """The tree of a clean 3-way merge of two commits; ``MergeConflict`` (nothing written) else."""
    index = repo.merge_commits(ours, theirs, flags=MergeFlag.FIND_RENAMES)
    paths = _conflicts(index)
    if paths:
        raise _refuse(f"merging {str(theirs)[:12]} into {str(ours)[:12]}", paths)
    return index.write_tree(repo)


def revert_tree(repo: pygit2.Repository, commit: pygit2.Oid, onto: pygit2.Oid) -> pygit2.Oid:
    """The tree ``onto`` gets when ``commit`` is undone (3-way); ``MergeConflict`` if it clashes."""
    target = repo[commit]
    assert isinstance(target, pygit2.Commit)
    # A merge commit is undone relative to its first parent, as `git revert -m 1` does.
    mainline = 1 if len(target.parent_ids) > 1 else 0
    index = repo.revert_commit(target, repo[onto], mainline)
    paths = _conflicts(index)
    if paths:
        raise _refuse(f"reverting {str(commit)[:12]} on {str(onto)[:12]}", paths)
    return index.write_tree(repo)
