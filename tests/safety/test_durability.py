"""``core.fsync`` read as git reads it: gitpatch fsyncs objects, refs and the journal only when
git is asked to harden loose objects, references or the index with a method that flushes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitpatch.errors import FilesystemError, RepositoryError
from gitpatch.porcelain.workspace import Workspace
from gitpatch.safety.durability import components, objects_written, wanted
from gitpatch.store import Store
from tests.gitkit import git, make_repo

CASES = [
    ({}, False),  # git's default: packs and their metadata only
    ({"core.fsync": "committed"}, True),
    ({"core.fsync": "added"}, True),
    ({"core.fsync": "all"}, True),
    ({"core.fsync": "objects"}, True),  # loose objects are objects
    ({"core.fsync": "reference"}, True),
    ({"core.fsync": "index"}, True),
    ({"core.fsync": "pack,pack-metadata"}, False),
    ({"core.fsync": "all,-loose-object,-reference,-index"}, False),
    ({"core.fsync": "committed,none"}, False),  # none clears what came before it
    ({"core.fsync": "none,reference"}, True),
    ({"core.fsyncObjectFiles": "true"}, True),  # the deprecated switch
    ({"core.fsync": "pack", "core.fsyncObjectFiles": "true"}, True),  # it adds loose objects
    ({"core.fsync": "committed", "core.fsyncMethod": "writeout-only"}, False),
    ({"core.fsync": "committed", "core.fsyncMethod": "batch"}, True),
]


@pytest.mark.parametrize(("config", "durable"), CASES)
def test_wanted_follows_git(config: dict[str, str], durable: bool) -> None:
    assert wanted(config.get) is durable


def test_components_start_from_gits_default() -> None:
    assert components(None, False) == {"pack", "pack-metadata", "commit-graph"}
    assert "loose-object" in components("committed", False)
    assert components("none", True) == {"loose-object"}


@pytest.mark.parametrize(("config", "durable"), CASES[:4])
def test_a_repository_config_reaches_the_store_and_the_working_tree(
    tmp_path: Path, config: dict[str, str], durable: bool
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    for key, value in config.items():
        git(repo, "config", key, value)
    assert Store.open(repo).durable() is durable
    ws = Workspace.open(repo)
    assert ws.plumbing.worktree is not None and ws.plumbing.worktree.durable is durable
    ws.apply("<<<<<<< SEARCH\na\n=======\nA\n>>>>>>> REPLACE\n", path="a.txt")
    assert (repo / "a.txt").read_text() == "A\n"
    assert not (repo / ".git" / "gitpatch" / "journal.json").exists()


def test_an_unexplained_write_failure_with_no_room_left_is_a_full_disk(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    gitdir = str(repo / ".git")
    room = os.statvfs(repo / ".git" / "objects")
    more = room.f_bavail * room.f_frsize + (1 << 30)  # more bytes than the disk has free
    failed = RepositoryError("write a blob: stale words", unexplained=True)
    with (
        pytest.raises(FilesystemError, match="disk is full") as info,
        objects_written(gitdir, more),
    ):
        raise failed
    assert info.value.__cause__ is failed and info.value.details["errno"] == "ENOSPC"
    # an error the store explained, or one with room enough on the disk, passes unchanged
    explained = RepositoryError("write a blob: not found")
    for error, need in ((explained, more), (failed, 0)):
        with pytest.raises(RepositoryError) as passed, objects_written(gitdir, need):
            raise error
        assert passed.value is error
