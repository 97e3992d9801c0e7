"""3-way merges and reverts of commits: the simple case from the changed paths, else libgit2.

All of it works on trees in the object store: nothing here reads or writes the index file or
the working tree. Callers turn the resulting tree into a commit.
"""

from __future__ import annotations

import pygit2
from pygit2.enums import MergeFlag

from gitpatch.errors import MergeConflict
from gitpatch.store import _merging as merging
from gitpatch.store._treediff import tree_id

__all__ = ["merge_tree", "pick_tree", "revert_tree"]


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
    base = repo.merge_base(ours, theirs)
    if base is not None:
        fast = merging.merge_trees(
            repo, tree_id(repo, base), _tree_of(repo, ours), tree_id(repo, theirs)
        )
        if fast is not None:
            return fast
    index = repo.merge_commits(ours, theirs, flags=MergeFlag.FIND_RENAMES)
    paths = _conflicts(index)
    if paths:
        raise _refuse(f"merging {str(theirs)[:12]} into {str(ours)[:12]}", paths)
    return index.write_tree(repo)


def pick_tree(
    repo: pygit2.Repository, base: pygit2.Oid | None, ours: pygit2.Oid, theirs: pygit2.Oid
) -> pygit2.Oid:
    """Tree ``ours`` plus the change from tree ``base`` (None: empty) to tree ``theirs`` (a
    cherry-pick of trees); ``MergeConflict`` (nothing written) when it clashes."""
    fast = merging.merge_trees(repo, base, ours, theirs)
    if fast is not None:
        return fast
    ancestor = base if base is not None else repo.TreeBuilder().write()
    index = repo.merge_trees(ancestor, ours, theirs, flags=MergeFlag.FIND_RENAMES)
    paths = _conflicts(index)
    if paths:
        raise _refuse(f"applying the change onto {str(ours)[:12]}", paths)
    return index.write_tree(repo)


def merge_conflicts(repo: pygit2.Repository, ours: pygit2.Oid, theirs: pygit2.Oid) -> list[str]:
    """The paths a 3-way merge of ``theirs`` into ``ours`` conflicts in; writes no object."""
    return _conflicts(repo.merge_commits(ours, theirs, flags=MergeFlag.FIND_RENAMES))


def revert_tree(repo: pygit2.Repository, commit: pygit2.Oid, onto: pygit2.Oid) -> pygit2.Oid:
    """The tree ``onto`` gets when ``commit`` is undone (3-way); ``MergeConflict`` if it clashes."""
    target = repo[commit]
    assert isinstance(target, pygit2.Commit)
    # A merge commit is undone relative to its first parent, as `git revert -m 1` does.
    parent = target.parent_ids[0] if target.parent_ids else None
    fast = merging.merge_trees(repo, target.tree_id, _tree_of(repo, onto), tree_id(repo, parent))
    if fast is not None:
        return fast
    mainline = 1 if len(target.parent_ids) > 1 else 0
    index = repo.revert_commit(target, repo[onto], mainline)
    paths = _conflicts(index)
    if paths:
        raise _refuse(f"reverting {str(commit)[:12]} on {str(onto)[:12]}", paths)
    return index.write_tree(repo)


def _tree_of(repo: pygit2.Repository, commit: pygit2.Oid) -> pygit2.Oid:
    found = tree_id(repo, commit)
    assert found is not None
    return found
