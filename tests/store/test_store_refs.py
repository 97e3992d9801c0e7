"""Store refs and notes: compare-and-swap, lock contention, JSON notes, on real repositories."""

from __future__ import annotations

import os
from pathlib import Path

import pygit2
import pytest

import gitpatch.core.retry
from gitpatch.core.model import FileChange as F
from gitpatch.errors import ConcurrentUpdate, InvalidArguments, RepositoryError
from gitpatch.safety.owners import read_records
from gitpatch.store import NOTES_REF, Store
from gitpatch.store import _notes as notes
from gitpatch.store import _refs as store_refs
from tests.gitkit import git
from tests.ownerkit import LiveHolder, killed_holding
from tests.store.test_store import MAIN, land

# -- refs ----------------------------------------------------------------------------------


def test_update_ref_create_move_delete(store: Store) -> None:
    c1 = land(store, [F("a", b"1")])
    c2 = land(store, [F("a", b"2")])
    name = "refs/heads/gitpatch/p1"
    store.update_ref(name, c1, None, "create")
    store.update_ref(name, c2, c1, "move")
    assert store.ref_target(name) == c2
    store.update_ref(name, None, c2, "delete")
    assert store.ref_target(name) is None
    store.update_ref(name, None, None, "already absent: nothing to do")
    log = git(store.repo.workdir, "reflog", "show", "main")
    assert "test: change" in log


def test_update_ref_cas_failures_name_expected_and_actual(store: Store) -> None:
    c1 = land(store, [F("a", b"1")])
    c2 = land(store, [F("a", b"2")])
    cases = [(MAIN, c1, None), (MAIN, c2, c1), (MAIN, None, c1), ("refs/heads/x", c2, c1)]
    for name, new, old in cases:
        with pytest.raises(ConcurrentUpdate, match="changed by someone else") as info:
            store.update_ref(name, new, old, "lose")
        actual = store.ref_target(name)
        assert info.value.details == {
            "ref": name,
            "expected": None if old is None else str(old),
            "actual": None if actual is None else str(actual),
            "reason": "changed",
        }
    with pytest.raises(ConcurrentUpdate):
        store.update_ref(MAIN, None, None, "must be absent")
    assert store.ref_target(MAIN) == c2


def test_update_ref_loses_to_git_binary(store: Store) -> None:
    c1 = land(store, [F("a", b"1")])
    c2 = land(store, [F("a", b"2")])
    git(store.repo.workdir, "update-ref", MAIN, str(c1))
    with pytest.raises(ConcurrentUpdate):
        store.update_ref(MAIN, c2, c2, "stale")
    assert store.ref_target(MAIN) == c1


def test_update_ref_cas_on_packed_ref(store: Store) -> None:
    c1 = land(store, [F("a", b"1")])
    c2 = land(store, [F("a", b"2")])
    store.update_ref("refs/heads/packed", c1, None, "create")
    git(store.repo.workdir, "pack-refs", "--all")
    with pytest.raises(ConcurrentUpdate):
        store.update_ref("refs/heads/packed", c2, c2, "stale")
    store.update_ref("refs/heads/packed", c2, c1, "move")
    store.update_ref("refs/heads/packed", None, c2, "delete")
    assert "refs/heads/packed" not in git(store.repo.workdir, "show-ref")


def test_update_ref_refuses_symbolic_and_invalid_names(store: Store) -> None:
    c1 = land(store, [F("a", b"1")])
    with pytest.raises(RepositoryError, match="symbolic"):
        store.update_ref("HEAD", c1, c1, "no")
    with pytest.raises(RepositoryError, match="invalid reference name"):
        store.update_ref("refs/heads/bad..name", c1, None, "no")


def test_update_ref_waits_for_a_lock_to_be_released(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    c1 = land(store, [F("a", b"1")])
    c2 = land(store, [F("a", b"2")])
    lock = Path(store.repo.path) / "refs/heads/main.lock"
    lock.write_text("")
    waits: list[int] = []

    def other_process_finishes(attempt: int, cap: float = 0.0) -> float:
        # Stands in for the sleep: the holder of the lock releases it while we wait.
        waits.append(attempt)
        lock.unlink()
        return 0.0

    monkeypatch.setattr(gitpatch.core.retry, "backoff", other_process_finishes)
    store.update_ref(MAIN, c1, c2, "after waiting")
    assert waits == [0]
    assert store.ref_target(MAIN) == c1


def test_update_ref_lock_contention_then_gives_up(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    c1 = land(store, [F("a", b"1")])
    c2 = land(store, [F("a", b"2")])
    monkeypatch.setattr(store_refs, "LOCK_RETRIES", 3)
    lock = Path(store.repo.path) / "refs/heads/main.lock"
    lock.write_text("")
    with pytest.raises(ConcurrentUpdate, match="lock file") as info:
        store.update_ref(MAIN, c1, c2, "blocked")
    assert info.value.reason == "locked"
    assert lock.exists()  # a fresh lock may belong to a live process: never broken
    assert store.ref_target(MAIN) == c2


def test_update_ref_removes_the_lock_of_a_killed_owner(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    c1 = land(store, [F("a", b"1")])
    c2 = land(store, [F("a", b"2")])
    monkeypatch.setattr(store_refs, "LOCK_RETRIES", 2)
    lock = Path(store.repo.path) / "refs/heads/main.lock"
    killed_holding(Path(store.repo.path), [lock])
    store.update_ref(MAIN, c1, c2, "after a crash")
    assert store.ref_target(MAIN) == c1
    assert not lock.exists()
    assert [r for r in read_records(store.repo.path) if r.owner.dead()] == []


def test_a_dead_owners_lock_goes_even_while_a_live_process_waits_for_it(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live owner that announced the lock after it was made cannot be its holder."""
    c1 = land(store, [F("a", b"1")])
    c2 = land(store, [F("a", b"2")])
    monkeypatch.setattr(store_refs, "LOCK_RETRIES", 2)
    lock = Path(store.repo.path) / "refs/heads/main.lock"
    killed_holding(Path(store.repo.path), [lock])
    waiting = LiveHolder(Path(store.repo.path), [lock], take=False)
    try:
        store.update_ref(MAIN, c1, c2, "after a crash")
    finally:
        waiting.close()
    assert store.ref_target(MAIN) == c1 and not lock.exists()


def test_update_ref_names_a_live_holder_and_never_breaks_its_lock(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    c1 = land(store, [F("a", b"1")])
    c2 = land(store, [F("a", b"2")])
    monkeypatch.setattr(store_refs, "LOCK_RETRIES", 2)
    lock = Path(store.repo.path) / "refs/heads/main.lock"
    holder = LiveHolder(Path(store.repo.path), [lock])
    try:
        with pytest.raises(ConcurrentUpdate, match=f"pid {holder.pid}") as info:
            store.update_ref(MAIN, c1, c2, "blocked")
        assert info.value.reason == "locked" and str(lock) in info.value.details["paths"]
        assert lock.exists() and store.ref_target(MAIN) == c2
    finally:
        holder.close()
    # Once it is gone, its lock is its own to remove: the next update settles it.
    store.update_ref(MAIN, c1, c2, "after the holder died")
    assert store.ref_target(MAIN) == c1 and not lock.exists()


def test_update_refs_moves_all_or_nothing(store: Store) -> None:
    c1 = land(store, [F("a", b"1")])
    c2 = land(store, [F("a", b"2")])
    store.update_ref("refs/heads/gitpatch/p", c2, None, "proposal")
    store.update_refs([(MAIN, c1, c2), ("refs/heads/gitpatch/p", None, c2)], "approve")
    assert store.ref_target(MAIN) == c1
    assert store.ref_target("refs/heads/gitpatch/p") is None
    with pytest.raises(ConcurrentUpdate) as info:
        store.update_refs([("refs/heads/new", c2, None), (MAIN, c2, c2)], "one stale")
    assert info.value.details["ref"] == MAIN
    assert store.ref_target("refs/heads/new") is None
    assert store.ref_target(MAIN) == c1
    store.update_refs([], "nothing")


def test_update_refs_refuses_duplicates_and_symbolic(store: Store) -> None:
    c1 = land(store, [F("a", b"1")])
    with pytest.raises(InvalidArguments, match="twice"):
        store.update_refs([(MAIN, c1, c1), (MAIN, c1, c1)], "dup")
    with pytest.raises(RepositoryError, match="symbolic"):
        store.update_refs([("HEAD", c1, c1)], "sym")


def test_update_refs_lock_contention(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    c1 = land(store, [F("a", b"1")])
    monkeypatch.setattr(store_refs, "LOCK_RETRIES", 2)
    (Path(store.repo.path) / "refs/heads/main.lock").write_text("")
    with pytest.raises(ConcurrentUpdate) as info:
        store.update_refs([(MAIN, None, c1), ("refs/heads/b", c1, None)], "blocked")
    assert info.value.reason == "locked"
    assert store.ref_target("refs/heads/b") is None


# -- notes ---------------------------------------------------------------------------------


def test_notes_read_update_iterate(store: Store) -> None:
    c1 = land(store, [F("a", b"1")])
    c2 = land(store, [F("a", b"2")])
    assert store.read_note(c1) is None
    assert list(store.iter_notes()) == []
    seen: list[object] = []

    def propose(old: dict[str, object] | None) -> dict[str, object]:
        seen.append(old)
        return {"status": "proposed", "id": "p1"}

    assert store.update_note(c1, propose) == {"status": "proposed", "id": "p1"}
    store.update_note(c1, lambda old: {**(old or {}), "status": "approved", "by": "ann"})
    store.update_note(c2, lambda old: {"status": "rejected", "reason": "no"})
    assert seen == [None]
    assert store.read_note(c1) == {"status": "approved", "by": "ann", "id": "p1"}
    assert dict(store.iter_notes()) == {
        c1: {"status": "approved", "by": "ann", "id": "p1"},
        c2: {"status": "rejected", "reason": "no"},
    }
    notes_log = git(store.repo.workdir, "log", "--format=%s", NOTES_REF)
    assert notes_log.splitlines() == ["Notes added by gitpatch"] * 3


def test_remove_note_keeps_the_others(store: Store) -> None:
    c1 = land(store, [F("a", b"1")])
    c2 = land(store, [F("a", b"2")])
    assert store.remove_note(c1) is False  # no notes ref yet
    store.update_note(c1, lambda _old: {"status": "applied"})
    store.update_note(c2, lambda _old: {"status": "proposed"})
    assert store.remove_note(c1) is True
    assert store.read_note(c1) is None
    assert store.read_note(c2) == {"status": "proposed"}
    assert store.remove_note(c1) is False
    listed = git(store.repo.workdir, "notes", "--ref", "gitpatch", "list")
    assert listed.split() == [str(store.entry(store.ref_target(NOTES_REF), str(c2)).oid), str(c2)]
    git(store.repo.workdir, "fsck", "--strict")


def test_note_written_by_git_as_text(store: Store) -> None:
    c1 = land(store, [F("a", b"1")])
    git(store.repo.workdir, "notes", "--ref", "gitpatch", "add", "-m", "looks good", str(c1))
    assert store.read_note(c1) == {"text": "looks good\n"}
    git(store.repo.workdir, "notes", "--ref", "gitpatch", "add", "-f", "-m", "[1, 2]", str(c1))
    assert store.read_note(c1) == {"text": "[1, 2]\n"}


def test_note_in_a_fanout_tree_is_updated_in_place(store: Store) -> None:
    c1 = land(store, [F("a", b"1")])
    hexid = str(c1)
    fanout = f"{hexid[:2]}/{hexid[2:]}"
    tree = store.build_tree(None, [F(fanout, b'{"status": "proposed"}\n')])
    store.update_ref(NOTES_REF, store.commit(tree, [], "fanned out"), None, "notes")
    assert store.read_note(c1) == {"status": "proposed"}
    store.update_note(c1, lambda old: {**(old or {}), "status": "approved"})
    tip = store.ref_target(NOTES_REF)
    assert tip is not None and store.entry(tip, hexid) is None
    assert store.read_note(c1) == {"status": "approved"}
    assert list(store.iter_notes()) == [(c1, {"status": "approved"})]


def test_update_note_errors(store: Store) -> None:
    c1 = land(store, [F("a", b"1")])
    with pytest.raises(InvalidArguments, match="JSON object"):
        store.update_note(c1, lambda old: ["not", "a", "dict"])  # type: ignore[arg-type,return-value]
    with pytest.raises(InvalidArguments, match="JSON-serializable"):
        store.update_note(c1, lambda old: {"x": object()})
    with pytest.raises(RepositoryError):
        store.update_note(pygit2.Oid(hex="4" * 40), lambda old: {})
    assert store.ref_target(NOTES_REF) is None


def test_new_notes_fan_out_once_the_root_is_large(store: Store) -> None:
    c1 = land(store, [F("a", b"1")])
    blobs = [store.repo.create_blob(f"annotated {i}\n".encode()) for i in range(notes.FANOUT_AT)]
    flat = [F(str(b), b'{"n": 1}\n') for b in blobs]
    store.update_ref(NOTES_REF, store.commit(store.build_tree(None, flat), [], "n"), None, "n")
    store.update_note(c1, lambda old: {"status": "proposed"})
    tip = store.ref_target(NOTES_REF)
    hexid = str(c1)
    assert tip is not None and store.entry(tip, f"{hexid[:2]}/{hexid[2:]}") is not None
    assert store.entry(tip, hexid) is None
    shown = git(store.repo.workdir, "notes", "--ref", "gitpatch", "show", hexid)
    assert shown == '{\n  "status": "proposed"\n}\n'
    assert len(dict(store.iter_notes())) == notes.FANOUT_AT + 1
    assert store.read_note(blobs[0]) == {"n": 1}


def _notes_root(store: Store) -> list[tuple[str, str]]:
    """(type, name) of each entry at the root of the notes tree, as git lists them."""
    out = git(store.repo.workdir, "ls-tree", NOTES_REF).splitlines()
    return [(line.split()[1], line.split("\t")[1]) for line in out]


def test_flat_notes_move_down_once_so_the_root_stops_growing(store: Store) -> None:
    # The layout older versions left: FANOUT_AT flat notes, then new ones under ab/ beside them.
    c1 = land(store, [F("a", b"1")])
    blobs = [store.repo.create_blob(f"note {i}\n".encode()) for i in range(notes.FANOUT_AT + 40)]
    flat = [F(str(b), b'{"n": 1}\n') for b in blobs[: notes.FANOUT_AT]]
    fanned = [F(f"{str(b)[:2]}/{str(b)[2:]}", b'{"n": 2}\n') for b in blobs[notes.FANOUT_AT :]]
    flat[0] = F(str(blobs[0]), b'{"n": 0}\n')
    tree = store.build_tree(None, [*flat, *fanned])
    store.update_ref(NOTES_REF, store.commit(tree, [], "n"), None, "n")
    assert len(_notes_root(store)) > notes.FANOUT_AT
    store.update_note(blobs[0], lambda old: {**(old or {}), "seen": True})  # a flat note itself
    store.update_note(c1, lambda old: {"status": "proposed"})
    root = _notes_root(store)
    assert root and all(kind == "tree" and len(name) == 2 for kind, name in root)
    assert len(dict(store.iter_notes())) == len(blobs) + 1
    assert store.read_note(blobs[0]) == {"n": 0, "seen": True}
    assert store.read_note(blobs[1]) == {"n": 1} and store.read_note(blobs[-1]) == {"n": 2}
    shown = git(store.repo.workdir, "notes", "--ref", "gitpatch", "show", str(blobs[1]))
    assert shown == '{"n": 1}\n'
    assert git(store.repo.workdir, "fsck", "--strict", "--no-dangling") == ""


def test_notes_stay_fanned_out_once_they_are(store: Store) -> None:
    # A small root of directories (git fans out every note at once): new notes go below too.
    c1 = land(store, [F("a", b"1")])
    blob = store.repo.create_blob(b"annotated\n")
    tree = store.build_tree(None, [F(f"{str(blob)[:2]}/{str(blob)[2:]}", b'{"n": 1}\n')])
    store.update_ref(NOTES_REF, store.commit(tree, [], "n"), None, "n")
    store.update_note(c1, lambda old: {"status": "proposed"})
    hexid = str(c1)
    assert all(kind == "tree" for kind, _name in _notes_root(store))
    tip = store.ref_target(NOTES_REF)
    assert tip is not None and store.entry(tip, f"{hexid[:2]}/{hexid[2:]}") is not None
    assert store.read_note(blob) == {"n": 1}


def test_update_note_reapplies_the_change_after_losing_the_race(store: Store) -> None:
    c1 = land(store, [F("a", b"1")])
    store.update_note(c1, lambda old: {"votes": ["ann"]})
    rival = Store.open(store.repo.workdir)
    seen: list[object] = []

    def add_bob(old: dict[str, object] | None) -> dict[str, object]:
        seen.append(old)
        if len(seen) == 1:
            # Another process lands its own update between our read and our swap.
            rival.update_note(c1, lambda o: {"votes": [*(o or {}).get("votes", []), "cid"]})
        votes = list((old or {}).get("votes", []))  # type: ignore[call-overload]
        return {"votes": [*votes, "bob"]}

    assert store.update_note(c1, add_bob) == {"votes": ["ann", "cid", "bob"]}
    assert seen == [{"votes": ["ann"]}, {"votes": ["ann", "cid"]}]
    assert store.read_note(c1) == {"votes": ["ann", "cid", "bob"]}


def _age(path: Path) -> None:
    """Make ``path``'s stat data a minute old (settled), as if nothing changed there lately."""
    past = path.stat().st_mtime - 60
    os.utime(path, (past, past))


def test_flat_ref_names_follow_every_change_made_with_git(store: Store, git_repo: Path) -> None:
    root = land(store, [F("a.txt", b"a\n")])
    prefix = "refs/heads/gitpatch/session/"
    git(git_repo, "update-ref", f"{prefix}one", str(root))
    folder = git_repo / ".git" / prefix.rstrip("/")
    _age(folder)
    assert store.flat_ref_names(prefix) == [f"{prefix}one"]
    assert store.flat_ref_names(prefix) == [f"{prefix}one"]  # kept: nothing changed there
    git(git_repo, "update-ref", f"{prefix}two", str(root))
    assert store.flat_ref_names(prefix) == [f"{prefix}one", f"{prefix}two"]
    git(git_repo, "pack-refs", "--all")  # into packed-refs: the folder's files go
    for path in (folder, git_repo / ".git" / "packed-refs"):
        if path.exists():
            _age(path)
    assert store.flat_ref_names(prefix) == [f"{prefix}one", f"{prefix}two"]
    git(git_repo, "update-ref", "-d", f"{prefix}one")  # packed-refs rewritten
    assert store.flat_ref_names(prefix) == [f"{prefix}two"]
    git(git_repo, "update-ref", f"{prefix}deeper/three", str(root))  # never kept
    assert f"{prefix}deeper/three" in store.flat_ref_names(prefix)
    git(git_repo, "update-ref", "-d", f"{prefix}deeper/three")
    assert store.flat_ref_names(prefix) == [f"{prefix}two"]
