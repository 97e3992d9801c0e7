"""The store's change-sized merge agrees with libgit2's full merge, or hands over to it."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygit2.enums import MergeFlag

from gitpatch.core.model import FileChange as F
from gitpatch.errors import GitpatchError
from gitpatch.store import Store
from gitpatch.store import _merging as merging
from gitpatch.store import _treediff as treediff

TEXT = b"1\n2\n3\n4\n5\n6\n7\n8\n9\n"
BASE = [F("a.txt", TEXT), F("b.txt", b"b\n"), F("dir/c.txt", TEXT), F("bin.dat", b"\x00\x01")]


def edit(first: bytes = b"1", last: bytes = b"9") -> bytes:
    """TEXT with its first and/or last line replaced."""
    return TEXT.replace(b"1\n", first + b"\n", 1).replace(b"9\n", last + b"\n", 1)


# (id, ours, theirs, handled by the fast path)
CASES: list[tuple[str, list[F], list[F], bool]] = [
    ("disjoint files", [F("a.txt", edit(b"A"))], [F("b.txt", b"B\n")], True),
    ("same file, far apart", [F("a.txt", edit(b"A"))], [F("a.txt", edit(last=b"Z"))], True),
    ("same change both sides", [F("b.txt", b"x\n")], [F("b.txt", b"x\n")], True),
    ("new files both sides", [F("n1.txt", b"1\n")], [F("dir/n2.txt", b"2\n")], True),
    ("delete vs untouched", [F("b.txt", None)], [F("a.txt", edit(b"A"))], True),
    ("theirs empties a dir", [F("a.txt", edit(b"A"))], [F("dir/c.txt", None)], True),
    ("move vs untouched", [F("moved.txt", None, source="b.txt")], [F("a.txt", b"x\n")], True),
    ("conflicting lines", [F("a.txt", edit(b"A"))], [F("a.txt", edit(b"B"))], False),
    ("modify vs delete", [F("a.txt", edit(b"A"))], [F("a.txt", None)], False),
    ("move vs modify", [F("m.txt", None, source="a.txt")], [F("a.txt", edit(b"B"))], False),
    ("add/add different", [F("new.txt", b"1\n")], [F("new.txt", b"2\n")], False),
    ("binary both sides", [F("bin.dat", b"\x00\x02")], [F("bin.dat", b"\x00\x03")], False),
    ("file vs directory", [F("b.txt", None), F("b.txt/x", b"x\n")], [F("b.txt", b"B\n")], False),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """One bare repository for all cases (objects are content-addressed)."""
    root = tmp_path_factory.mktemp("merging") / "repo.git"
    pygit2.init_repository(str(root), bare=True)
    return Store.open(root)


def _commit(store: Store, base: pygit2.Oid | None, changes: list[F], msg: str) -> pygit2.Oid:
    return store.commit(store.build_tree(base, changes), [base] if base else [], msg)


@pytest.mark.parametrize(
    ("ours_changes", "theirs_changes", "fast"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_merge_matches_libgit2(
    store: Store, ours_changes: list[F], theirs_changes: list[F], fast: bool
) -> None:
    base = _commit(store, None, BASE, "base")
    ours = _commit(store, base, ours_changes, "ours")
    theirs = _commit(store, base, theirs_changes, "theirs")
    repo = store.repo
    quick = merging.merge_trees(
        repo,
        treediff.tree_id(repo, base),
        repo[ours].peel(pygit2.Tree).id,
        treediff.tree_id(repo, theirs),
    )
    assert (quick is not None) == fast
    index = repo.merge_commits(ours, theirs, flags=MergeFlag.FIND_RENAMES)
    if quick is not None:
        assert index.conflicts is None
        assert quick == index.write_tree(repo)
    if index.conflicts is None:
        merged = store.merge(ours, theirs, "merge")
        assert repo[merged].peel(pygit2.Tree).id == index.write_tree(repo)


def test_executable_bit_survives_a_content_merge(tmp_path: Path) -> None:
    root = tmp_path / "r.git"
    repo = pygit2.init_repository(str(root), bare=True)
    store = Store.open(root)
    builder = repo.TreeBuilder()
    builder.insert("run.sh", repo.create_blob(TEXT), pygit2.enums.FileMode.BLOB_EXECUTABLE)
    base = store.commit(builder.write(), [], "base")
    ours = _commit(store, base, [F("run.sh", edit(b"A"))], "ours")
    theirs = _commit(store, base, [F("run.sh", edit(last=b"Z"))], "theirs")
    merged = store.merge(ours, theirs, "merge")
    assert store.read(merged, "run.sh") == edit(b"A", b"Z")
    assert store.entry(merged, "run.sh").mode == 0o100755  # type: ignore[union-attr]


def test_revert_uses_the_same_path_and_agrees_with_libgit2(tmp_path: Path) -> None:
    root = tmp_path / "r.git"
    pygit2.init_repository(str(root), bare=True)
    store = Store.open(root)
    base = _commit(store, None, BASE, "base")
    change = _commit(store, base, [F("a.txt", edit(b"A")), F("new.txt", b"n\n")], "change")
    later = _commit(store, change, [F("a.txt", edit(b"A", b"Z")), F("b.txt", b"B\n")], "later")
    undone = store.revert(change, later, "undo")
    repo = store.repo
    index = repo.revert_commit(repo[change].peel(pygit2.Commit), repo[later].peel(pygit2.Commit), 0)
    assert index.conflicts is None
    assert store.repo[undone].peel(pygit2.Tree).id == index.write_tree(store.repo)
    assert store.read(undone, "a.txt") == edit(last=b"Z")
    assert store.read(undone, "new.txt") is None


LINES = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta"]), min_size=1, max_size=6)
CONTENT = LINES.map(lambda lines: ("\n".join(lines) + "\n").encode())
PATHS = st.sampled_from(["a", "b", "d/x", "d/y", "e/f/g"])
SIDE = st.dictionaries(PATHS, st.one_of(st.none(), CONTENT), max_size=3)


@settings(max_examples=120, deadline=None)
@given(base=st.dictionaries(PATHS, CONTENT, min_size=1, max_size=5), ours=SIDE, theirs=SIDE)
def test_fast_merge_agrees_with_libgit2_on_random_changes(
    store: Store,
    base: dict[str, bytes],
    ours: dict[str, bytes | None],
    theirs: dict[str, bytes | None],
) -> None:
    base_commit = _commit(store, None, [F(p, c) for p, c in base.items()], "base")

    def side(changes: dict[str, bytes | None]) -> pygit2.Oid | None:
        valid = {p: c for p, c in changes.items() if c is not None or p in base}
        try:
            return _commit(store, base_commit, [F(p, c) for p, c in valid.items()], "side")
        except GitpatchError:
            return None  # e.g. a file below a file: not a state a branch can reach

    mine, other = side(ours), side(theirs)
    if mine is None or other is None:
        return
    repo = store.repo
    quick = merging.merge_trees(
        repo,
        treediff.tree_id(repo, base_commit),
        repo[mine].peel(pygit2.Tree).id,
        treediff.tree_id(repo, other),
    )
    if quick is None:
        return
    index = repo.merge_commits(mine, other, flags=MergeFlag.FIND_RENAMES)
    assert index.conflicts is None
    assert quick == index.write_tree(repo)
