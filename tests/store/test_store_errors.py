"""The one mapping from pygit2 / OS errors to GitpatchError: every entry, triggered for real."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from gitpatch.core.model import FileChange
from gitpatch.errors import ConcurrentUpdate, GitpatchError, RepositoryError, ResourceNotFound
from gitpatch.store import Store, git_errors, is_lock_contention, translate


@pytest.fixture
def repo(git_repo: Path) -> pygit2.Repository:
    """A repository with one commit on main, built with the store."""
    store = Store.open(git_repo)
    tree = store.build_tree(None, [FileChange("a.txt", b"a\n")])
    store.update_ref("refs/heads/main", store.commit(tree, [], "one"), None, "init")
    return store.repo


def _lock_main(repo: pygit2.Repository) -> None:
    (Path(repo.path) / "refs/heads/main.lock").write_text("")


def _stale_set_target(repo: pygit2.Repository) -> None:
    ref = repo.references["refs/heads/main"]
    other = pygit2.Repository(repo.path)
    tree = repo.head.peel(pygit2.Commit).tree_id
    sig = pygit2.Signature("t", "t@example.com")
    moved = other.create_commit(None, sig, sig, "moved\n", tree, [repo.head.target])
    other.references["refs/heads/main"].set_target(moved, "other writer")
    ref.set_target(repo.head.target, "stale writer")


def _locked_set_target(repo: pygit2.Repository) -> None:
    _lock_main(repo)
    repo.references["refs/heads/main"].set_target(repo.head.target, "blocked")


def _locked_transaction(repo: pygit2.Repository) -> None:
    _lock_main(repo)
    with repo.transaction() as txn:
        txn.lock_ref("refs/heads/main")


def _ambiguous(repo: pygit2.Repository) -> None:
    seen: set[str] = set()
    for i in range(5000):
        prefix = str(repo.create_blob(f"blob {i}\n".encode()))[:4]
        if prefix in seen:
            repo.revparse_single(prefix)
        seen.add(prefix)


def _generic_git_error(repo: pygit2.Repository) -> None:
    head = repo.head.peel(pygit2.Commit)
    repo.revert_commit(head, head, 3)  # mainline on a non-merge commit


Trigger = Callable[[pygit2.Repository], object]

#: (id, trigger, raw error libgit2 raises, gitpatch error expected, text in its message)
CASES: list[tuple[str, Trigger, type[BaseException], type[GitpatchError], str]] = [
    ("lock-oserror", _locked_set_target, OSError, ConcurrentUpdate, "lock file is held"),
    ("lock-giterror", _locked_transaction, pygit2.GitError, ConcurrentUpdate, "lock file"),
    (
        "ref-exists",
        lambda r: r.create_reference("refs/heads/main", r.head.target),
        pygit2.AlreadyExistsError,
        ConcurrentUpdate,
        "changed concurrently",
    ),
    ("stale-ref", _stale_set_target, pygit2.GitError, ConcurrentUpdate, "changed concurrently"),
    ("ambiguous", _ambiguous, pygit2.AmbiguousError, RepositoryError, "ambiguous"),
    (
        "invalid-spec",
        lambda r: r.create_reference("refs/heads/a..b", r.head.target),
        pygit2.InvalidSpecError,
        RepositoryError,
        "invalid reference name",
    ),
    (
        "not-found",
        lambda r: r.revparse_single("no-such-branch"),
        pygit2.NotFoundError,
        RepositoryError,
        "not found",
    ),
    (
        "key-error",
        lambda r: r[pygit2.Oid(hex="5" * 40)],
        KeyError,
        RepositoryError,
        "not found",
    ),
    ("invalid", lambda r: pygit2.Oid(hex="xyz"), pygit2.InvalidError, RepositoryError, "xyz"),
    ("generic", _generic_git_error, pygit2.GitError, RepositoryError, "not a merge"),
    (
        "oserror",
        lambda r: (Path(r.path) / "no" / "such" / "file").read_bytes(),
        FileNotFoundError,
        RepositoryError,
        "operating system error",
    ),
]


@pytest.mark.parametrize(
    ("trigger", "raw", "expected", "text"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_each_mapping(
    repo: pygit2.Repository,
    trigger: Trigger,
    raw: type[BaseException],
    expected: type[GitpatchError],
    text: str,
) -> None:
    with pytest.raises(expected, match=text) as info, git_errors("test action"):
        trigger(repo)
    assert type(info.value) is expected
    assert type(info.value.__cause__) is raw
    assert info.value.details["action"] == "test action"
    assert info.value.details["cause"]
    assert info.value.message.startswith("test action")


def test_only_libgit2_words_without_a_mapping_are_unexplained(repo: pygit2.Repository) -> None:
    # A writer takes an unexplained error for a possible full disk (libgit2 loses the errno of
    # a failed write), so the mapped ones must not say so.
    unexplained = set()
    for name, trigger, *_ in CASES:
        with pytest.raises(GitpatchError) as info, git_errors("test action"):
            trigger(repo)
        if getattr(info.value, "unexplained", False):
            unexplained.add(name)
    assert unexplained == {"invalid", "generic"}
    plain = translate(ValueError("buffer too short"), "read x")
    assert isinstance(plain, RepositoryError) and not plain.unexplained


def test_plain_value_error_maps_to_repository_error() -> None:
    err = translate(ValueError("buffer too short"), "read x")
    assert isinstance(err, RepositoryError) and err.message == "read x: buffer too short"


def test_lock_contention_is_marked_for_retry() -> None:
    err = translate(OSError("failed to lock file '/x/main.lock' for writing"), "move main")
    assert isinstance(err, ConcurrentUpdate) and err.reason == "locked"
    assert err.hint and "stale .lock" in err.hint
    assert is_lock_contention(pygit2.GitError("failed to lock file 'x.lock'"))
    assert not is_lock_contention(OSError("permission denied"))


def test_unexpected_exception_type_still_maps() -> None:
    err = translate(RuntimeError("odd"), "do it")
    assert isinstance(err, RepositoryError) and "unexpected RuntimeError" in err.message


def test_gitpatch_errors_pass_through_unchanged() -> None:
    original = ResourceNotFound("gone")
    with pytest.raises(ResourceNotFound) as info, git_errors("anything"):
        raise original
    assert info.value is original


def test_corrupt_repository_never_leaks_a_raw_git_error(git_repo: Path) -> None:
    store = Store.open(git_repo)
    tree = store.build_tree(None, [FileChange("a.txt", b"precious\n")])
    commit = store.commit(tree, [], "one")
    blob = store.entry(commit, "a.txt")
    assert blob is not None
    hexid = str(blob.oid)
    (Path(store.repo.path) / "objects" / hexid[:2] / hexid[2:]).unlink()
    with pytest.raises(RepositoryError, match="not found"):
        Store.open(git_repo).read(commit, "a.txt")


MISSING = pygit2.Oid(hex="6" * 40)

CALLS: list[tuple[str, Callable[[Store, pygit2.Oid], object]]] = [
    ("entry", lambda s, c: s.entry(MISSING, "a.txt")),
    ("read", lambda s, c: s.read(MISSING, "a.txt")),
    ("build_tree", lambda s, c: s.build_tree(MISSING, [FileChange("a.txt", b"x")])),
    ("commit-tree", lambda s, c: s.commit(MISSING, [c], "m")),
    ("commit-parent", lambda s, c: s.commit(s.repo[c].peel(pygit2.Tree).id, [MISSING], "m")),
    ("info", lambda s, c: s.info(MISSING)),
    ("changed_paths", lambda s, c: s.changed_paths(c, MISSING)),
    ("is_ancestor", lambda s, c: s.is_ancestor(MISSING, c)),
    ("merge", lambda s, c: s.merge(c, MISSING, "m")),
    ("revert", lambda s, c: s.revert(MISSING, c, "m")),
    ("diff", lambda s, c: s.diff(MISSING, c)),
    ("update_ref-create", lambda s, c: s.update_ref("refs/heads/x", MISSING, None, "m")),
    ("update_ref-move", lambda s, c: s.update_ref("refs/heads/main", MISSING, c, "m")),
    ("update_refs", lambda s, c: s.update_refs([("refs/heads/main", MISSING, c)], "m")),
    ("update_note", lambda s, c: s.update_note(MISSING, lambda old: {})),
    ("resolve_commit", lambda s, c: s.resolve_commit(str(MISSING))),
]


@pytest.mark.parametrize("call", [c[1] for c in CALLS], ids=[c[0] for c in CALLS])
def test_missing_objects_give_gitpatch_errors_only(
    repo: pygit2.Repository, call: Callable[[Store, pygit2.Oid], object]
) -> None:
    store = Store.open(repo.path)
    head = store.ref_target("refs/heads/main")
    assert head is not None
    with pytest.raises(GitpatchError) as info:
        call(store, head)
    assert not isinstance(info.value, pygit2.GitError | KeyError | OSError)
    assert store.ref_target("refs/heads/main") == head
    assert store.ref_target("refs/heads/x") is None
