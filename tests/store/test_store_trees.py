"""build_tree against a plain dict model: random adds, edits, deletes and moves (hypothesis)."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitpatch.core.model import FileChange
from gitpatch.errors import GitpatchError
from gitpatch.store import Store

PARTS = st.sampled_from(["a", "b", "c"])
PATHS = st.lists(PARTS, min_size=1, max_size=3).map("/".join)
CONTENT = st.sampled_from([b"", b"one\n", b"two\n", b"\x00binary"])


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """One bare repository for every example: objects are content-addressed, refs unused."""
    root = tmp_path_factory.mktemp("trees") / "repo.git"
    pygit2.init_repository(str(root), bare=True)
    return Store.open(root)


def _placeable(files: dict[str, bytes], path: str) -> bool:
    """True when ``path`` can hold a file: no parent is a file and it is not a directory."""
    parts = path.split("/")
    if any("/".join(parts[:i]) in files for i in range(1, len(parts))):
        return False
    return not any(other.startswith(path + "/") for other in files)


def _model(files: dict[str, bytes], changes: list[FileChange]) -> dict[str, bytes] | None:
    """What the tree should hold after ``changes``, or None when build_tree must refuse."""
    out = dict(files)
    for ch in changes:
        if ch.source is not None:
            if ch.source not in out:
                return None
            moved = out.pop(ch.source)
            if ch.path in out or not _placeable(out, ch.path):
                return None
            out[ch.path] = moved if ch.content is None else ch.content
        elif ch.content is None:
            if ch.path not in out:
                return None
            del out[ch.path]
        else:
            if ch.path not in out and not _placeable(out, ch.path):
                return None
            out[ch.path] = ch.content
    return out


def _listing(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str = "") -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for entry in tree:
        path = prefix + (entry.name or "")
        obj = repo[entry.id]
        if isinstance(obj, pygit2.Tree):
            assert len(obj) > 0, f"empty directory {path!r} left in the tree"
            found.update(_listing(repo, obj, path + "/"))
        else:
            assert isinstance(obj, pygit2.Blob)
            found[path] = obj.data
    return found


CHANGE = st.one_of(
    st.builds(FileChange, PATHS, CONTENT),
    st.builds(FileChange, PATHS, st.none()),
    st.builds(FileChange, PATHS, st.one_of(st.none(), CONTENT), PATHS),
)
BASE = st.dictionaries(PATHS, CONTENT, max_size=6)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(base=BASE, changes=st.lists(CHANGE, min_size=1, max_size=5))
def test_build_tree_matches_the_model(
    store: Store, base: dict[str, bytes], changes: list[FileChange]
) -> None:
    start = _model({}, [FileChange(p, c) for p, c in base.items()])
    if start is None:
        return  # the generated base itself has a file below a file
    tree = store.build_tree(None, [FileChange(p, c) for p, c in start.items()])
    commit = store.commit(tree, [], "base")
    old_root = store.repo[tree]
    assert isinstance(old_root, pygit2.Tree)
    assert _listing(store.repo, old_root) == start
    expected = _model(start, changes)
    if expected is None:
        with pytest.raises(GitpatchError):
            store.build_tree(commit, changes)
        return
    result = store.repo[store.build_tree(commit, changes)]
    assert isinstance(result, pygit2.Tree)
    assert _listing(store.repo, result) == expected
    # Subtrees no change touched keep their ids: nothing outside the changed paths is rewritten.
    touched = {p.split("/")[0] for ch in changes for p in (ch.path, ch.source) if p}
    for entry in old_root:
        if entry.name not in touched:
            assert result[entry.name].id == entry.id  # type: ignore[index]


def test_listing_helper_sees_nested_files(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "r.git"), bare=True)
    store = Store.open(tmp_path / "r.git")
    tree = store.build_tree(None, [FileChange("x/y/z", b"1"), FileChange("w", b"2")])
    root = repo[tree]
    assert isinstance(root, pygit2.Tree)
    assert _listing(repo, root) == {"x/y/z": b"1", "w": b"2"}
