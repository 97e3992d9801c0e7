"""A space's packing (``maintenance``): what is new goes into a pack of its own while the
space's writers go on, only the deletion of the loose copies makes them wait, and a space with
many packs is made one again by ``git gc``. Real repositories and the real ``git``; the one
wrapper below only watches which git commands run and whether the space's lock is free."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from gitpatch.checkout import gitbin
from gitpatch.core.model import Proposal, WriteFile
from gitpatch.doors.hosted import Spaces, maintenance
from gitpatch.doors.hosted.maintenance import MAX_PACKS, Maintenance, packs
from gitpatch.doors.hosted.spaces import Space, disk_bytes
from tests.gitkit import git, loose_objects, run_git

SPACE = "users/ada"


def _write(spaces: Spaces, n: int) -> None:
    op = WriteFile(f"f{n % 3}.txt", f"{n}\n".encode() * (n + 1), n < 3)
    spaces.get(SPACE).storage.apply(Proposal((op,), "patch_resource"))


def _space(tmp_path: Path, changes: int) -> tuple[Spaces, Space, Path]:
    spaces = Spaces(tmp_path)
    for n in range(changes):
        _write(spaces, n)
    return spaces, spaces.get(SPACE), tmp_path / "users" / "ada.git"


def _watch(monkeypatch: pytest.MonkeyPatch, space: Space, before: Any = None) -> list[tuple]:
    """Each git command the packing runs, with whether a writer could take the space's lock
    when it started (tried, and given back at once); ``before(args)`` runs first."""
    seen: list[tuple[str, bool]] = []
    real = gitbin.run

    def run(gitdir: str, workdir: str, args: Sequence[str], *rest: Any, **kw: Any) -> bytes:
        command = next(a for a in args if not a.startswith("-") and "=" not in a)
        free = space._writing.acquire(blocking=False)  # what a writer's thread would do
        if free:
            space._writing.release()
        seen.append((command, free))
        if before is not None:
            before(command)
        return real(gitdir, workdir, args, *rest, **kw)

    monkeypatch.setattr(gitbin, "run", run)
    return seen


def test_a_run_packs_what_is_new_while_writers_may_write(tmp_path, monkeypatch) -> None:
    spaces, space, repo = _space(tmp_path, 12)
    assert len(loose_objects(repo)) >= 12 * 3 and packs(space) == 0
    seen = _watch(monkeypatch, space)
    Maintenance().pack_new(space)
    # the pack is written and indexed with the lock free; only the loose copies' deletion
    # holds it
    assert seen == [("pack-objects", True), ("index-pack", True), ("prune-packed", False)]
    assert loose_objects(repo) == [] and packs(space) == 1
    git(repo, "fsck", "--strict", "--no-progress")
    assert git(repo, "show", "main:f2.txt") == "11\n" * 12
    assert space.disk_used == disk_bytes(repo)
    # the next run packs only what came since: a second pack, the first one untouched
    first = sorted((repo / "objects" / "pack").glob("*.pack"))
    for n in range(12, 15):
        _write(spaces, n)
    Maintenance().pack_new(space)
    assert packs(space) == 2 and set(first) < set((repo / "objects" / "pack").glob("*.pack"))
    assert loose_objects(repo) == []
    git(repo, "fsck", "--strict", "--no-progress")


def test_a_run_meeting_another_process_packing_loses_nothing(tmp_path, monkeypatch) -> None:
    """Another service process packs the space (``git gc``) while this run starts: what
    this run would pack is in the other pack now, so it writes none and deletes only loose
    copies a pack holds."""
    _spaces, space, repo = _space(tmp_path, 9)

    def before(command: str) -> None:
        if command == "pack-objects":
            git(repo, "gc", "-q")

    _watch(monkeypatch, space, before)
    Maintenance().pack_new(space)
    assert packs(space) == 1 and loose_objects(repo) == []
    git(repo, "fsck", "--strict", "--no-progress")
    assert git(repo, "show", "main:f2.txt") == "8\n" * 9


def test_a_run_packs_only_what_main_reaches_and_a_stray_object_keeps_its_age(
    tmp_path, monkeypatch
) -> None:
    """A failed write's object (nothing reaches it) stays loose with its own time: a run
    packs only what ``main`` gained, so ``git gc`` prunes the stray once past the grace."""
    spaces, space, repo = _space(tmp_path, 6)
    made = run_git(repo, "hash-object", "-w", "--stdin", input=b"a failed write's blob\n")
    stray = made.stdout.decode().strip()
    keeper = Maintenance()
    keeper.pack_new(space)
    assert loose_objects(repo) == [stray] and packs(space) == 1
    # the next run walks only the commits made since the first
    seen = _watch(monkeypatch, space)
    for n in range(6, 9):
        _write(spaces, n)
    keeper.pack_new(space)
    assert loose_objects(repo) == [stray] and packs(space) == 2
    assert [command for command, _free in seen] == ["pack-objects", "index-pack", "prune-packed"]
    second = max((repo / "objects" / "pack").glob("*.idx"), key=lambda p: p.stat().st_mtime)
    listed = run_git(repo, "show-index", input=second.read_bytes()).stdout.splitlines()
    assert len(listed) == 3 * 3  # three commits, their trees and blobs: nothing older
    git(repo, "fsck", "--strict", "--no-progress")


def test_a_space_holding_many_packs_is_made_one_under_the_writers_lock(
    tmp_path, monkeypatch
) -> None:
    (tmp_path / "spaces.toml").write_text("[defaults]\npack_every_changes = 4\n")
    spaces, space, repo = _space(tmp_path, 3)
    for n in range(3, 3 + MAX_PACKS):
        _write(spaces, n)
        Maintenance().pack_new(space)
    assert packs(space) == MAX_PACKS
    seen = _watch(monkeypatch, space)
    keeper = Maintenance()
    for _ in range(4):  # a run falls due
        keeper.changed(space)
    keeper.wait()
    assert seen == [("gc", False)]
    assert packs(space) == 1 and loose_objects(repo) == []
    git(repo, "fsck", "--strict", "--no-progress")
    assert space.disk_used == disk_bytes(repo)


def test_the_disk_use_is_measured_again_off_the_calls_thread(tmp_path, monkeypatch) -> None:
    _spaces, space, repo = _space(tmp_path, 3)
    where: list[str] = []
    real = maintenance.disk_bytes

    def measured(path: Path) -> int:
        where.append(threading.current_thread().name)
        return real(path)

    monkeypatch.setattr("gitpatch.doors.hosted.spaces.disk_bytes", measured)  # a measure walks
    monkeypatch.setattr(maintenance, "REMEASURE_EVERY", 4)
    keeper = Maintenance()
    space.disk_used = None
    keeper.changed(space)  # the first change since a start: measured now, for its quota
    assert where == [threading.current_thread().name]
    space.disk_used = 1  # what counting would drift to
    for _ in range(3):
        keeper.changed(space)
    keeper.wait()
    assert len(where) == 2 and where[1] != threading.current_thread().name
    assert space.disk_used == disk_bytes(repo)


def test_what_a_killed_run_left_goes_once_past_the_grace(tmp_path) -> None:
    """A run killed mid-way leaves its work folder, or a pack moved without its index; the
    next run removes them once older than the grace period (a younger one may be another
    process's run in progress), and the repository stays whole."""
    _spaces, space, repo = _space(tmp_path, 3)
    old = repo / "gitpatch-packing-killed"
    young = repo / "gitpatch-packing-running"
    for folder in (old, young):
        folder.mkdir()
        (folder / "new.pack").write_bytes(b"PACK partial")
    lone_old = repo / "objects" / "pack" / f"pack-{'1' * 40}.pack"
    lone_young = repo / "objects" / "pack" / f"pack-{'2' * 40}.pack"
    lone_old.parent.mkdir(parents=True, exist_ok=True)
    for lone in (lone_old, lone_young):
        lone.write_bytes(b"PACK moved, its index never")
    two_hours_ago = time.time() - 2 * 3600
    for path in (old, lone_old):
        os.utime(path, (two_hours_ago, two_hours_ago))
    Maintenance().pack_new(space)
    assert not old.exists() and not lone_old.exists()
    assert young.exists() and lone_young.exists()
    lone_young.unlink()
    assert packs(space) == 1 and loose_objects(repo) == []
    git(repo, "fsck", "--strict", "--no-progress")


def test_a_reverse_index_git_writes_goes_with_its_pack(tmp_path) -> None:
    """A git that writes a reverse index (``pack.writeReverseIndex``, the default from git
    2.41) gets it moved beside the pack, not left in the run's folder."""
    _spaces, space, repo = _space(tmp_path, 3)
    git(repo, "config", "pack.writeReverseIndex", "true")
    Maintenance().pack_new(space)
    [pack] = (repo / "objects" / "pack").glob("*.pack")
    assert pack.with_suffix(".rev").exists() and pack.with_suffix(".idx").exists()
    assert list(repo.glob("gitpatch-packing-*")) == []
    git(repo, "fsck", "--strict", "--no-progress")
