"""Tree comparison and trivial merges used by review: they must agree with libgit2 and git."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from gitpatch._review_trees import changed_paths, replay
from gitpatch.model import FileChange
from gitpatch.store import Store
from tests.conftest import git

BASE = {
    "a.txt": b"a\n",
    "b.txt": b"b\n",
    "dir/c.txt": b"c\n",
    "dir/sub/d.txt": b"d\n",
    "dir/sub/e.txt": b"e\n",
    "other/f.txt": b"f\n",
}


@pytest.fixture
def store(git_repo: Path) -> Store:
    return Store.open(git_repo)


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


@pytest.mark.parametrize(("name", "changes"), CHANGES, ids=[c[0] for c in CHANGES])
def test_changed_paths_agrees_with_the_store_and_git(
    store: Store, git_repo: Path, name: str, changes: list[FileChange]
) -> None:
    old = base(store)
    new = commit(store, old, changes)
    mine = changed_paths(store, old, new)
    assert mine == store.changed_paths(old, new)
    by_git = git(git_repo, "diff", "--name-only", "--no-renames", str(old), str(new)).split()
    assert mine == sorted(by_git)


def test_changed_paths_from_nothing_lists_every_file(store: Store) -> None:
    assert changed_paths(store, None, base(store)) == sorted(BASE)


def test_changed_paths_sees_a_mode_change(store: Store, git_repo: Path) -> None:
    old = base(store)
    tree = store.repo[old].peel(pygit2.Tree)
    builder = store.repo.TreeBuilder(tree)
    builder.insert("a.txt", tree["a.txt"].id, pygit2.enums.FileMode.BLOB_EXECUTABLE)
    new = store.commit(builder.write(), [old], "chmod")
    assert changed_paths(store, old, new) == ["a.txt"] == store.changed_paths(old, new)


@pytest.mark.parametrize(("name", "changes"), CHANGES, ids=[c[0] for c in CHANGES])
def test_replay_of_a_disjoint_change_equals_libgit2s_merge(
    store: Store, name: str, changes: list[FileChange]
) -> None:
    start = base(store)
    theirs = commit(store, start, changes)
    ours = commit(store, start, [FileChange("ours-only.txt", b"ours\n")])
    tree = replay(store, ours, start, theirs)
    assert tree is not None
    merged = store.merge(ours, theirs, "merge")
    assert tree == store.repo[merged].peel(pygit2.Tree).id


def test_replay_refuses_a_path_changed_on_both_sides(store: Store) -> None:
    start = base(store)
    theirs = commit(store, start, [FileChange("a.txt", b"theirs\n")])
    ours = commit(store, start, [FileChange("a.txt", b"ours\n")])
    assert replay(store, ours, start, theirs) is None


def test_replay_accepts_the_same_change_on_both_sides(store: Store) -> None:
    start = base(store)
    theirs = commit(store, start, [FileChange("a.txt", b"same\n")])
    ours = commit(store, start, [FileChange("a.txt", b"same\n"), FileChange("b.txt", None)])
    assert replay(store, ours, start, theirs) == store.repo[ours].peel(pygit2.Tree).id


def test_replay_as_a_revert_restores_a_deleted_file(store: Store) -> None:
    start = base(store)
    gone = commit(store, start, [FileChange("dir/sub/d.txt", None)])
    later = commit(store, gone, [FileChange("b.txt", b"later\n")])
    tree = replay(store, later, gone, start)
    assert tree is not None
    reverted = store.commit(tree, [later], "revert")
    assert store.read(reverted, "dir/sub/d.txt") == b"d\n"
    assert store.read(reverted, "b.txt") == b"later\n"


def test_replay_leaves_modes_it_cannot_keep_to_the_real_merge(store: Store) -> None:
    start = base(store)
    tree = store.repo[start].peel(pygit2.Tree)
    builder = store.repo.TreeBuilder(tree)
    blob = store.repo.create_blob(b"#!/bin/sh\n")
    builder.insert("run.sh", blob, pygit2.enums.FileMode.BLOB_EXECUTABLE)
    theirs = store.commit(builder.write(), [start], "add an executable")
    assert replay(store, start, start, theirs) is None


def test_a_directory_replaced_by_a_file(store: Store, git_repo: Path) -> None:
    old = base(store)
    builder = store.repo.TreeBuilder(store.repo[old].peel(pygit2.Tree))
    builder.remove("other")
    builder.insert("other", store.repo.create_blob(b"o\n"), pygit2.enums.FileMode.BLOB)
    new = store.commit(builder.write(), [old], "dir to file")
    assert changed_paths(store, old, new) == ["other", "other/f.txt"]
    assert changed_paths(store, old, new) == store.changed_paths(old, new)
    ours = commit(store, old, [FileChange("ours.txt", b"x\n")])
    merged = store.repo[store.merge(ours, new, "merge")].peel(pygit2.Tree).id
    assert replay(store, ours, old, new) in (None, merged), "replay may decline, never differ"
