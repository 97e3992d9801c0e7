"""Several processes race on one ref through the store's compare-and-swap: nothing is lost."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pygit2
import pytest

from gitpatch.core.model import FileChange
from gitpatch.errors import ConcurrentUpdate
from gitpatch.store import NOTES_REF, Store
from tests.gitkit import git

#: processes racing (load): `make test-fast` leaves these out.
pytestmark = pytest.mark.slow

REF = "refs/heads/counter"
TWIN = "refs/heads/twin"
PROCESSES = 4
ROUNDS = 25


def _bump_ref(path: str, worker: int, barrier: Barrier, out: Any) -> None:
    """Increment the counter file on REF ``ROUNDS`` times, rebuilding on every lost CAS."""
    store = Store.open(path)
    barrier.wait()
    losses = 0
    for round_no in range(ROUNDS):
        while True:
            tip = store.ref_target(REF)
            assert tip is not None
            value = int(store.read(tip, "counter") or b"0") + 1
            changes = [
                FileChange("counter", f"{value}\n".encode()),
                FileChange(f"w{worker}/r{round_no}", b"done\n"),
            ]
            commit = store.commit(store.build_tree(tip, changes), [tip], f"w{worker} r{round_no}")
            try:
                store.update_ref(REF, commit, tip, f"w{worker}")
                break
            except ConcurrentUpdate:
                losses += 1
    out.put(losses)


def _bump_note(path: str, target: str, barrier: Barrier, out: Any) -> None:
    """Increment a counter in the note of ``target`` ``ROUNDS`` times through update_note."""
    store = Store.open(path)
    calls = 0

    def bump(old: dict[str, Any] | None) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        return {"count": (old or {}).get("count", 0) + 1}

    barrier.wait()
    for _ in range(ROUNDS):
        store.update_note(pygit2.Oid(hex=target), bump)
    out.put(calls - ROUNDS)


def _bump_pair(path: str, worker: int, barrier: Barrier, out: Any) -> None:
    """Move REF and its twin together with update_refs, each time to a new commit."""
    store = Store.open(path)
    barrier.wait()
    losses = 0
    for round_no in range(ROUNDS):
        while True:
            tip, twin = store.ref_target(REF), store.ref_target(TWIN)
            assert tip is not None
            value = int(store.read(tip, "counter") or b"0") + 1
            tree = store.build_tree(tip, [FileChange("counter", f"{value}\n".encode())])
            commit = store.commit(tree, [tip], f"pair w{worker} r{round_no}")
            try:
                store.update_refs([(REF, commit, tip), (TWIN, commit, twin)], "pair")
                break
            except ConcurrentUpdate:
                losses += 1
    out.put(losses)


def _create_refs(path: str, worker: int, barrier: Barrier, out: Any) -> None:
    """Try to create each of ``ROUNDS`` refs with this worker's own commit; report the wins."""
    store = Store.open(path)
    tree = store.build_tree(None, [FileChange("who", f"{worker}\n".encode())])
    mine = store.commit(tree, [], f"worker {worker}")
    barrier.wait()
    won = []
    for k in range(ROUNDS):
        try:
            store.update_ref(f"refs/heads/race/{k}", mine, None, f"w{worker}")
            won.append(k)
        except ConcurrentUpdate:
            pass
    out.put((str(mine), won))


def _run(target: Any, per_worker: Callable[[int], tuple[Any, ...]]) -> list[Any]:
    """Start PROCESSES spawned workers together; return what each one reports."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=target, args=(*per_worker(i), barrier, out)) for i in range(PROCESSES)
    ]
    for proc in procs:
        proc.start()
    results = [out.get(timeout=300) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    return results


def _seed(repo: Path) -> Store:
    store = Store.open(repo)
    tree = store.build_tree(None, [FileChange("counter", b"0\n")])
    store.update_ref(REF, store.commit(tree, [], "seed"), None, "seed")
    return store


def test_processes_racing_on_one_ref_lose_no_update(git_repo: Path) -> None:
    store = _seed(git_repo)
    losses = _run(_bump_ref, lambda i: (str(git_repo), i))
    tip = store.ref_target(REF)
    assert tip is not None
    assert store.read(tip, "counter") == f"{PROCESSES * ROUNDS}\n".encode()
    history = git(git_repo, "rev-list", "--count", REF).strip()
    assert int(history) == PROCESSES * ROUNDS + 1
    files = git(git_repo, "ls-tree", "-r", "--name-only", REF).split()
    assert len(files) == PROCESSES * ROUNDS + 1
    assert len(losses) == PROCESSES
    git(git_repo, "fsck", "--strict")


def test_processes_racing_on_one_note_lose_no_update(git_repo: Path) -> None:
    store = _seed(git_repo)
    target = store.ref_target(REF)
    assert target is not None
    _run(_bump_note, lambda i: (str(git_repo), str(target)))
    assert store.read_note(target) == {"count": PROCESSES * ROUNDS}
    assert int(git(git_repo, "rev-list", "--count", NOTES_REF)) == PROCESSES * ROUNDS
    shown = git(git_repo, "notes", "--ref", "gitpatch", "show", str(target))
    assert f'"count": {PROCESSES * ROUNDS}' in shown
    git(git_repo, "fsck", "--strict")


def test_processes_creating_the_same_refs_have_exactly_one_winner(git_repo: Path) -> None:
    store = Store.open(git_repo)
    reports = _run(_create_refs, lambda i: (str(git_repo), i))
    winners: dict[int, list[str]] = {}
    for commit, won in reports:
        for k in won:
            winners.setdefault(k, []).append(commit)
    assert sorted(winners) == list(range(ROUNDS))
    for k, commits in winners.items():
        assert len(commits) == 1, f"ref race/{k} was created by {len(commits)} processes"
        assert str(store.ref_target(f"refs/heads/race/{k}")) == commits[0]


def test_processes_moving_two_refs_together_keep_them_in_step(git_repo: Path) -> None:
    store = _seed(git_repo)
    _run(_bump_pair, lambda i: (str(git_repo), i))
    tip = store.ref_target(REF)
    assert tip is not None and store.ref_target(TWIN) == tip
    assert store.read(tip, "counter") == f"{PROCESSES * ROUNDS}\n".encode()
    assert int(git(git_repo, "rev-list", "--count", REF)) == PROCESSES * ROUNDS + 1
