"""The proposal lifecycle, above the write path (``gitpatch.workspace``), behind this face.

The porcelain ``Workspace`` (``gitpatch.porcelain``) calls these namespaces, which take a
``Context``: ``lifecycle`` (approve, reject, list, show, undo and log what agents proposed),
``series`` (review steps on a session's stack: what approving also lands, other sessions' work),
``feedback`` (comments and notices to the agent), ``worktrees`` (a session's own linked
worktree), ``hunks`` (a proposal's hunks with stable ids, selections, the trees a partial
verdict makes), ``partial`` (approving or rejecting some hunks), ``amend`` (a person's own
edit of a proposal), ``checks`` (the project's checks on the tree that would land), ``queue``
(the approval queue), ``clashes`` (where two lines of work meet, to the line), ``workbench``
(a session's worktree in every mode), ``checkpoints`` (what commands changed there, as a
proposal), ``commands`` (running them there) and ``sessions`` (listing and ending sessions).
Their modules (``_lifecycle``, ``_series``, ``_lookup`` for finding and describing proposals,
``_feedback``, ``_worktrees``, ``_hunks``, ``_partial``, ``_amend``, ``_checks``, ``_queue``,
``_clashes``, ``_workbench``, ``_checkpoints``, ``_commands``, ``_sessions``) are private; the
doors ask ``queries``, the few read-only questions a front end may put to the lifecycle
directly.

Namespaces are imported on first use (PEP 562).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitpatch.review import _amend as amend
    from gitpatch.review import _checkpoints as checkpoints
    from gitpatch.review import _checks as checks
    from gitpatch.review import _clashes as clashes
    from gitpatch.review import _commands as commands
    from gitpatch.review import _feedback as feedback
    from gitpatch.review import _hunks as hunks
    from gitpatch.review import _lifecycle as lifecycle
    from gitpatch.review import _partial as partial
    from gitpatch.review import _queue as queue
    from gitpatch.review import _series as series
    from gitpatch.review import _sessions as sessions
    from gitpatch.review import _workbench as workbench
    from gitpatch.review import _worktrees as worktrees
    from gitpatch.review._checkpoints import CheckpointResult
    from gitpatch.review._commands import Ran
    from gitpatch.review._sessions import SessionInfo
    from gitpatch.review._workbench import Bench

#: Each name of the face and the private module it lives in.
_NAMES: dict[str, str] = {
    "Bench": "_workbench",
    "CheckpointResult": "_checkpoints",
    "Ran": "_commands",
    "SessionInfo": "_sessions",
}
#: The namespaces of the face: a private module under a public name.
_SPACES: dict[str, str] = {
    "amend": "_amend",
    "checks": "_checks",
    "clashes": "_clashes",
    "feedback": "_feedback",
    "hunks": "_hunks",
    "lifecycle": "_lifecycle",
    "partial": "_partial",
    "queue": "_queue",
    "series": "_series",
    "worktrees": "_worktrees",
    "workbench": "_workbench",
    "checkpoints": "_checkpoints",
    "commands": "_commands",
    "sessions": "_sessions",
}

__all__ = [
    "Bench",
    "CheckpointResult",
    "Ran",
    "SessionInfo",
    "amend",
    "checkpoints",
    "checks",
    "clashes",
    "commands",
    "feedback",
    "hunks",
    "lifecycle",
    "partial",
    "queue",
    "series",
    "sessions",
    "workbench",
    "worktrees",
]


def __getattr__(name: str) -> Any:
    """A name of the face, imported on first use (PEP 562)."""
    if name in _SPACES:
        return import_module(f"{__name__}.{_SPACES[name]}")
    if name in _NAMES:
        return getattr(import_module(f"{__name__}.{_NAMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
