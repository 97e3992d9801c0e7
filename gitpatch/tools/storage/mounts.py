"""Namespaces over storages: ``MountedFilesystem`` and turning what callers pass into one.

A tool is made with a reader and a writer capability that must come from one namespace: the
same storage (a ``Workspace`` is wrapped once, so ``reader=ws, writer=ws`` is one namespace),
or the same ``MountedFilesystem``, which maps virtual roots such as ``/workspace`` onto
storages and resolves rooted virtual paths and paths relative to a captured cwd.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from gitpatch.core.paths import normalize, parse_address
from gitpatch.errors import InvalidArguments, UnsafePath
from gitpatch.porcelain.workspace import Workspace
from gitpatch.tools.storage.base import Namespace, Storage, Target
from gitpatch.tools.storage.workspace import WorkspaceStorage

__all__ = ["MountedFilesystem", "as_storage", "namespace_of"]


class MountedFilesystem:
    """Virtual roots (``/workspace``) mapped onto storages: rooted virtual paths go to the
    mount with the longest matching root; relative paths resolve from the captured cwd (by
    default the only mount's root, or ``/`` when there are several). ``work://`` and
    ``memory://`` addresses go to the one mounted Workspace."""

    def __init__(self, mounts: Mapping[str, Any]) -> None:
        if not mounts:
            raise ValueError("MountedFilesystem needs at least one mount")
        self.mounts: dict[str, Storage] = {}
        for root, storage in mounts.items():
            clean = posixpath.normpath(root) if isinstance(root, str) else ""
            if not clean.startswith("/") or clean == "/" or "\\" in clean:
                raise ValueError(f"mount root {root!r} must be an absolute POSIX path below /")
            self.mounts[clean] = as_storage(storage)
        self.root = next(iter(self.mounts)) if len(self.mounts) == 1 else "/"

    def resolve(self, path: str, cwd: str | None = None) -> Target:
        """See ``Namespace.resolve``."""
        if not isinstance(path, str):
            raise InvalidArguments("path must be a string", hint="Pass the path as a string.")
        address = parse_address(path)
        if address is not None:
            return Target(self._family_storage(path), str(address), str(address), address)
        if not path.strip():
            normalize(path)
        raw = path.strip()
        if not raw.startswith("/"):
            base = posixpath.join(self.root, cwd) if cwd else self.root
            mount = self._mount_of(base)
            if mount is not None:
                inside = posixpath.relpath(posixpath.join(base, raw), mount)
                normalize(inside if inside != "." else raw)  # ".." above the mount: an escape
            raw = posixpath.join(base, raw)
        full = posixpath.normpath(normalize(raw, "/") if raw != "/" else raw)
        full = "/" + full.lstrip("/")
        for root in sorted(self.mounts, key=len, reverse=True):
            if full.startswith(root + "/"):
                key = normalize(full[len(root) + 1 :])
                return Target(self.mounts[root], key, f"{root}/{key}")
        raise UnsafePath(
            f"path {path!r} is outside every mount ({', '.join(self.mounts)})",
            hint=f"Use a path below {' or '.join(self.mounts)}.",
            details={"path": path},
        )

    def _mount_of(self, path: str) -> str | None:
        clean = "/" + posixpath.normpath(path).lstrip("/")
        return next(
            (
                r
                for r in sorted(self.mounts, key=len, reverse=True)
                if (clean + "/").startswith(r + "/")
            ),
            None,
        )

    def _family_storage(self, path: str) -> Storage:
        found = [s for s in self.mounts.values() if isinstance(s, WorkspaceStorage)]
        if len(found) != 1:
            raise UnsafePath(
                f"{path}: work:// and memory:// addresses need exactly one mounted Workspace "
                f"(there are {len(found)})",
                hint="Use a path below a mount instead.",
                details={"path": path},
            )
        return found[0]


# -- wrapping ----------------------------------------------------------------------------------


#: Classes whose instances passed ``isinstance(obj, Storage)``: a runtime protocol check
#: looks up every member each time (~50 µs), and the service wraps a storage per call.
_STORAGE_CLASSES: set[type] = set()


def as_storage(obj: Any) -> Storage:
    """``obj`` as a storage: a Workspace is wrapped (views of one Workspace are equal)."""
    if isinstance(obj, Workspace):
        return WorkspaceStorage.of(obj)
    if type(obj) in _STORAGE_CLASSES:
        found: Storage = obj
        return found
    if isinstance(obj, Storage):
        _STORAGE_CLASSES.add(type(obj))
        return obj
    raise TypeError(f"{type(obj).__name__} is not a storage (read, stat, list, apply)")


def namespace_of(reader: Any, writer: Any) -> Namespace:
    """The one namespace ``reader`` and ``writer`` share; ``ValueError`` when they differ."""
    if reader is None or writer is None:
        raise ValueError("pass both reader= and writer= (the same storage or filesystem)")
    if isinstance(reader, MountedFilesystem) or isinstance(writer, MountedFilesystem):
        if reader is not writer:
            raise ValueError("reader= and writer= must be the same MountedFilesystem")
        ns: Namespace = reader
        return ns
    left, right = as_storage(reader), as_storage(writer)
    if left is not right and left != right:
        raise ValueError(
            "reader= and writer= come from different namespaces; pass the same storage as both"
        )
    if not hasattr(left, "resolve"):
        raise ValueError(f"{type(left).__name__} cannot resolve paths")
    found: Namespace = left  # type: ignore[assignment]
    return found
