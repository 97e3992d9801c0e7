"""A directory replaced by a file (or the reverse) in one change: done as a commit would do it,
and said so; a half-emptied directory is refused naming the files it keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.core.model import AddFile, DeleteFile, Proposal
from gitpatch.errors import GitpatchError
from tests.gitkit import git
from tests.realrepo.kit import fsck, make_repo, state, status

FILES = {"d/x.txt": "x\n", "d/y.txt": "y\n", "f": "a file\n"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", FILES)


def ops(*items: AddFile | DeleteFile) -> Proposal:
    return Proposal(tuple(items), "apply_patch")


def test_a_directory_replaced_by_a_file_lands_and_is_said(repo: Path) -> None:
    res = Workspace.open(repo).propose(
        ops(DeleteFile("d/x.txt"), DeleteFile("d/y.txt"), AddFile("d", "now a file\n"))
    )
    assert "The directory d/ is replaced by the file d." in res.message
    assert (repo / "d").read_text() == "now a file\n"
    assert git(repo, "ls-tree", "--name-only", "HEAD") == "d\nf\n"
    assert status(repo) == ""
    fsck(repo)


def test_a_file_replaced_by_a_directory_is_said(repo: Path) -> None:
    res = Workspace.open(repo).propose(ops(DeleteFile("f"), AddFile("f/inner.txt", "i\n")))
    assert "The file f is replaced by the directory f/." in res.message
    assert (repo / "f/inner.txt").read_text() == "i\n" and status(repo) == ""


def test_review_then_approve_of_the_swap(repo: Path) -> None:
    ws = Workspace.open(repo, mode="review")
    res = ws.propose(
        ops(DeleteFile("d/x.txt"), DeleteFile("d/y.txt"), AddFile("d", "now a file\n"))
    )
    ws.approve(res.proposal_id, "person")
    assert (repo / "d").read_text() == "now a file\n" and status(repo) == ""
    fsck(repo)


@pytest.mark.parametrize(
    "change, kept",
    [
        (ops(AddFile("d", "a file\n")), "d/x.txt, d/y.txt"),
        (ops(DeleteFile("d/x.txt"), AddFile("d", "a file\n")), "d/y.txt"),
    ],
)
def test_a_file_where_a_directory_stays_is_refused_naming_what_stays(
    repo: Path, change: Proposal, kept: str
) -> None:
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo).propose(change)
    assert err.value.code == "not_a_text_resource"
    assert "cannot replace the directory d by a file" in err.value.message
    assert f"leaves {kept} in it" in err.value.message
    assert state(repo) == before


def test_untracked_files_in_the_replaced_directory_refuse_the_land(repo: Path) -> None:
    (repo / "d/notes.md").write_text("mine\n")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo).propose(
            ops(DeleteFile("d/x.txt"), DeleteFile("d/y.txt"), AddFile("d", "a file\n"))
        )
    assert err.value.code == "resource_exists" and "d" in err.value.message
    assert state(repo) == before and (repo / "d/notes.md").read_text() == "mine\n"
