"""Branch names gitpatch owns, protected branches, and session branches.

Agents never commit to a protected branch (git config ``gitpatch.protected``, else
``.gitpatch.toml``, default main and master: ``config.protected_names``). In auto mode on such
a branch, their commits land on ``gitpatch/session/<name>``, started at the protected head and
checked out in a linked worktree of its own (see ``review.worktrees``), never in the person's
checkout; a person later merges the session with ``approve(<name>)``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

from gitpatch.errors import ConcurrentUpdate, InvalidArguments, RepositoryError
from gitpatch.safety.owners import common_dir
from gitpatch.safety.recovery import crashpoint
from gitpatch.store import Store
from gitpatch.workspace.config import DEFAULT_PROTECTED, protected_names

if TYPE_CHECKING:  # the hooks' gate imports this module and needs no working tree
    pass

__all__ = [
    "DEFAULT_PROTECTED",
    "PROPOSAL_PREFIX",
    "REJECTED_PREFIX",
    "SESSION_PREFIX",
    "branch_ref",
    "check_session_name",
    "claim_session",
    "session_name",
    "pick_target",
    "protected_branches",
    "remember_target",
    "session_target",
    "short",
    "start_session",
]

PROPOSAL_PREFIX = "refs/heads/gitpatch/"
SESSION_PREFIX = "refs/heads/gitpatch/session/"
REJECTED_PREFIX = "refs/gitpatch/rejected/"
# Where a session remembers the protected branch it came from (read by approve).
_SESSION_CONFIG = "gitpatch-session.{name}.target"


def short(ref: str) -> str:
    """A branch's short name for messages (``refs/heads/main`` -> ``main``)."""
    return ref.removeprefix("refs/heads/")


def branch_ref(name: str) -> str:
    """``name`` as a full ref (``main`` -> ``refs/heads/main``); refuses invalid names."""
    ref = name if name.startswith("refs/") else f"refs/heads/{name}"
    if not pygit2.reference_is_valid_name(ref):
        raise InvalidArguments(
            f"{name!r} is not a valid branch name",
            hint="Pass a branch name such as 'main' or a full ref such as 'refs/heads/main'.",
            details={"branch": name},
        )
    return ref


def protected_branches(store: Store, override: Sequence[str] | None = None) -> frozenset[str]:
    """Full refs of the protected branches: ``override``, else the repository's setting
    (``config.protected_names``: git config, else ``.gitpatch.toml``, else main and master)."""
    names = list(override) if override is not None else protected_names(store)
    return frozenset(branch_ref(n) for n in names if n.strip())


def session_target(store: Store, name: str) -> str | None:
    """The protected branch (full ref) the session ``name`` was started from, if recorded."""
    return store.config_get(_SESSION_CONFIG.format(name=name))


def pick_target(
    store: Store, branch: str | None, guarded: frozenset[str]
) -> tuple[str, str | None]:
    """(target ref, session name when the chosen branch is itself a session branch).

    With HEAD on ``gitpatch/session/<name>``, the target is the branch the session came from,
    so reopening a Workspace resumes the session instead of treating it as a plain branch.
    """
    ref = branch_ref(branch) if branch else store.head_branch()
    if ref is None:
        from gitpatch.checkout import preflight as checkout

        workdir = store.workdir
        checkout.refuse_detached(store.git_dir, Path(workdir) if workdir else None)
        raise RepositoryError(
            "HEAD is detached: there is no branch to work on",
            hint="Check out a branch, or pass branch='name' to Workspace.open.",
            details={"reason": "detached_head"},
        )
    if ref.startswith(SESSION_PREFIX):
        name = ref.removeprefix(SESSION_PREFIX)
        origin = session_target(store, name)
        if origin is None:
            origin = next((g for g in sorted(guarded) if store.ref_target(g)), None)
        if origin is not None:
            return origin, name
    return ref, None


def check_session_name(name: str) -> None:
    """Refuse a session name that cannot name a branch below ``gitpatch/session/``."""
    if not name or "/" in name or not pygit2.reference_is_valid_name(SESSION_PREFIX + name):
        raise InvalidArguments(
            f"invalid session name {name!r}",
            hint="Use a short name without slashes, such as 'agent'.",
            details={"session": name},
        )


def session_name(wanted: str | None) -> str:
    """A valid session name from a client's name (``Claude Code 1.2`` -> ``claude-code-1.2``);
    ``agent`` when nothing usable is left."""
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", (wanted or "").strip()).strip("-.").lower()
    text = re.sub(r"\.{2,}", ".", text)[:40].rstrip("-.")
    return text if text and not text.endswith(".lock") else "agent"


def claim_session(
    gitdir: str, wanted: str, *, exact: bool = False
) -> tuple[str, Callable[[], None]]:
    """``wanted``, or ``wanted-2``, ``wanted-3``... : the first name no live connection holds,
    and the function that releases it; ``exact``: ``wanted`` itself or ``invalid_arguments``.
    A name is held by an exclusive ``flock`` on ``<git dir>/gitpatch/sessions/<name>.live``,
    so a killed process frees it at once (a restarted agent resumes its session)."""
    where = common_dir(gitdir) / "gitpatch" / "sessions"
    where.mkdir(parents=True, exist_ok=True)
    for n in range(1, 2 if exact else 1000):
        name = wanted if n == 1 else f"{wanted}-{n}"
        fd = os.open(where / f"{name}.live", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return name, lambda fd=fd: os.close(fd)
    if exact:
        raise InvalidArguments(
            f"session {wanted!r} is in use by another live connection",
            hint="Stop that server, or pass another --session name (each agent its own).",
            details={"session": wanted},
        )
    raise InvalidArguments(
        f"too many live sessions named {wanted!r}", hint="Pass serve --session NAME."
    )


def start_session(store: Store, target: str, name: str) -> str:
    """Start (or resume) session ``name`` for ``target``; return its full ref.

    Only the session branch (started at ``target``'s head) and its origin are written: HEAD
    never moves. Where the session's commits go on disk is ``gitpatch.review.worktrees``' business.
    """
    check_session_name(name)
    ref = branch_ref(SESSION_PREFIX + name)
    head = store.ref_target(target)
    if store.ref_target(ref) is None and head is not None:
        with contextlib.suppress(ConcurrentUpdate):  # another process started it: resume it
            store.update_ref(ref, head, None, f"gitpatch: start session at {target}")
    remember_target(store, name, target)
    crashpoint("config.written")
    return ref


def remember_target(store: Store, name: str, target: str) -> None:
    """Remember that session ``name`` works for ``target`` (read by ``session_target``)."""
    store.config_set(_SESSION_CONFIG.format(name=name), target)
