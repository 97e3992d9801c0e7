"""A ``.gitattributes`` change and the files it governs in one proposal: the files come out on
disk as a fresh checkout of that commit writes them, and the blobs as ``git add`` would store
them under the new attributes."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.core.model import AddFile, DeleteFile, Proposal, Replace, UpdateFile
from tests.gitkit import git, run_git
from tests.realrepo.kit import fsck, make_repo, status

FILES = {"old.txt": "one\ntwo\n", "keep.md": "k\n", "sub/deep.txt": "d\n"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", FILES)


def fresh_checkout(repo: Path, tmp_path: Path) -> Path:
    clone = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    return clone


def crlf_change() -> Proposal:
    return Proposal(
        (
            AddFile(".gitattributes", "*.txt text eol=crlf\n"),
            AddFile("new.txt", "n1\nn2\n"),
            UpdateFile("old.txt", (Replace("two", "TWO"),)),
            UpdateFile("sub/deep.txt", (Replace("d", "D"),)),
        ),
        "patch_resource",
    )


def same_as_fresh(repo: Path, tmp_path: Path, paths: list[str]) -> None:
    clone = fresh_checkout(repo, tmp_path)
    for path in paths:
        assert (repo / path).read_bytes() == (clone / path).read_bytes(), path
    assert status(repo) == ""
    fsck(repo)


@pytest.mark.parametrize("mode", ["auto", "review"])
def test_files_come_out_as_a_fresh_checkout_writes_them(
    repo: Path, tmp_path: Path, mode: str
) -> None:
    ws = Workspace.open(repo, mode=mode)  # type: ignore[arg-type]
    res = ws.propose(crlf_change())
    if mode == "review":
        ws.approve(res.proposal_id, "person")
    assert (repo / "new.txt").read_bytes() == b"n1\r\nn2\r\n"
    assert run_git(repo, "cat-file", "blob", "HEAD:old.txt").stdout == b"one\nTWO\n"
    same_as_fresh(repo, tmp_path, ["new.txt", "old.txt", "sub/deep.txt", ".gitattributes"])


def test_a_crlf_file_added_with_the_attributes_is_stored_as_git_add_would(repo: Path) -> None:
    Workspace.open(repo).propose(
        Proposal(
            (
                AddFile(".gitattributes", "*.txt text\n"),
                AddFile("win.txt", "w1\r\nw2\r\n"),
            ),
            "patch_resource",
        )
    )
    assert run_git(repo, "cat-file", "blob", "HEAD:win.txt").stdout == b"w1\nw2\n"
    git(repo, "add", "--renormalize", ".")
    assert git(repo, "diff", "--cached", "--name-only") == ""


def test_removing_the_attributes_stores_and_writes_as_git_would(repo: Path, tmp_path: Path) -> None:
    ws = Workspace.open(repo)
    ws.propose(crlf_change())
    assert (repo / "old.txt").read_bytes() == b"one\r\nTWO\r\n"
    ws.propose(
        Proposal(
            (DeleteFile(".gitattributes"), UpdateFile("old.txt", (Replace("one", "ONE"),))),
            "patch_resource",
        )
    )
    # the edit applies to the file as it was checked out (CRLF); with no attribute left,
    # `git add` stores those bytes as they are, and a fresh checkout writes them back
    assert run_git(repo, "cat-file", "blob", "HEAD:old.txt").stdout == b"ONE\r\nTWO\r\n"
    clone = fresh_checkout(repo, tmp_path)
    assert (repo / "old.txt").read_bytes() == (clone / "old.txt").read_bytes()
    # files the change did not write keep their CRLF, which git now sees as a change
    assert git(repo, "status", "--porcelain", "--", "old.txt") == ""
