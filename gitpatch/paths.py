"""Turning the paths a caller sends into safe repository-relative paths.

Everything here is lexical: no file is read. A path that could leave the repository, reach into
``.git``, or smuggle a NUL byte is refused before any content is looked at. Checks that need the
repository (symlinks, ignored files, directories) belong to the workspace.
"""

from __future__ import annotations

import dataclasses
import posixpath

from gitpatch.errors import InvalidArguments, InvalidPatch, UnsafePath
from gitpatch.model import FileOp, Proposal, UpdateFile

__all__ = ["normalize", "normalize_proposal"]


def normalize(path: str, root: str | None = None) -> str:
    """Return ``path`` as a clean POSIX path relative to the repository root.

    ``root`` is the repository's absolute working directory (or a virtual root such as
    ``/workspace``): an absolute path must lie below it. Refuses empty paths, NUL bytes, escapes
    above the root and any component named ``.git`` (compared without case, as some file
    systems do).
    """
    if not isinstance(path, str) or not path.strip():
        raise InvalidArguments("path is empty", hint="Pass the path of a file in the repository.")
    if "\x00" in path:
        raise UnsafePath(
            "path contains a NUL byte", hint="Pass a plain file path.", details={"path": path}
        )
    raw = path.strip()
    if raw.startswith("/"):
        base = posixpath.normpath(root) if root else None
        if base is None or not (raw == base or raw.startswith(base.rstrip("/") + "/")):
            raise UnsafePath(
                f"path {raw!r} is outside the repository",
                hint=f"Use a path relative to the repository root{f' ({root})' if root else ''}.",
                details={"path": path},
            )
        raw = raw[len(base) :].lstrip("/") if base else raw
    clean = posixpath.normpath(raw) if raw else "."
    if clean == "." or clean == "":
        raise InvalidArguments(
            f"path {path!r} names the repository root, not a file",
            hint="Pass the path of a file in the repository.",
            details={"path": path},
        )
    if clean == ".." or clean.startswith("../"):
        raise UnsafePath(
            f"path {path!r} escapes the repository",
            hint="Paths must stay inside the repository; remove the '..' components.",
            details={"path": path},
        )
    if any(part.lower() == ".git" for part in clean.split("/")):
        raise UnsafePath(
            f"path {path!r} is inside .git",
            hint="Choose a path outside the .git directory: gitpatch never edits git's own files.",
            details={"path": path},
        )
    return clean


def normalize_proposal(proposal: Proposal, root: str | None = None) -> Proposal:
    """``proposal`` with every path and move destination normalised (see ``normalize``).

    The one normaliser: the workspace runs it with its root, and the engine runs it again, so
    no caller can make the engine write outside the repository or inside ``.git``. A proposal
    with no operation is ``invalid_patch``, as every parser reports an edit text with none.
    """
    if not proposal.operations:
        raise InvalidPatch(
            "the proposal has no file operations", hint="Give at least one edit to apply."
        )
    ops: list[FileOp] = []
    for op in proposal.operations:
        clean = dataclasses.replace(op, path=normalize(op.path, root))
        if isinstance(clean, UpdateFile) and clean.move_to is not None:
            clean = dataclasses.replace(clean, move_to=normalize(clean.move_to, root))
        ops.append(clean)
    return dataclasses.replace(proposal, operations=tuple(ops))
