"""Branch names gitpatch owns, protected branches, and session branches.

Agents never commit to a protected branch (git config ``gitpatch.protected``, else
``.gitpatch.toml``, default main and master: ``config.protected_names``). In auto mode on such
a branch, their commits land on ``gitpatch/session/<name>``, started at the protected head and
checked out in a linked worktree of its own (see ``sessiontrees``), never in the person's
checkout; a person later merges the session with ``approve(<name>)``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

from gitpatch.errors import ConcurrentUpdate, InvalidArguments, RepositoryError
from gitpatch.safety.crashpoints import crashpoint
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
    "pick_target",
    "protected_branches",
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


def start_session(store: Store, target: str, name: str) -> str:
    """Start (or resume) session ``name`` for ``target``; return its full ref.

    Only the session branch (started at ``target``'s head) and its origin are written: HEAD
    never moves. Where the session's commits go on disk is ``sessiontrees``' business.
    """
    if not name or "/" in name:
        raise InvalidArguments(
            f"invalid session name {name!r}",
            hint="Use a short name without slashes, such as 'agent'.",
        )
    ref = branch_ref(SESSION_PREFIX + name)
    head = store.ref_target(target)
    if store.ref_target(ref) is None and head is not None:
        with contextlib.suppress(ConcurrentUpdate):  # another process started it: resume it
            store.update_ref(ref, head, None, f"gitpatch: start session at {target}")
    _remember(store, name, target)
    crashpoint("config.written")
    return ref


def _remember(store: Store, name: str, target: str) -> None:
    store.config_set(_SESSION_CONFIG.format(name=name), target)
