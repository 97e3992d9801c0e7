"""Comparing and combining commits: changed paths, diffs, 3-way merges and reverts.

All of it works on trees in the object store: nothing here reads or writes the index file or
the working tree. Callers turn the resulting tree into a commit.
"""

from __future__ import annotations

import pygit2
from pygit2.enums import MergeFlag

from gitpatch.errors import MergeConflict

__all__ = ["changed_paths", "diff", "empty_tree", "merge_tree", "revert_tree"]


def empty_tree(repo: pygit2.Repository) -> pygit2.Tree:
    """The empty tree (written once; it is the same object in every repository)."""
    tree = repo[repo.TreeBuilder().write()]
    assert isinstance(tree, pygit2.Tree)
    return tree


def _tree(repo: pygit2.Repository, commit: pygit2.Oid | None) -> pygit2.Tree:
    if commit is None:
        return empty_tree(repo)
    tree = repo[commit].peel(pygit2.Tree)
    assert isinstance(tree, pygit2.Tree)
    return tree


def changed_paths(repo: pygit2.Repository, old: pygit2.Oid | None, new: pygit2.Oid) -> list[str]:
    """Paths whose entries differ between two commits (both sides of a move are listed)."""
    # A tree diff skips identical subtrees by id, so its cost follows the change, not the repo.
    delta_list = _tree(repo, old).diff_to_tree(_tree(repo, new)).deltas
    out: dict[str, None] = {}
    for delta in delta_list:
        out[delta.old_file.path] = None
        out[delta.new_file.path] = None
    return sorted(out)


def diff(
    repo: pygit2.Repository, old: pygit2.Oid | None, new: pygit2.Oid
) -> tuple[str, dict[str, int]]:
    """Unified patch text (moves detected, as ``git diff`` shows them) and its stats."""
    patch = _tree(repo, old).diff_to_tree(_tree(repo, new))
    patch.find_similar()
    stats = patch.stats
    figures = {
        "files": stats.files_changed,
        "insertions": stats.insertions,
        "deletions": stats.deletions,
    }
    return patch.patch or "", figures


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
