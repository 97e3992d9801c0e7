"""The porcelain: ``Workspace``, the verbs people and front ends use, over the write path
(``gitpatch.workspace``) and the proposal lifecycle (``gitpatch.review``).

- ``workspace``: ``Workspace`` (open, read, propose, apply, and the review verbs);
- ``_plumbing``: ``Plumbing``, a Workspace's plumbing view (``ws.plumbing``): the steps under
  its verbs that the tool storages, the hosted service and the doors compose;
- ``opening``: opening a repository as its config says, and what awaits a person's review.

``from gitpatch.porcelain import Workspace`` imports it on first use, so light submodules stay
light (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitpatch.porcelain._plumbing import Plumbing
    from gitpatch.porcelain.workspace import Workspace

__all__ = ["Plumbing", "Workspace"]


def __getattr__(name: str) -> Any:
    """``Workspace`` and ``Plumbing``, imported on first use (PEP 562)."""
    if name == "Workspace":
        from gitpatch.porcelain.workspace import Workspace

        return Workspace
    if name == "Plumbing":
        from gitpatch.porcelain._plumbing import Plumbing

        return Plumbing
    raise AttributeError(f"module 'gitpatch.porcelain' has no attribute {name!r}")
