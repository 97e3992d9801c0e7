"""``Context``: what one Workspace call works on (repository, working tree, mode, branches)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gitpatch.checkout.worktree import WorkingTree
from gitpatch.store import Store
from gitpatch.workspace.results import Mode

__all__ = ["Context"]

#: What a call does with uncommitted changes to the files it edits.
Dirty = Literal["record", "refuse"]


@dataclass(frozen=True)
class Context:
    """The repository, its working tree (None when bare), the mode and the branches in play.

    ``target`` is the branch proposals are meant for (a protected branch when a session is
    used); ``branch`` is the one they are built on and, in auto mode, land on; ``session`` is
    the session name when auto mode lands on ``gitpatch/session/<name>``.
    """

    store: Store
    worktree: WorkingTree | None
    mode: Mode
    target: str
    branch: str
    session: str | None
    protected: frozenset[str]
    author: str
    dirty: Dirty = "record"
    allow_ignored: bool = False

    def tracks_disk(self) -> bool:
        """True when the working tree shows ``branch`` (so disk content is the base)."""
        return self.worktree is not None and self.store.head_branch() == self.branch
