"""Decided and documented: signing, hooks, and a branch switched while a Workspace is open."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import git, head
from tests.realrepo.kit import edit, make_repo, state, status


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", {"a.txt": "one\n"})


@pytest.mark.parametrize("mode", ["auto", "review"])
def test_gpgsign_refuses_clearly_unless_unsigned_is_allowed(repo: Path, mode: str) -> None:
    git(repo, "config", "commit.gpgsign", "true")
    ws = Workspace.open(repo, mode)  # type: ignore[arg-type]
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(edit("a.txt", "one", "ONE"))
    assert err.value.code == "signing_required" and "gitpatch.allowUnsigned" in (
        err.value.hint or ""
    )
    assert state(repo) == before
    git(repo, "config", "gitpatch.allowUnsigned", "true")
    ws.propose(edit("a.txt", "one", "ONE"))


def test_commit_hooks_do_not_run_for_gitpatch_commits(repo: Path) -> None:
    hook = repo / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\necho ran > hook-ran\nexit 1\n")
    os.chmod(hook, 0o755)
    Workspace.open(repo).propose(edit("a.txt", "one", "ONE"))
    assert (repo / "a.txt").read_text() == "ONE\n"
    assert not (repo / "hook-ran").exists()  # documented: libgit2 runs no hooks


def test_branch_switched_by_the_person_while_open(repo: Path) -> None:
    ws = Workspace.open(repo)
    git(repo, "switch", "-q", "-c", "other")
    tip = head(repo, "other")
    ws.propose(edit("a.txt", "one", "ONE"))
    # the change lands on the Workspace's branch; the checkout (now `other`) is not touched
    assert git(repo, "show", "work:a.txt") == "ONE\n"
    assert (repo / "a.txt").read_text() == "one\n" and head(repo, "other") == tip
    assert status(repo) == ""
    git(repo, "switch", "-q", "work")
    assert (repo / "a.txt").read_text() == "ONE\n"
