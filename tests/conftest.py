"""Shared fixtures, the ``repo`` family: real repositories in temp dirs, with a fixed author and
clock (the helpers behind them are in ``tests.gitkit``, the one test kit)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gitpatch.store import Store
from tests.gitkit import git, make_repo


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


@pytest.fixture
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A repository at ``tmp_path/repo`` holding the test module's ``FILES`` in one commit on
    its ``BRANCH`` (``work`` when it names none; see ``make_repo``). A module whose repository
    needs more (links, a sparse checkout, hooks) defines its own ``repo``."""
    files = getattr(request.module, "FILES", None)
    if files is None:
        pytest.fail(f"{request.module.__name__} uses the repo fixture but defines no FILES")
    return make_repo(tmp_path / "repo", files, branch=getattr(request.module, "BRANCH", "work"))
