"""The store's change-sized tree comparison, merge and revert agree with git and libgit2 on
moves, emptied directories, files that become directories and the reverse."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from pygit2.enums import MergeFlag

from gitpatch.core.model import FileChange
from gitpatch.store import Store
from tests.gitkit import git

BASE = {
    "a.txt": b"a\n",
    "b.txt": b"b\n",
    "dir/c.txt": b"c\n",
    "dir/sub/d.txt": b"d\n",
    "dir/sub/e.txt": b"e\n",
    "other/f.txt": b"f\n",
}


def commit(store: Store, parent: pygit2.Oid | None, changes: list[FileChange]) -> pygit2.Oid:
    tree = store.build_tree(parent, changes)
    return store.commit(tree, [parent] if parent is not None else [], "change")


def base(store: Store) -> pygit2.Oid:
    return commit(store, None, [FileChange(p, data) for p, data in BASE.items()])


CHANGES = [
    ("modify", [FileChange("dir/sub/d.txt", b"D\n")]),
    ("add deep", [FileChange("new/deeper/g.txt", b"g\n")]),
    ("delete last file of a dir", [FileChange("other/f.txt", None)]),
    ("move", [FileChange("moved/c.txt", None, source="dir/c.txt")]),
    ("file becomes dir", [FileChange("a.txt", None), FileChange("a.txt/inner", b"i\n")]),
    ("several", [FileChange("b.txt", b"B\n"), FileChange("dir/sub/e.txt", None)]),
]


def libgit2_merge(store: Store, ours: pygit2.Oid, theirs: pygit2.Oid) -> pygit2.Oid:
    """The tree of libgit2's full merge (the reference the fast path must equal)."""
    index = store.repo.merge_commits(ours, theirs, flags=MergeFlag.FIND_RENAMES)
    assert index.conflicts is None
    return index.write_tree(store.repo)


def tree_of(store: Store, commit: pygit2.Oid) -> pygit2.Oid:
    return store.repo[commit].peel(pygit2.Tree).id


@pytest.mark.parametrize(("name", "changes"), CHANGES, ids=[c[0] for c in CHANGES])
def test_changed_paths_agrees_with_git(
    store: Store, git_repo: Path, name: str, changes: list[FileChange]
) -> None:
    old = base(store)
    new = commit(store, old, changes)
    by_git = git(git_repo, "diff", "--name-only", "--no-renames", str(old), str(new)).split()
    assert store.changed_paths(old, new) == sorted(by_git)


def test_changed_paths_sees_a_mode_change(store: Store) -> None:
    old = base(store)
    tree = store.repo[old].peel(pygit2.Tree)
    builder = store.repo.TreeBuilder(tree)
    builder.insert("a.txt", tree["a.txt"].id, pygit2.enums.FileMode.BLOB_EXECUTABLE)
    new = store.commit(builder.write(), [old], "chmod")
    assert store.changed_paths(old, new) == ["a.txt"]


@pytest.mark.parametrize(("name", "changes"), CHANGES, ids=[c[0] for c in CHANGES])
def test_merge_of_a_disjoint_change_equals_libgit2s(
    store: Store, name: str, changes: list[FileChange]
) -> None:
    start = base(store)
    theirs = commit(store, start, changes)
    ours = commit(store, start, [FileChange("ours-only.txt", b"ours\n")])
    merged = store.merge(ours, theirs, "merge")
    assert store.info(merged).parents == (ours, theirs)
    assert tree_of(store, merged) == libgit2_merge(store, ours, theirs)


def test_revert_restores_a_deleted_file(store: Store) -> None:
    start = base(store)
    gone = commit(store, start, [FileChange("dir/sub/d.txt", None)])
    later = commit(store, gone, [FileChange("b.txt", b"later\n")])
    reverted = store.revert(gone, later, "revert")
    assert store.info(reverted).parents == (later,)
    assert store.read(reverted, "dir/sub/d.txt") == b"d\n"
    assert store.read(reverted, "b.txt") == b"later\n"


def test_a_directory_replaced_by_a_file(store: Store) -> None:
    old = base(store)
    builder = store.repo.TreeBuilder(store.repo[old].peel(pygit2.Tree))
    builder.remove("other")
    builder.insert("other", store.repo.create_blob(b"o\n"), pygit2.enums.FileMode.BLOB)
    new = store.commit(builder.write(), [old], "dir to file")
    assert store.changed_paths(old, new) == ["other", "other/f.txt"]
    ours = commit(store, old, [FileChange("ours.txt", b"x\n")])
    merged = store.merge(ours, new, "merge")
    assert tree_of(store, merged) == libgit2_merge(store, ours, new)
