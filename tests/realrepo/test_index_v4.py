"""Index version 4 with a split index, or a sparse index in v4 (issue 26, item 5).

``feature.manyFiles`` (index v4) with ``core.splitIndex`` is a common monorepo setup. Every
edit kind (update, add, delete, move), a review approval and an undo land there through the
``git`` binary, keep the version and the extension the person chose, and leave ``git status``
clean with the index at the branch. Before issue 26 the v4 entries could not be walked, so the
split index went to libgit2, which cannot read it: the branch moved, then ``internal_error``
said "nothing was changed".
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import git, make_repo
from tests.realrepo.kit import edit, fsck, status

FILES = {"a/x.txt": "one\ntwo\nthree\n", "a/m.txt": "move me\n", "b/y.txt": "why\n"}
FILLER = {f"c/f{n}.txt": f"{n}\n" for n in range(40)}  # git keeps a split index split


def _split(repo: Path) -> None:
    git(repo, "config", "core.splitIndex", "true")
    git(repo, "config", "index.version", "4")
    git(repo, "update-index", "--index-version", "4")
    git(repo, "update-index", "--split-index")  # in one call with the version, git writes it whole


def _sparse(repo: Path) -> None:
    git(repo, "config", "index.version", "4")
    git(repo, "sparse-checkout", "init", "--cone", "--sparse-index")
    git(repo, "sparse-checkout", "set", "a", "c")
    git(repo, "update-index", "--index-version", "4")


def _kept(repo: Path, setup: str) -> None:
    data = (repo / ".git" / "index").read_bytes()
    assert data[:8] == b"DIRC\x00\x00\x00\x04", "index version 4 kept"
    if setup == "v4 split":
        assert b"link" in data and list((repo / ".git").glob("sharedindex.*"))
    else:
        assert "b/\n" in git(repo, "ls-files", "--sparse")


SETUPS: dict[str, Callable[[Path], None]] = {"v4 split": _split, "v4 sparse": _sparse}


def _patch(body: str) -> str:
    return f"*** Begin Patch\n{body}*** End Patch\n"


def _update(repo: Path) -> None:
    Workspace.open(repo).propose(edit("a/x.txt", "two", "TWO"))
    assert (repo / "a/x.txt").read_text() == "one\nTWO\nthree\n"


def _add(repo: Path) -> None:
    Workspace.open(repo).apply(_patch("*** Add File: a/new.txt\n+new\n"))
    assert (repo / "a/new.txt").read_text() == "new\n"


def _delete(repo: Path) -> None:
    Workspace.open(repo).apply(_patch("*** Delete File: a/x.txt\n"))
    assert not (repo / "a/x.txt").exists()


def _move(repo: Path) -> None:
    Workspace.open(repo).apply(
        _patch("*** Update File: a/m.txt\n*** Move to: a/moved.txt\n@@\n-move me\n+moved\n")
    )
    assert (repo / "a/moved.txt").read_text() == "moved\n" and not (repo / "a/m.txt").exists()


def _approve(repo: Path) -> None:
    ws = Workspace.open(repo, mode="review")
    pid = ws.propose(edit("a/x.txt", "three", "THREE")).proposal_id
    ws.approve(pid, by="Reviewer")
    assert (repo / "a/x.txt").read_text() == "one\ntwo\nTHREE\n"


def _undo(repo: Path) -> None:
    ws = Workspace.open(repo)
    ws.propose(edit("a/x.txt", "one", "ONE"))
    ws.undo()
    assert (repo / "a/x.txt").read_text() == FILES["a/x.txt"]


KINDS: dict[str, Callable[[Path], None]] = {
    "update": _update,
    "add": _add,
    "delete": _delete,
    "move": _move,
    "approve": _approve,
    "undo": _undo,
}


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("setup", list(SETUPS))
def test_every_kind_lands_through_git_and_keeps_the_format(
    setup: str, kind: str, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path / "repo", {**FILES, **FILLER}, branch="work")
    SETUPS[setup](repo)
    _kept(repo, setup)
    KINDS[kind](repo)
    assert status(repo) == ""
    assert git(repo, "diff", "--cached", "--name-only") == ""
    assert not (repo / ".git" / "gitpatch" / "journal.json").exists()
    _kept(repo, setup)
    fsck(repo)
    Workspace.open(repo).propose(edit("c/f1.txt", "1", "uno"))  # later calls still work
    assert status(repo) == ""


def test_a_git_failure_on_the_index_puts_back_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index is written before the branch moves (git's order): git failing on it
    refuses the land, the file written ahead is put back, the branch never moved."""
    repo = make_repo(tmp_path / "repo", {**FILES, **FILLER}, branch="work")
    _split(repo)
    real = shutil.which("git")
    assert real is not None
    shim = tmp_path / "bin" / "git"
    shim.parent.mkdir()
    shim.write_text(
        f'#!/bin/sh\ncase " $* " in *" update-index "*) echo "index broken" >&2; exit 1;; esac\n'
        f'exec {real} "$@"\n'
    )
    shim.chmod(0o755)
    before = git(repo, "rev-parse", "HEAD").strip()
    index_before = (repo / ".git/index").read_bytes()
    ws = Workspace.open(repo)
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(GitpatchError) as caught:
        ws.propose(edit("a/x.txt", "two", "TWO"))
    monkeypatch.undo()
    err = caught.value
    assert err.code == "repository_error" and err.details["landed"] is False
    assert "nothing was changed" in err.message and "is committed" not in err.message
    assert "index broken" in err.message
    assert git(repo, "rev-parse", "HEAD").strip() == before
    assert (repo / "a/x.txt").read_text() == "one\ntwo\nthree\n"
    assert (repo / ".git/index").read_bytes() == index_before
    assert not (repo / ".git" / "gitpatch" / "journal.json").exists()
    assert not (repo / ".git" / "index.lock").exists()
    assert status(repo) == "" and git(repo, "diff", "--cached", "--name-only") == ""
    Workspace.open(repo).propose(edit("a/x.txt", "two", "TWO"))  # the retry lands
    assert git(repo, "show", "HEAD:a/x.txt") == "one\nTWO\nthree\n"
    assert status(repo) == "" and git(repo, "diff", "--cached", "--name-only") == ""
    _kept(repo, "v4 split")
