"""Helpers shared by the Workspace unit tests: commits by a person and a full-state fingerprint."""

from __future__ import annotations

import hashlib
from pathlib import Path

from gitpatch.core.model import Proposal, Replace, UpdateFile
from tests.gitkit import git, head


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


def state(root: Path) -> dict[str, str]:
    """Everything an error must leave untouched: refs, HEAD, index, files, gitpatch state."""
    out = {
        "refs": git(root, "for-each-ref", "--format=%(refname) %(objectname)"),
        "HEAD": git(root, "symbolic-ref", "-q", "HEAD", check=False),
        "index": _digest((root / ".git" / "index").read_bytes()),
        "journal": str((root / ".git" / "gitpatch" / "journal.json").exists()),
    }
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel == ".git" or rel.startswith(".git/"):
            continue
        if path.is_symlink():
            out[rel] = "link:" + str(path.readlink())
        elif path.is_file():
            out[rel] = _digest(path.read_bytes())
        else:
            out[rel] = "dir"
    return out


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sr(search: str, replace: str) -> str:
    """One SEARCH/REPLACE block."""
    return f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


def edit(path: str, old: str, new: str, tool: str = "test") -> Proposal:
    """A proposal replacing ``old`` with ``new`` in ``path`` (the ``patch_resource`` format)."""
    return Proposal((UpdateFile(path, (Replace(old, new),)),), "patch_resource", tool=tool)
