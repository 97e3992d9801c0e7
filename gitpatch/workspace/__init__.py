"""The front door: ``Workspace`` turns proposals into commits and lands or proposes them.

- ``api``: ``Workspace`` (open, read, propose, review), read-only properties over a ``Context``;
- ``context``: what one call works on; ``sessions``: branches gitpatch owns, protected branches;
- ``guards``, ``versions``, ``build``: the checks, versions and commit of one proposal;
- ``propose``: the one attempt loop (build on the head, rebuild after a lost race) that
  ``Workspace.propose`` and the scratch families share, and the one dry run (``preview``);
- ``publisher``: the one way refs, notes and the disk move together;
- ``lookup`` and ``review``: finding proposals; approve, reject, undo, log;
- ``results``: the pydantic models handed back; ``config``: ``.gitpatch.toml`` and the one
  resolver of protected branches; ``opening``: opening a repository as its config says;
  ``gate``: the approval rule the git hooks apply too.

``from gitpatch.workspace import Workspace`` keeps working (imported on first use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitpatch.workspace.api import Workspace

__all__ = ["Workspace"]


def __getattr__(name: str) -> Any:
    """``Workspace``, imported on first use so light submodules stay light (PEP 562)."""
    if name != "Workspace":
        raise AttributeError(f"module 'gitpatch.workspace' has no attribute {name!r}")
    from gitpatch.workspace.api import Workspace

    return Workspace
