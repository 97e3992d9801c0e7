"""The porcelain: ``Workspace``, the verbs people and front ends use, over the write path
(``gitpatch.workspace``) and the proposal lifecycle (``gitpatch.review``).

- ``workspace``: ``Workspace`` (open, read, propose, and the review verbs);
- ``opening``: opening a repository as its config says, and what awaits a person's review.

``from gitpatch.porcelain import Workspace`` imports it on first use, so light submodules stay
light (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitpatch.porcelain.workspace import Workspace

__all__ = ["Workspace"]


def __getattr__(name: str) -> Any:
    """``Workspace``, imported on first use (PEP 562)."""
    if name != "Workspace":
        raise AttributeError(f"module 'gitpatch.porcelain' has no attribute {name!r}")
    from gitpatch.porcelain.workspace import Workspace

    return Workspace
