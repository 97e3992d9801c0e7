"""Helpers shared by the Workspace unit tests: commits by a person and a full-state fingerprint."""

from __future__ import annotations

from pathlib import Path

from gitpatch.core.model import Proposal, Replace, UpdateFile
from tests.gitkit import git, head, repo_state

#: Everything an error must leave untouched (``tests.gitkit.repo_state``).
state = repo_state


def commit_on(root: Path, files: dict[str, str | None], message: str = "person") -> str:
    """A commit by a person with the git binary (None deletes); returns its id."""
    for name, content in files.items():
        if content is None:
            git(root, "rm", "-q", name)
            continue
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
        git(root, "add", name)
    git(root, "commit", "-q", "-m", message)
    return head(root)


def note(root: Path, commit: str) -> str:
    """The gitpatch note on ``commit`` ('' when none)."""
    return git(root, "notes", "--ref", "gitpatch", "show", commit, check=False)


def sr(search: str, replace: str) -> str:
    """One SEARCH/REPLACE block."""
    return f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


def edit(path: str, old: str, new: str, tool: str = "test") -> Proposal:
    """A proposal replacing ``old`` with ``new`` in ``path`` (the ``patch_resource`` format)."""
    return Proposal((UpdateFile(path, (Replace(old, new),)),), "patch_resource", tool=tool)
