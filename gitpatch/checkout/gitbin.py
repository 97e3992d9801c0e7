"""Running the ``git`` binary on the working tree, for what only git does exactly.

libgit2 implements neither external clean/smudge filter drivers nor the skip-worktree bit of an
index entry it replaces; where a checkout needs those, gitpatch asks git itself. Every call runs
in the working tree's root with ``GIT_DIR``/``GIT_WORK_TREE`` pointing at it (variables the
caller's environment sets for another repository are dropped), so it acts on this checkout only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from typing import BinaryIO

from gitpatch.errors import RepositoryError

__all__ = ["GitFailed", "available", "environment", "run"]

#: Variables that would point git at another repository, index or worktree.
_REPO_ENV = frozenset(
    (
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_COMMON_DIR",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
    )
)


class GitFailed(Exception):
    """git exited with a non-zero status; ``stderr`` says why."""

    def __init__(self, args: Sequence[str], stderr: str) -> None:
        super().__init__(f"git {' '.join(args)}: {stderr}")
        self.stderr = stderr


def available() -> bool:
    """True when a ``git`` binary is on PATH."""
    return shutil.which("git") is not None


def environment() -> dict[str, str]:
    """This process's environment without the variables that point git elsewhere."""
    return {k: v for k, v in os.environ.items() if k not in _REPO_ENV}


def run(
    gitdir: str,
    workdir: str,
    args: Sequence[str],
    stdin: bytes = b"",
    *,
    index: str | None = None,
    out: BinaryIO | None = None,
) -> bytes:
    """Run ``git args`` on the checkout (``gitdir``, ``workdir``); its stdout.

    ``index``: an index file to use instead of the checkout's (the scratch copy a land
    writes while it holds ``index.lock``, ``checkout.index``).
    ``out``: a file to write the stdout into instead (a pack: not held in memory); then
    nothing is returned.
    ``GitFailed`` on a non-zero exit; ``RepositoryError`` when git cannot be started.
    """
    env = environment()
    env.update(GIT_DIR=gitdir, GIT_WORK_TREE=workdir)
    if index is not None:
        env["GIT_INDEX_FILE"] = index
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=workdir,
            env=env,
            input=stdin,
            stdout=subprocess.PIPE if out is None else out,
            stderr=subprocess.PIPE,
            check=False,
        )
    except OSError as exc:
        raise RepositoryError(
            f"cannot run git ({exc.strerror or exc}); this checkout needs it",
            hint="Install git, or put it on PATH.",
        ) from exc
    if done.returncode != 0:
        raise GitFailed(args, done.stderr.decode("utf-8", "replace").strip())
    return done.stdout or b""
