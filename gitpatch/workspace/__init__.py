"""The write path (plumbing), private modules behind this one face.

What the review lifecycle, the porcelain ``Workspace``, the tool storages and the hosted service
build on: a call's ``Context``; the one attempt loop (``land`` for one change on one ref or
several, ``land_batch`` for a queue's batch, ``Attempt`` one ref's share) and the one dry run
(``preview``); the one publisher (``Transition``, ``publish``); a change's commit
(``commit_changes``, ``proposal_result``); and, as namespaces, ``guards`` (the checks),
``versions`` (what a read hands out), ``stack`` (where a session's next proposal is built) and
``propose`` (the attempt loop and the publisher). The modules themselves (``_build``,
``_propose``, ``_guards``, ``_versions``, ``_stack``, ``_carry``) are private: the layout test
refuses an import of them from outside this package.

Public modules beside the face, which the doors may import: ``results`` (the result models),
``config`` (``.gitpatch.toml`` and the resolver of protected branches), ``sessions`` (branch
names gitpatch owns) and ``gate`` (the approval rule the git hooks apply).

Names are imported on first use (PEP 562), so a light public module stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitpatch.workspace import _guards as guards
    from gitpatch.workspace import _propose as propose
    from gitpatch.workspace import _stack as stack
    from gitpatch.workspace import _versions as versions
    from gitpatch.workspace._build import (
        Built,
        Context,
        Dirty,
        commit_changes,
        proposal_result,
        refuse_rejected,
    )
    from gitpatch.workspace._guards import blob, check_unchanged
    from gitpatch.workspace._propose import (
        REPLAYED,
        STEP_ATTEMPTS,
        Attempt,
        Moved,
        NoteChange,
        Preview,
        Transition,
        check_paths,
        consistent_view,
        disk,
        land,
        land_batch,
        preview,
        publish,
    )

#: Each name of the face and the private module it lives in.
_NAMES: dict[str, str] = {
    "REPLAYED": "_propose",
    "Attempt": "_propose",
    "Built": "_build",
    "Context": "_build",
    "Dirty": "_build",
    "Moved": "_propose",
    "NoteChange": "_propose",
    "Preview": "_propose",
    "STEP_ATTEMPTS": "_propose",
    "Transition": "_propose",
    "blob": "_guards",
    "check_paths": "_propose",
    "check_unchanged": "_guards",
    "commit_changes": "_build",
    "consistent_view": "_propose",
    "disk": "_propose",
    "land": "_propose",
    "land_batch": "_propose",
    "preview": "_propose",
    "proposal_result": "_build",
    "refuse_rejected": "_build",
    "publish": "_propose",
}
#: The namespaces of the face: a private module under a public name.
_SPACES: dict[str, str] = {
    "guards": "_guards",
    "propose": "_propose",
    "stack": "_stack",
    "versions": "_versions",
}

__all__ = [
    "REPLAYED",
    "Attempt",
    "Built",
    "Context",
    "Dirty",
    "Moved",
    "NoteChange",
    "Preview",
    "STEP_ATTEMPTS",
    "Transition",
    "blob",
    "check_paths",
    "check_unchanged",
    "commit_changes",
    "consistent_view",
    "disk",
    "guards",
    "land",
    "land_batch",
    "preview",
    "proposal_result",
    "refuse_rejected",
    "propose",
    "publish",
    "stack",
    "versions",
]


def __getattr__(name: str) -> Any:
    """A name of the face, imported on first use (PEP 562)."""
    if name in _SPACES:
        return import_module(f"{__name__}.{_SPACES[name]}")
    if name in _NAMES:
        return getattr(import_module(f"{__name__}.{_NAMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
