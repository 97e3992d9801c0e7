"""Beyond one machine: push proposal branches and gitpatch's notes to a git remote.

``push(repo, remote)`` sends every ``refs/heads/gitpatch/*`` branch (proposals and sessions;
``--prune`` drops the remote copies of those closed here) and ``refs/notes/gitpatch``
(status, approvals) with the real ``git push``, so the remote's own hooks (the
``pre-receive`` approval gate of ``gitpatch hooks install``) and the user's credential helpers
apply. A review space's target branch (``main``) is never pushed from here: a person approves,
and the gate on the remote refuses an unapproved proposal on ``main``. An auto space's
``main`` is (``push(..., branch="main")``, fast-forward only): its changes are acknowledged on
``main`` directly, and the remote is their durable copy. ``push_after(remote)`` is the
server's hook doing it after every change in a space that has that remote, before the call is
answered.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gitpatch.errors import InvalidArguments, RepositoryError

if TYPE_CHECKING:
    from gitpatch.doors.hosted.spaces import Space
    from gitpatch.tools.storage.base import Applied

__all__ = ["BRANCHES", "NOTES", "has_remote", "push", "push_after"]

_log = logging.getLogger("gitpatch.doors.hosted")

#: The refspec for proposal and session branches (forced: a session branch may be rewound).
BRANCHES = "+refs/heads/gitpatch/*:refs/heads/gitpatch/*"
#: The refspec for the notes (fast-forward only: git refuses to lose a remote's notes).
NOTES = "refs/notes/gitpatch:refs/notes/gitpatch"


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )


def has_remote(repo: Path, remote: str) -> bool:
    """True when ``repo`` has a remote called ``remote``."""
    return _git(repo, "remote", "get-url", "--", remote).returncode == 0


def push(repo: Path, remote: str = "origin", branch: str | None = None) -> list[str]:
    """Push the proposal branches and notes of ``repo`` to ``remote``, and ``branch`` when
    given (fast-forward only); returns the local refs that were sent."""
    if remote.startswith("-") or not has_remote(repo, remote):
        raise InvalidArguments(
            f"the repository has no remote named {remote!r}",
            hint=f"Add it first: git -C {repo} remote add {remote} URL",
            details={"remote": remote},
        )
    listed = _git(
        repo, "for-each-ref", "--format=%(refname)", "refs/heads/gitpatch/", "refs/notes/gitpatch"
    )
    refs = [r for r in listed.stdout.split() if r]
    # the branch refspec goes even when no proposal is open here: --prune then drops the
    # remote's copies of proposals closed since the last push
    specs = [BRANCHES, *[NOTES] * ("refs/notes/gitpatch" in refs)]
    if branch is not None:
        target = f"refs/heads/{branch}"
        if _git(repo, "rev-parse", "--verify", "--quiet", target).returncode == 0:
            specs.append(f"{target}:{target}")
            refs.append(target)
    done = _git(repo, "push", "--porcelain", "--prune", remote, *specs)
    if done.returncode != 0:
        raise RepositoryError(
            f"git push to {remote!r} failed: {done.stderr.strip() or done.stdout.strip()}",
            hint="Check the remote's URL, access and hooks; nothing local was changed.",
            details={"remote": remote},
        )
    return refs


def push_after(remote: str) -> Callable[[Space, Applied], None]:
    """The server's change hook: push the space to ``remote`` after each change. Spaces
    without that remote are skipped; a failed push is logged and the change stays local (the
    next push sends it)."""

    def hook(space: Space, _applied: Applied) -> None:
        if not has_remote(space.path, remote):
            return
        branch = "main" if space.settings.mode == "auto" else None
        try:
            push(space.path, remote, branch)
        except RepositoryError as exc:
            _log.warning("push of %s to %s failed: %s", space.name, remote, exc.message)

    return hook
