"""Helpers for the tool tests: a repository, its Workspace mounted at /workspace, snapshots."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from gitpatch import MountedFilesystem, Workspace
from tests.gitkit import git, make_repo


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


def state(repo: Path) -> tuple[str, str, dict[str, bytes]]:
    """Everything a failed call must leave alone: refs, status, files on disk."""
    refs = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    status = git(repo, "status", "--porcelain", "--untracked-files=all")
    files = {
        p.relative_to(repo).as_posix(): p.read_bytes()
        for p in repo.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }
    return refs, status, files
