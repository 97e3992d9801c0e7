"""Store: every method and every error, on real repositories (refs and notes: test_store_refs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest
from pygit2.enums import ConfigLevel

from gitpatch.core.model import FileChange as F
from gitpatch.errors import (
    InvalidArguments,
    MergeConflict,
    NotATextResource,
    RepositoryError,
    ResourceExists,
    ResourceNotFound,
    UnsafePath,
)
from gitpatch.store import DEFAULT_EMAIL, DEFAULT_NAME, Store
from tests.gitkit import git

MAIN = "refs/heads/main"
EXEC = 0o100755


def land(store: Store, changes: list[F], message: str = "change") -> pygit2.Oid:
    """Build ``changes`` on main's tip, commit, and move main by CAS."""
    tip = store.ref_target(MAIN)
    tree = store.build_tree(tip, changes)
    commit = store.commit(tree, [tip] if tip else [], message)
    store.update_ref(MAIN, commit, tip, f"test: {message}")
    return commit


@pytest.fixture
def no_global_config(tmp_path: Path) -> Iterator[None]:
    """Point libgit2's global/XDG/system config search at an empty dir for one test."""
    empty = tmp_path / "empty-config"
    empty.mkdir()
    levels = (ConfigLevel.GLOBAL, ConfigLevel.XDG, ConfigLevel.SYSTEM)
    saved = {lvl: pygit2.settings.search_path[lvl] for lvl in levels}
    for lvl in levels:
        pygit2.settings.search_path[lvl] = str(empty)
    yield
    for lvl, value in saved.items():
        pygit2.settings.search_path[lvl] = value


# -- open and identity ---------------------------------------------------------------------


def test_open_finds_repository_from_subdirectory(git_repo: Path) -> None:
    (git_repo / "sub").mkdir()
    assert Path(Store.open(git_repo / "sub").repo.workdir).resolve() == git_repo.resolve()


def test_open_refuses_a_plain_directory(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(RepositoryError, match="not a git repository") as info:
        Store.open(plain)
    assert info.value.details["path"] == str(plain)


def test_open_refuses_a_missing_path(tmp_path: Path) -> None:
    with pytest.raises(RepositoryError, match="Repository not found") as info:
        Store.open(tmp_path / "missing")
    assert isinstance(info.value.__cause__, pygit2.GitError)


def test_open_bare_repository(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--bare", "-b", "main", "bare.git")
    store = Store.open(tmp_path / "bare.git")
    assert store.repo.is_bare
    assert land(store, [F("a.txt", b"a\n")]) == store.ref_target("HEAD")


def test_signature_from_repository_config(store: Store) -> None:
    sig = store.signature()
    assert (sig.name, sig.email) == ("Test Person", "person@example.com")


def test_signature_default_when_user_unset(tmp_path: Path, no_global_config: None) -> None:
    git(tmp_path, "init", "-q", "-b", "main", "r")
    store = Store.open(tmp_path / "r")
    sig = store.signature()
    assert (sig.name, sig.email) == (DEFAULT_NAME, DEFAULT_EMAIL)
    commit = land(store, [F("a.txt", b"a\n")])
    assert store.info(commit).author == f"{DEFAULT_NAME} <{DEFAULT_EMAIL}>"


def test_signature_name_without_email(tmp_path: Path, no_global_config: None) -> None:
    git(tmp_path, "init", "-q", "-b", "main", "r")
    git(tmp_path / "r", "config", "user.name", "Only Name")
    sig = Store.open(tmp_path / "r").signature()
    assert (sig.name, sig.email) == ("Only Name", DEFAULT_EMAIL)


def test_signature_falls_back_when_config_identity_is_unusable(
    tmp_path: Path, no_global_config: None
) -> None:
    git(tmp_path, "init", "-q", "-b", "main", "r")
    git(tmp_path / "r", "config", "user.name", "<angle>")
    store = Store.open(tmp_path / "r")
    assert store.signature().name == DEFAULT_NAME
    land(store, [F("a.txt", b"a\n")])


# -- names ---------------------------------------------------------------------------------


def test_resolve_commit_by_id_prefix_and_ref(store: Store) -> None:
    c1 = land(store, [F("a.txt", b"1\n")])
    c2 = land(store, [F("a.txt", b"2\n")])
    assert store.resolve_commit(str(c1)) == c1
    assert store.resolve_commit(str(c1)[:8]) == c1
    assert store.resolve_commit("main") == c2
    assert store.resolve_commit(MAIN) == c2
    assert store.resolve_commit("HEAD") == c2


@pytest.mark.parametrize("rev", ["nope", "refs/heads/nope", "0" * 40, "deadbeef"])
def test_resolve_commit_missing(store: Store, rev: str) -> None:
    land(store, [F("a.txt", b"1\n")])
    with pytest.raises(RepositoryError, match=rev):
        store.resolve_commit(rev)


def test_resolve_commit_empty_is_invalid(store: Store) -> None:
    with pytest.raises(InvalidArguments):
        store.resolve_commit("  ")


def test_resolve_commit_refuses_a_blob(store: Store) -> None:
    blob = store.repo.create_blob(b"x\n")
    with pytest.raises(RepositoryError, match="not a commit"):
        store.resolve_commit(str(blob))


def test_resolve_commit_ambiguous_prefix(store: Store) -> None:
    # Blob contents are fixed, so their ids (and the first 4-hex collision) are deterministic.
    seen: dict[str, pygit2.Oid] = {}
    for i in range(5000):
        oid = store.repo.create_blob(f"blob {i}\n".encode())
        if str(oid)[:4] in seen:
            break
        seen[str(oid)[:4]] = oid
    prefix = str(oid)[:4]
    with pytest.raises(RepositoryError, match="ambiguous"):
        store.resolve_commit(prefix)


def test_ref_target_and_head_branch(store: Store) -> None:
    assert store.head_branch() == MAIN  # unborn
    assert store.ref_target(MAIN) is None
    assert store.ref_target("HEAD") is None
    c1 = land(store, [F("a.txt", b"1\n")])
    assert store.ref_target(MAIN) == c1
    assert store.ref_target("HEAD") == c1
    assert store.ref_target("refs/heads/other") is None
    store.repo.set_head(c1)
    assert store.head_branch() is None


# -- reading -------------------------------------------------------------------------------


def test_entry_and_read(store: Store) -> None:
    c = land(store, [F("dir/a.txt", b"alpha\n"), F("top.txt", b"top\n")])
    found = store.entry(c, "dir/a.txt")
    assert found is not None and found.mode == 0o100644 and found.kind == "file"
    assert store.repo[found.oid].read_raw() == b"alpha\n"
    d = store.entry(c, "dir")
    assert d is not None and d.kind == "directory"
    assert store.read(c, "dir/a.txt") == b"alpha\n"
    assert store.read(c, "missing.txt") is None
    assert store.read(c, "top.txt/below") is None
    assert store.entry(c, "dir/nope") is None


def _commit_special(store: Store) -> pygit2.Oid:
    """A commit holding a symlink and a submodule entry, built with TreeBuilder directly."""
    repo = store.repo
    builder = repo.TreeBuilder()
    builder.insert("link", repo.create_blob(b"target.txt"), pygit2.enums.FileMode.LINK)
    builder.insert("target.txt", repo.create_blob(b"t\n"), pygit2.enums.FileMode.BLOB)
    builder.insert("sub", pygit2.Oid(hex="1" * 40), pygit2.enums.FileMode.COMMIT)
    return store.commit(builder.write(), [], "special entries")


@pytest.mark.parametrize(
    ("path", "word"), [("link", "symbolic link"), ("sub", "submodule"), ("d", "directory")]
)
def test_read_refuses_non_files(store: Store, path: str, word: str) -> None:
    base = _commit_special(store)
    c = store.commit(store.build_tree(base, [F("d/f.txt", b"f\n")]), [base], "dir")
    with pytest.raises(NotATextResource, match=word) as info:
        store.read(c, path)
    assert info.value.details["path"] == path


def test_entry_on_missing_commit_is_repository_error(store: Store) -> None:
    with pytest.raises(RepositoryError):
        store.entry(pygit2.Oid(hex="2" * 40), "a.txt")


# -- build_tree ----------------------------------------------------------------------------


def test_build_tree_adds_nested_files_from_nothing(store: Store) -> None:
    tree = store.build_tree(None, [F("a/b/c/d.txt", b"deep\n"), F("top.txt", b"t\n")])
    c = store.commit(tree, [], "new")
    assert store.read(c, "a/b/c/d.txt") == b"deep\n"
    assert store.read(c, "top.txt") == b"t\n"


def test_build_tree_keeps_mode_and_untouched_subtrees(store: Store) -> None:
    base = land(store, [F("bin/run.sh", b"#!/bin/sh\n"), F("lib/x.py", b"x\n")])
    tree = store.repo[base].tree
    builder = store.repo.TreeBuilder(tree["bin"].id)
    builder.insert("run.sh", tree["bin/run.sh"].id, EXEC)
    root = store.repo.TreeBuilder(tree)
    root.insert("bin", builder.write(), pygit2.enums.FileMode.TREE)
    base = store.commit(root.write(), [base], "make executable")
    new = store.commit(store.build_tree(base, [F("bin/run.sh", b"#!/bin/sh\necho\n")]), [], "e")
    assert store.entry(new, "bin/run.sh").mode == EXEC  # type: ignore[union-attr]
    assert store.entry(new, "lib") == store.entry(base, "lib")


def _loose_objects(store: Store) -> set[str]:
    objects = Path(store.repo.path) / "objects"
    return {p.parent.name + p.name for p in objects.glob("??/*")}


def test_build_tree_writes_one_tree_per_changed_directory(store: Store) -> None:
    files = [
        F(f"d{i}/s{j}/f{k}.txt", f"{i} {j} {k}\n".encode())
        for i in range(6)
        for j in range(6)
        for k in range(6)
    ]
    base = land(store, files)
    before = _loose_objects(store)
    tree = store.build_tree(base, [F("d3/s2/f1.txt", b"changed\n")])
    written = _loose_objects(store) - before
    # The blob and the three trees on its path (d3/s2, d3, root); nothing else.
    assert len(written) == 4
    assert str(tree) in written
    before = _loose_objects(store)
    store.build_tree(base, [F("d0/s0/moved.txt", None, source="d5/s5/f5.txt")])
    assert len(_loose_objects(store) - before) == 5  # d0/s0, d0, d5/s5, d5, root; blob reused


def test_build_tree_delete_removes_empty_directories(store: Store) -> None:
    base = land(store, [F("a/b/c/only.txt", b"x\n"), F("a/keep.txt", b"k\n")])
    c = land(store, [F("a/b/c/only.txt", None)])
    assert store.entry(c, "a/b") is None
    assert store.read(c, "a/keep.txt") == b"k\n"
    assert store.changed_paths(base, c) == ["a/b/c/only.txt"]


def test_build_tree_deleting_everything_gives_empty_root(store: Store) -> None:
    land(store, [F("a/x.txt", b"x\n")])
    c = land(store, [F("a/x.txt", None)])
    assert len(store.repo[c].tree) == 0


def test_build_tree_move_reuses_blob_and_mode(store: Store) -> None:
    base = land(store, [F("src/old.py", b"NAME = 'old'\n")])
    old = store.entry(base, "src/old.py")
    c = land(store, [F("lib/new.py", None, source="src/old.py")])
    new = store.entry(c, "lib/new.py")
    assert new == old
    assert store.entry(c, "src") is None


def test_build_tree_move_with_new_content(store: Store) -> None:
    land(store, [F("src/old.py", b"NAME = 'old'\n"), F("src/other.py", b"o\n")])
    c = land(store, [F("src/new.py", b"NAME = 'new'\n", source="src/old.py")])
    assert store.read(c, "src/new.py") == b"NAME = 'new'\n"
    assert store.read(c, "src/old.py") is None


def test_build_tree_move_then_reuse_source_path(store: Store) -> None:
    land(store, [F("a.txt", b"a\n")])
    c = land(store, [F("b.txt", None, source="a.txt"), F("a.txt", b"fresh\n")])
    assert store.read(c, "b.txt") == b"a\n"
    assert store.read(c, "a.txt") == b"fresh\n"


def test_build_tree_file_takes_the_name_of_a_directory_it_empties(store: Store) -> None:
    land(store, [F("a/a", b"inner\n")])
    c = land(store, [F("a", None, source="a/a")])
    assert store.read(c, "a") == b"inner\n"
    with pytest.raises(NotATextResource, match="is a directory"):
        store.build_tree(c, [F("a", None), F("a/x", b"1"), F("a", b"file")])


def test_build_tree_replace_file_by_directory_in_one_change(store: Store) -> None:
    land(store, [F("a", b"file\n")])
    c = land(store, [F("a", None), F("a/b.txt", b"inside\n")])
    assert store.read(c, "a/b.txt") == b"inside\n"


@pytest.mark.parametrize(
    ("changes", "error", "text"),
    [
        ([F("top.txt/x", b"x")], ResourceExists, "'top.txt' is a file"),
        ([F("dir", b"x")], NotATextResource, "is a directory"),
        ([F("missing.txt", None)], ResourceNotFound, "no such file"),
        ([F("nowhere/missing.txt", None)], ResourceNotFound, "no such file"),
        ([F("dir", None)], NotATextResource, "is a directory"),
        ([F("new.txt", None, source="missing.txt")], ResourceNotFound, "missing.txt"),
        ([F("top.txt", None, source="dir/f.txt")], ResourceExists, "target already exists"),
        ([F("/abs.txt", b"x")], InvalidArguments, "invalid repository path"),
        ([F("a/../b.txt", b"x")], InvalidArguments, "'..'"),
        ([F("a//b.txt", b"x")], InvalidArguments, "empty"),
        ([F("", b"x")], InvalidArguments, "invalid repository path"),
        ([F("ok.txt", b"x", source="")], InvalidArguments, "invalid repository path"),
        ([F("sub/.GIT/config", b"x")], UnsafePath, "inside .git"),
        ([F(".git", b"x")], UnsafePath, "inside .git"),
    ],
)
def test_build_tree_errors(
    store: Store, changes: list[F], error: type[Exception], text: str
) -> None:
    base = land(store, [F("top.txt", b"t\n"), F("dir/f.txt", b"f\n")])
    with pytest.raises(error, match=text):
        store.build_tree(base, changes)
    assert store.ref_target(MAIN) == base


def test_build_tree_refuses_to_edit_links_and_submodules(store: Store) -> None:
    base = _commit_special(store)
    for path in ("link", "sub"):
        with pytest.raises(NotATextResource, match="not a regular file"):
            store.build_tree(base, [F(path, b"new\n")])
    with pytest.raises(NotATextResource, match="symbolic link"):
        store.build_tree(base, [F("moved", b"other", source="link")])
    moved = store.commit(store.build_tree(base, [F("moved", None, source="link")]), [], "m")
    assert store.entry(moved, "moved").kind == "symlink"  # type: ignore[union-attr]
    deleted = store.commit(store.build_tree(base, [F("sub", None)]), [], "d")
    assert store.entry(deleted, "sub") is None


# -- commits, trailers, info ---------------------------------------------------------------


def test_commit_with_trailers_and_author(store: Store) -> None:
    author = pygit2.Signature("Agent", "agent@example.com", 1767225600, 0)
    tree = store.build_tree(None, [F("a.txt", b"a\n")])
    trailers = {"Gitpatch-Proposal": "p-1", "Gitpatch-Tool": "apply_patch"}
    c = store.commit(tree, [], "  Add a  \n\n", trailers, author=author)
    info = store.info(c)
    assert info.message == "Add a\n\nGitpatch-Proposal: p-1\nGitpatch-Tool: apply_patch\n"
    assert info.summary == "Add a"
    assert info.author == "Agent <agent@example.com>"
    assert info.time == 1767225600
    assert info.parents == ()
    assert store.info(c).trailers == trailers
    assert store.repo[c].committer.name == "Test Person"


def test_commit_without_trailers(store: Store) -> None:
    c = store.commit(store.build_tree(None, []), [], "plain")
    assert store.info(c).trailers == {}
    assert store.info(c).message == "plain\n"


@pytest.mark.parametrize(
    ("message", "trailers"),
    [
        ("", None),
        ("ok", {"Bad Key": "v"}),
        ("ok", {"Key": "two\nlines"}),
        ("ok", {"Key": " "}),
    ],
)
def test_commit_invalid_message(store: Store, message: str, trailers: dict[str, str]) -> None:
    with pytest.raises(InvalidArguments):
        store.commit(store.build_tree(None, []), [], message, trailers)


def test_info_of_a_tree_is_repository_error(store: Store) -> None:
    tree = store.build_tree(None, [F("a", b"")])
    with pytest.raises(RepositoryError, match="not a commit"):
        store.info(tree)
    with pytest.raises(RepositoryError):
        store.info(pygit2.Oid(hex="3" * 40))


# -- history -------------------------------------------------------------------------------


def test_changed_paths_and_is_ancestor(store: Store) -> None:
    c1 = land(store, [F("a/x.txt", b"x\n"), F("b.txt", b"b\n")])
    c2 = land(store, [F("c/y.txt", None, source="a/x.txt"), F("b.txt", b"B\n")])
    assert store.changed_paths(None, c1) == ["a/x.txt", "b.txt"]
    assert store.changed_paths(c1, c2) == ["a/x.txt", "b.txt", "c/y.txt"]
    assert store.changed_paths(c2, c2) == []
    assert store.is_ancestor(c1, c2)
    assert store.is_ancestor(c2, c2)
    assert not store.is_ancestor(c2, c1)


def test_diff_text_and_stats(store: Store) -> None:
    c1 = land(store, [F("a.txt", b"one\ntwo\n")])
    c2 = land(store, [F("a.txt", b"one\n2\nthree\n"), F("new.txt", b"n\n")])
    text, stats = store.diff(c1, c2)
    assert stats == {"files": 2, "insertions": 3, "deletions": 1}
    assert "-two\n+2\n+three\n" in text and "+++ b/new.txt" in text
    text0, stats0 = store.diff(None, c1)
    assert stats0 == {"files": 1, "insertions": 2, "deletions": 0}
    assert "new file mode 100644" in text0


def _fork(store: Store, left: list[F], right: list[F]) -> tuple[pygit2.Oid, pygit2.Oid]:
    base = land(store, [F("f.txt", b"1\n2\n3\n4\n5\n6\n7\n"), F("g.txt", b"g\n")])
    ours = land(store, left, "ours")
    theirs = store.commit(store.build_tree(base, right), [base], "theirs")
    return ours, theirs


def test_merge_clean_three_way(store: Store) -> None:
    ours, theirs = _fork(
        store, [F("f.txt", b"ONE\n2\n3\n4\n5\n6\n7\n")], [F("f.txt", b"1\n2\n3\n4\n5\n6\nSEVEN\n")]
    )
    m = store.merge(ours, theirs, "merge", {"Gitpatch-Proposal": "p"})
    assert store.info(m).parents == (ours, theirs)
    assert store.read(m, "f.txt") == b"ONE\n2\n3\n4\n5\n6\nSEVEN\n"
    assert store.info(m).trailers == {"Gitpatch-Proposal": "p"}


def test_merge_follows_renames(store: Store) -> None:
    ours, theirs = _fork(
        store, [F("moved.txt", None, source="f.txt")], [F("f.txt", b"1\n2\n3\n4\n5\n6\nSEVEN\n")]
    )
    m = store.merge(ours, theirs, "merge")
    assert store.read(m, "moved.txt") == b"1\n2\n3\n4\n5\n6\nSEVEN\n"
    assert store.read(m, "f.txt") is None


def test_merge_conflict_names_paths_and_writes_nothing(store: Store) -> None:
    ours, theirs = _fork(
        store,
        [F("f.txt", b"1\nOURS\n3\n4\n5\n6\n7\n"), F("g.txt", b"ours\n")],
        [F("f.txt", b"1\nTHEIRS\n3\n4\n5\n6\n7\n"), F("g.txt", b"theirs\n")],
    )
    refs_before = set(store.repo.references)
    with pytest.raises(MergeConflict, match="f.txt, g.txt") as info:
        store.merge(ours, theirs, "merge")
    assert info.value.details["paths"] == ["f.txt", "g.txt"]
    assert set(store.repo.references) == refs_before
    assert store.ref_target(MAIN) == ours


def test_revert_and_revert_conflict(store: Store) -> None:
    c1 = land(store, [F("a.txt", b"a\n"), F("b.txt", b"b\n")])
    c2 = land(store, [F("a.txt", b"A\n")])
    c3 = land(store, [F("b.txt", b"B\n")])
    r = store.revert(c2, c3, "undo", {"Gitpatch-Tool": "undo"})
    assert store.info(r).parents == (c3,)
    assert store.read(r, "a.txt") == b"a\n" and store.read(r, "b.txt") == b"B\n"
    c4 = land(store, [F("a.txt", b"changed again\n")])
    with pytest.raises(MergeConflict, match="a.txt") as info:
        store.revert(c2, c4, "undo")
    assert info.value.details["paths"] == ["a.txt"]
    assert c1 != r


def test_revert_the_root_commit(store: Store) -> None:
    root = land(store, [F("a.txt", b"a\n")])
    two = land(store, [F("b.txt", b"b\n")])
    undone = store.revert(root, two, "undo root")
    assert store.changed_paths(two, undone) == ["a.txt"]
    assert store.read(undone, "b.txt") == b"b\n"


def test_revert_a_merge_commit_uses_first_parent(store: Store) -> None:
    ours, theirs = _fork(store, [F("g.txt", b"G\n")], [F("h.txt", b"h\n")])
    m = store.merge(ours, theirs, "merge")
    r = store.revert(m, m, "undo merge")
    assert store.read(r, "h.txt") is None and store.read(r, "g.txt") == b"G\n"


def test_history_walks_stop_at_one_depth(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    from gitpatch.store import _history as store_module

    commits = [land(store, [F("a", str(i).encode())]) for i in range(5)]
    tip = commits[-1]
    assert [c.id for c in store.walk(tip)] == commits[::-1]
    assert [c.id for c in store.walk(tip, hide=commits[1])] == commits[:1:-1]
    monkeypatch.setattr(store_module, "HISTORY_DEPTH", 3)
    assert [c.id for c in store.walk(tip)] == commits[:1:-1]
