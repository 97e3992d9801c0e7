"""A person committing exactly the content an agent read is no conflict."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import git, head
from tests.realrepo.kit import make_repo, state, status

FILES = {"a.txt": "one\ntwo\n", "b.txt": "b\n"}
EDIT = [{"old_string": "two", "new_string": "TWO"}]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", FILES)


def test_committing_the_uncommitted_content_read_is_no_conflict(repo: Path) -> None:
    (repo / "a.txt").write_text("one\ntwo\nmine\n")
    ws = Workspace.open(repo)
    seen = ws.read("a.txt")
    assert seen.version != head(repo)  # a pin of the uncommitted content
    git(repo, "commit", "-q", "-am", "the person commits exactly that")
    mine = head(repo)
    res = ws.apply(EDIT, path="a.txt", expected_version=seen.version)
    assert (repo / "a.txt").read_text() == "one\nTWO\nmine\n"
    assert head(repo, f"{res.version}~1") == mine and status(repo) == ""


def test_committing_other_content_after_the_read_is_still_a_conflict(repo: Path) -> None:
    (repo / "a.txt").write_text("one\ntwo\nmine\n")
    ws = Workspace.open(repo)
    seen = ws.read("a.txt")
    (repo / "a.txt").write_text("one\ntwo\nmine, then more\n")
    git(repo, "commit", "-q", "-am", "the person commits something else")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.apply(EDIT, path="a.txt", expected_version=seen.version)
    assert err.value.code == "resource_conflict" and state(repo) == before


def test_a_committed_read_then_an_unrelated_commit_is_no_conflict(repo: Path) -> None:
    ws = Workspace.open(repo)
    seen = ws.read("a.txt")
    (repo / "b.txt").write_text("person\n")
    git(repo, "commit", "-q", "-am", "unrelated")
    ws.apply(EDIT, path="a.txt", expected_version=seen.version)
    assert (repo / "a.txt").read_text() == "one\nTWO\n"
