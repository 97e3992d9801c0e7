"""Shared fixtures: real repositories in temp dirs, with a fixed author and clock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gitpatch.store import Store
from tests.gitkit import git


@pytest.fixture
def git_repo(tmp_path: Path) -> Iterator[Path]:
    """An empty non-bare repository on branch ``main`` with user.name configured."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Test Person")
    git(repo, "config", "user.email", "person@example.com")
    yield repo


@pytest.fixture
def store(git_repo: Path) -> Store:
    """A Store on the empty ``git_repo`` (user.name configured at repo level)."""
    return Store.open(git_repo)
