"""Versions cover uncommitted disk content: a change on disk after a read is a conflict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import git, head
from tests.realrepo.kit import make_repo, state

TEXT = "l1\nl2\nl3\n"

EDITS: list[list[dict[str, Any]]] = [
    [{"old_string": "l2", "new_string": "L2"}],
    [{"start_line": 2, "end_line": 2, "new_string": "L2"}],
    [{"after_line": 1, "new_string": "inserted"}],
]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", {"a.txt": TEXT})


@pytest.mark.parametrize("edits", EDITS)
@pytest.mark.parametrize("dirty_at_read", [False, True])
def test_a_disk_edit_after_the_read_is_a_conflict(
    repo: Path, edits: list[dict[str, Any]], dirty_at_read: bool
) -> None:
    if dirty_at_read:
        (repo / "a.txt").write_text("l0\n" + TEXT)
    ws = Workspace.open(repo)
    seen = ws.read("a.txt")
    (repo / "a.txt").write_text("person's new first line\n" + seen.content)
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.apply(edits, path="a.txt", expected_version=seen.version)
    assert err.value.code == "resource_conflict" and "on disk" in err.value.message
    assert state(repo) == before


def test_the_version_of_an_uncommitted_read_applies_while_the_disk_is_unchanged(
    repo: Path,
) -> None:
    (repo / "a.txt").write_text("l0\n" + TEXT)
    ws = Workspace.open(repo)
    seen = ws.read("a.txt")
    assert seen.version != head(repo)
    ws.apply(
        [{"start_line": 3, "end_line": 3, "new_string": "L2\n"}],
        path="a.txt",
        expected_version=seen.version,
    )
    assert (repo / "a.txt").read_text() == "l0\nl1\nL2\nl3\n"
    # the commit holds only the agent's line; the person's stays theirs, uncommitted
    assert git(repo, "show", "HEAD:a.txt") == "l1\nL2\nl3\n"
    assert git(repo, "status", "--porcelain") == " M a.txt\n"
