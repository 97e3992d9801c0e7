"""Landing pre-flights every path it writes: an untracked file in the way moves nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import head
from tests.realrepo.kit import add, fsck, make_repo, state, status

FILES = {"a.txt": "one\n"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", FILES)


def test_approve_when_an_untracked_file_blocks_a_directory(repo: Path) -> None:
    ws = Workspace.open(repo, "review")
    res = ws.propose(add("docs/new.md", "# new\n"))
    (repo / "docs").write_text("a person's notes\n")
    before, tip = state(repo), head(repo)
    with pytest.raises(GitpatchError) as err:
        ws.approve(res.proposal_id, by="Pat")
    assert err.value.code == "resource_exists"
    assert err.value.details["blocking"] == "docs"
    assert state(repo) == before and head(repo) == tip
    assert not (repo / ".git/gitpatch/journal.json").exists()
    # every later call works, and once the file is moved away the approval lands
    assert ws.proposals()[0].id == res.proposal_id
    (repo / "docs").rename(repo / "notes.txt")
    ws.approve(res.proposal_id, by="Pat")
    assert (repo / "docs/new.md").read_text() == "# new\n"
    assert status(repo) == "?? notes.txt\n"
    fsck(repo)


def test_approve_when_a_directory_with_untracked_files_sits_where_a_file_goes(
    repo: Path,
) -> None:
    ws = Workspace.open(repo, "review")
    res = ws.propose(add("build", "not a directory\n"))
    (repo / "build").mkdir()
    (repo / "build/out.o").write_text("object\n")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.approve(res.proposal_id, by="Pat")
    assert err.value.code in ("resource_exists", "merge_conflict")
    assert "build" in err.value.message
    assert state(repo) == before


def test_a_name_too_long_for_the_filesystem_changes_nothing(repo: Path) -> None:
    ws = Workspace.open(repo, "review")
    name = "n" * 300 + ".txt"
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(add(name, "x\n"))
    assert err.value.code == "filesystem_error" and err.value.details["path"] == name
    assert state(repo) == before
