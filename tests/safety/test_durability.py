"""``core.fsync`` read as git reads it: gitpatch fsyncs objects, refs and the journal only when
git is asked to harden loose objects, references or the index with a method that flushes."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch.porcelain.workspace import Workspace
from gitpatch.safety.durability import components, wanted
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
    assert ws.worktree is not None and ws.worktree.durable is durable
    ws.patch("a.txt", "<<<<<<< SEARCH\na\n=======\nA\n>>>>>>> REPLACE\n")
    assert (repo / "a.txt").read_text() == "A\n"
    assert not (repo / ".git" / "gitpatch" / "journal.json").exists()
