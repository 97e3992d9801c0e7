"""File modes on disk: a person's `chmod +x` is recorded like content, never undone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import git
from tests.realrepo.kit import edit, fsck, make_repo, state, status


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", {"run.sh": "echo one\necho two\n"})


def mode(repo: Path, rev: str, path: str) -> str:
    return git(repo, "ls-tree", rev, path).split()[0]


def test_chmod_x_is_recorded_and_kept(repo: Path) -> None:
    os.chmod(repo / "run.sh", 0o755)
    assert status(repo) == " M run.sh\n"
    Workspace.open(repo, dirty="record").propose(edit("run.sh", "two", "TWO"))
    assert mode(repo, "HEAD~1", "run.sh") == "100755"  # the recorded chmod
    assert mode(repo, "HEAD", "run.sh") == "100755"
    assert os.stat(repo / "run.sh").st_mode & 0o111
    assert (repo / "run.sh").read_text() == "echo one\necho TWO\n"
    assert status(repo) == ""
    fsck(repo)


def test_chmod_x_counts_as_a_local_change_for_dirty_refuse(repo: Path) -> None:
    os.chmod(repo / "run.sh", 0o755)
    ws = Workspace.open(repo, dirty="refuse")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(edit("run.sh", "two", "TWO"))
    assert err.value.code == "dirty_worktree"
    assert state(repo) == before and os.stat(repo / "run.sh").st_mode & 0o111


def test_core_filemode_false_ignores_the_bit(repo: Path) -> None:
    git(repo, "config", "core.fileMode", "false")
    os.chmod(repo / "run.sh", 0o755)
    assert status(repo) == ""
    Workspace.open(repo).propose(edit("run.sh", "two", "TWO"))
    assert mode(repo, "HEAD", "run.sh") == "100644"
    assert git(repo, "log", "--format=%s", "-2").count("Record") == 0
    assert status(repo) == ""


def test_chmod_x_stays_the_persons_when_carried(repo: Path) -> None:
    os.chmod(repo / "run.sh", 0o755)
    res = Workspace.open(repo).propose(edit("run.sh", "two", "TWO"))
    assert res.carried == ["run.sh"]
    assert mode(repo, "HEAD", "run.sh") == "100644"  # the agent's commit has no chmod
    assert os.stat(repo / "run.sh").st_mode & 0o111
    assert (repo / "run.sh").read_text() == "echo one\necho TWO\n"
    assert status(repo) == " M run.sh\n"
