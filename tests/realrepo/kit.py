"""Helpers for the real-repository tests: git-made checkouts and what git says about them."""

from __future__ import annotations

from pathlib import Path

from gitpatch.core.model import AddFile, DeleteFile, Proposal, Replace, UpdateFile
from tests.gitkit import git, make_repo
from tests.workspace.workspace_kit import state

__all__ = ["add", "delete", "edit", "fsck", "make_repo", "state", "status", "staged"]


def edit(path: str, old: str, new: str) -> Proposal:
    """Replace ``old`` by ``new`` in ``path``."""
    return Proposal((UpdateFile(path, (Replace(old, new),)),), "patch_resource", tool="test")


def add(path: str, content: str) -> Proposal:
    """Add the file ``path``."""
    return Proposal((AddFile(path, content),), "patch_resource", tool="test")


def delete(path: str) -> Proposal:
    """Delete the file ``path``."""
    return Proposal((DeleteFile(path),), "patch_resource", tool="test")


def status(repo: Path) -> str:
    """``git status --porcelain`` with untracked files."""
    return git(repo, "status", "--porcelain", "--untracked-files=all")


def staged(repo: Path) -> str:
    """``git diff --cached --name-status``: what is staged against HEAD."""
    return git(repo, "diff", "--cached", "--name-status")


def fsck(repo: Path) -> None:
    """``git fsck --strict`` passes."""
    git(repo, "fsck", "--strict", "--no-progress")
