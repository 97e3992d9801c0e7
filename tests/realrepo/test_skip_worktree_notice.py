"""An edit of a file whose skip-worktree bit a person set by hand (to keep a local override on
disk) is committed and staged but never reaches that disk copy: the result says so, naming the
file and why, instead of a bare "Applied" (issue 26). A sparse checkout's absent files, whose
bit is the point of the checkout, get no such words."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import MountedFilesystem, Workspace, patch_tool
from tests.gitkit import git
from tests.realrepo.kit import edit, fsck, make_repo

FILES = {"conf.ini": "host=prod\nport=80\n", "b/g.txt": "g\n", "a.txt": "a\n"}
LOCAL = "host=localhost\nport=80\n"


def hidden_override(kind: str, tmp_path: Path) -> Path:
    """The checkout the agent works in, where the person hid a local conf.ini from git."""
    repo = make_repo(tmp_path / "r", FILES)
    where = repo
    if kind == "autocrlf":
        git(repo, "config", "core.autocrlf", "true")
    if kind == "linked":
        where = tmp_path / "side"
        git(repo, "worktree", "add", "-q", "-b", "side", str(where))
    (where / "conf.ini").write_text(LOCAL)
    git(where, "update-index", "--skip-worktree", "conf.ini")
    return where


@pytest.mark.parametrize("kind", ["plain", "autocrlf", "linked"])
def test_the_result_names_the_file_the_disk_never_gets(kind: str, tmp_path: Path) -> None:
    where = hidden_override(kind, tmp_path)
    result = Workspace.open(where).propose(edit("conf.ini", "port=80", "port=8080"))
    assert result.status == "applied" and result.hidden == ["conf.ini"]
    assert "conf.ini: git's skip-worktree bit is set" in result.message
    assert "stays the person's own copy" in result.message
    assert "git update-index --no-skip-worktree" in result.message
    # what the words say is what happened: committed, staged, bit kept, disk copy untouched
    assert git(where, "show", "HEAD:conf.ini") == "host=prod\nport=8080\n"
    assert git(where, "diff", "--cached", "--name-only", "HEAD") == ""
    assert git(where, "ls-files", "-t", "--", "conf.ini") == "S conf.ini\n"
    assert (where / "conf.ini").read_text() == LOCAL
    fsck(where)


def test_the_tool_text_and_data_say_it(tmp_path: Path) -> None:
    where = hidden_override("plain", tmp_path)
    fs = MountedFilesystem({"/workspace": Workspace.open(where)})
    edits = "<<<<<<< SEARCH\nport=80\n=======\nport=8080\n>>>>>>> REPLACE\n"
    res = patch_tool(fs, fs)(path="conf.ini", edits=edits)
    assert res.ok and res.data["hidden"] == ["/workspace/conf.ini"]
    assert "/workspace/conf.ini: git's skip-worktree bit is set" in str(res)
    other = patch_tool(fs, fs)(
        path="a.txt", edits="<<<<<<< SEARCH\na\n=======\nA\n>>>>>>> REPLACE\n"
    )
    assert other.ok and "hidden" not in other.data and "skip-worktree" not in str(other)


def test_a_sparse_checkout_s_absent_file_gets_no_such_words(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    git(repo, "sparse-checkout", "set", "--no-cone", "/conf.ini", "/a.txt")
    assert not (repo / "b" / "g.txt").exists()
    result = Workspace.open(repo).propose(edit("b/g.txt", "g", "G"))
    assert result.hidden == [] and "skip-worktree" not in result.message
    assert git(repo, "show", "HEAD:b/g.txt") == "G\n" and not (repo / "b" / "g.txt").exists()
