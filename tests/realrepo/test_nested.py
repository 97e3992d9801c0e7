"""Nested repositories: files of an untracked repository inside the checkout are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.core.model import Proposal
from gitpatch.errors import GitpatchError
from gitpatch.workspace.results import Mode
from tests.gitkit import git, run_git
from tests.realrepo.kit import add, edit, make_repo, state


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "r", {"a.txt": "one\n", "vendor/README": "vendored\n"})
    make_repo(root / "vendor/lib", {"lib.c": "int x;\n"}, branch="main")
    return root


@pytest.mark.parametrize(
    "proposal", [add("vendor/lib/new.c", "int y;\n"), edit("vendor/lib/lib.c", "x", "z")]
)
@pytest.mark.parametrize("mode", ["auto", "review"])
def test_files_of_a_nested_repository_are_refused(
    repo: Path, proposal: Proposal, mode: Mode
) -> None:
    ws = Workspace.open(repo, mode)
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(proposal)
    assert err.value.code == "not_a_text_resource"
    assert err.value.details["repository"] == "vendor/lib"
    assert state(repo) == before
    assert git(repo, "ls-files") == "a.txt\nvendor/README\n"


def test_git_add_refuses_the_same(repo: Path) -> None:
    (repo / "vendor/lib/new.c").write_text("int y;\n")
    run_git(repo, "add", "vendor/lib/new.c")  # git adds nothing (with or without an error)
    assert git(repo, "ls-files") == "a.txt\nvendor/README\n"


def test_files_next_to_the_nested_repository_are_fine(repo: Path) -> None:
    Workspace.open(repo).propose(edit("vendor/README", "vendored", "VENDORED"))
    assert (repo / "vendor/README").read_text() == "VENDORED\n"
