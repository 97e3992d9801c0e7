"""Absolute paths that reach the working tree through a symbolic link to its root.

A repository opened as ``/home/me/proj`` where ``proj`` links to ``/data/proj`` has its root at
the real path; an agent naming ``/home/me/proj/a.txt`` means the file below it. Only the
directories above the root are resolved, never a link inside the repository (those stay
refused by the path checks).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import PurePosixPath

from gitpatch.core.model import Proposal, UpdateFile

__all__ = ["through_root", "through_root_all"]


def through_root(path: str, root: str | None, aliases: tuple[str, ...] = ()) -> str:
    """``path`` rewritten below ``root`` when an ancestor of it is a link to ``root``, or one
    of ``aliases`` (folders that stand for the root: a session's own worktree)."""
    if root is None or not isinstance(path, str) or not path.startswith("/"):
        return path
    for alias in aliases:
        if path.startswith(alias.rstrip("/") + "/"):
            return root.rstrip("/") + path[len(alias.rstrip("/")) :]
    if path == root or path.startswith(root.rstrip("/") + "/"):
        return path
    real = os.path.realpath(root)
    parts = PurePosixPath(path).parts
    for depth in range(2, len(parts)):
        if os.path.realpath(os.path.join(*parts[:depth])) == real:
            return "/".join((root.rstrip("/"), *parts[depth:]))
    return path


def through_root_all(
    proposal: Proposal, root: str | None, aliases: tuple[str, ...] = ()
) -> Proposal:
    """``through_root`` for every path and move destination of ``proposal``."""
    if root is None:
        return proposal
    ops = []
    for op in proposal.operations:
        new = dataclasses.replace(op, path=through_root(op.path, root, aliases))
        if isinstance(new, UpdateFile) and new.move_to is not None:
            new = dataclasses.replace(new, move_to=through_root(new.move_to, root, aliases))
        ops.append(new)
    return dataclasses.replace(proposal, operations=tuple(ops))
