"""History: walks, ancestry, diffs, 3-way merges and reverts of commits.

Merges and reverts work on trees in the object store: nothing here reads or writes the index
file or the working tree. The simple case is merged from the changed paths (``_merging``), the
rest by libgit2; a conflict writes nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping

import pygit2
from pygit2.enums import MergeFlag

from gitpatch.errors import MergeConflict
from gitpatch.store import _diffs, _merging, _treediff
from gitpatch.store._objects import Objects
from gitpatch.store._repo import git_errors
from gitpatch.store._treediff import tree_id

__all__ = ["HISTORY_DEPTH", "History", "merge_tree", "pick_tree", "revert_tree"]

#: How far back any history walk goes (undo, log, what a session brings, deleted files).
HISTORY_DEPTH = 10_000


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
        fast = _merging.merge_trees(
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
    fast = _merging.merge_trees(repo, base, ours, theirs)
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
    fast = _merging.merge_trees(repo, target.tree_id, _tree_of(repo, onto), tree_id(repo, parent))
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


class History(Objects):
    """Walks, diffs, merges and reverts: the part of ``Store`` that reads and makes history."""

    def walk(
        self, tip: pygit2.Oid, *, first_parent: bool = False, hide: pygit2.Oid | None = None
    ) -> Iterator[pygit2.Commit]:
        """Commits from ``tip`` back, newest first (only the first-parent line when asked),
        leaving out those reachable from ``hide``; at most ``HISTORY_DEPTH`` of them."""
        order = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME
        with git_errors(f"walk the history of {tip}"):
            walker = self.repo.walk(tip, order)
            if first_parent:
                walker.simplify_first_parent()
            if hide is not None:
                walker.hide(hide)
            yield from itertools.islice(walker, HISTORY_DEPTH)

    def first_parents(self, tip: pygit2.Oid) -> Iterator[pygit2.Commit]:
        """``tip`` and its first parents, newest first, read one by one (no sorting walk, so
        stopping early costs only what was read); at most ``HISTORY_DEPTH`` commits."""
        with git_errors(f"walk the first parents of {tip}"):
            commit: pygit2.Commit | None = self.repo[tip].peel(pygit2.Commit)
            for _ in range(HISTORY_DEPTH):
                if commit is None:
                    return
                yield commit
                commit = commit.parents[0] if commit.parents else None

    def merge_base(self, one: pygit2.Oid, two: pygit2.Oid) -> pygit2.Oid | None:
        """The best common ancestor of two commits, None when they share no history."""
        with git_errors(f"find the merge base of {one} and {two}"):
            base = self.repo.merge_base(one, two)
        return base if isinstance(base, pygit2.Oid) else None

    def is_ancestor(self, ancestor: pygit2.Oid, commit: pygit2.Oid) -> bool:
        """True when ``ancestor`` is ``commit`` or one of its ancestors (fast-forward test)."""
        if ancestor == commit:
            return True
        with git_errors(f"check whether {ancestor} is an ancestor of {commit}"):
            return bool(self.repo.descendant_of(commit, ancestor))

    def changed_paths(self, old: pygit2.Oid | None, new: pygit2.Oid) -> list[str]:
        """Sorted paths whose entries differ between commits ``old`` (None: empty) and ``new``."""
        with git_errors(f"compare {old} and {new}"):
            return _treediff.changed_paths(self.repo, old, new)

    def file_patches(self, old: pygit2.Oid | None, new: pygit2.Oid) -> list[_diffs.FilePatch]:
        """Commit ``old`` (None: empty) -> commit ``new`` file by file, in ``diff``'s order,
        each with its hunks (see ``_diffs.file_patches``)."""
        with git_errors(f"diff {old} and {new}"):
            return _diffs.file_patches(
                self.repo, _treediff.tree_id(self.repo, old), _treediff.tree_id(self.repo, new)
            )

    def diff(self, old: pygit2.Oid | None, new: pygit2.Oid) -> tuple[str, dict[str, int]]:
        """Unified patch ``old`` (None: empty) -> ``new``; stats {files, insertions, deletions}."""
        with git_errors(f"diff {old} and {new}"):
            return _diffs.diff_trees(
                self.repo, _treediff.tree_id(self.repo, old), _treediff.tree_id(self.repo, new)
            )

    def merge(
        self,
        ours: pygit2.Oid,
        theirs: pygit2.Oid,
        message: str,
        trailers: Mapping[str, str] | None = None,
    ) -> pygit2.Oid:
        """A 3-way merge commit with parents (ours, theirs); ``MergeConflict`` writes nothing."""
        with git_errors(f"merge {theirs} into {ours}"):
            tree = merge_tree(self.repo, ours, theirs)
        return self.commit(tree, [ours, theirs], message, trailers)

    def merge_file(self, path: str, base: bytes | None, ours: bytes, theirs: bytes) -> bytes | None:
        """One file's 3-way merge (git's line merge); None when it conflicts or is not
        UTF-8 text (pygit2 hands merged content back as str)."""
        with git_errors(f"merge the versions of {path!r}"):
            return _merging.merge_blobs(self.repo, path, base, ours, theirs)

    def pick_tree(
        self, base: pygit2.Oid | None, ours: pygit2.Oid, theirs: pygit2.Oid
    ) -> pygit2.Oid:
        """Tree ``ours`` plus the change from tree ``base`` (None: empty) to tree ``theirs``;
        ``MergeConflict`` (nothing written) when the two clash."""
        with git_errors(f"apply {base}..{theirs} onto {ours}"):
            return pick_tree(self.repo, base, ours, theirs)

    def merge_conflicts(self, ours: pygit2.Oid, theirs: pygit2.Oid) -> list[str]:
        """The paths merging ``theirs`` into ``ours`` would conflict in ([]: it merges cleanly).

        A preview for people deciding: the merge happens in memory and writes nothing.
        """
        with git_errors(f"try merging {theirs} into {ours}"):
            return merge_conflicts(self.repo, ours, theirs)

    def revert(
        self,
        commit: pygit2.Oid,
        onto: pygit2.Oid,
        message: str,
        trailers: Mapping[str, str] | None = None,
    ) -> pygit2.Oid:
        """A new commit on ``onto`` undoing ``commit``; ``MergeConflict`` if later edits clash."""
        with git_errors(f"revert {commit} on {onto}"):
            tree = revert_tree(self.repo, commit, onto)
        return self.commit(tree, [onto], message, trailers)
