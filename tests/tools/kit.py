"""Helpers for the tool tests: a repository, its Workspace mounted at /workspace, snapshots."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from gitpatch import MountedFilesystem, Workspace
from tests.gitkit import make_repo, repo_state

#: What a failed call must leave alone (``tests.gitkit.repo_state``).
state = repo_state


def sr(search: str, replace: str) -> str:
    """One SEARCH/REPLACE block."""
    return f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


def mounted(
    root: Path, files: Mapping[str, str | bytes], **open_kw: object
) -> tuple[Path, Workspace, MountedFilesystem]:
    """A repo holding ``files``, its auto Workspace, and that Workspace at /workspace."""
    repo = make_repo(root, files)
    ws = Workspace.open(repo, **open_kw)  # type: ignore[arg-type]
    return repo, ws, MountedFilesystem({"/workspace": ws})
