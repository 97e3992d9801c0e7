"""How durable git is asked to be: ``core.fsync``, ``core.fsyncMethod``, ``core.fsyncObjectFiles``.

git fsyncs by components. Unset, ``core.fsync`` hardens packs, pack metadata and the commit
graph only: neither loose objects nor refs nor the index, the three things gitpatch writes.
``wanted`` reads the setting as git does (a comma list starting from that default, ``-x``
removing a component, ``none`` clearing, aggregates ``objects``, ``committed``, ``added``,
``all``; ``core.fsyncObjectFiles=true`` adds loose objects) and answers whether any of the
three is to be hardened with a method that flushes to disk (``fsync`` or ``batch``; git's
``writeout-only`` does not, so gitpatch does not either). ``apply`` then turns libgit2's fsync
of the git directory on or off for this process.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

import pygit2

from gitpatch.errors import FilesystemError, RepositoryError
from gitpatch.safety.owners import common_dir

__all__ = ["apply", "components", "enabled", "objects_written", "wanted"]

_DEFAULT = frozenset({"pack", "pack-metadata", "commit-graph"})
_AGGREGATES = {
    "objects": {"loose-object", "pack"},
    "derived-metadata": {"pack-metadata", "commit-graph"},
    "committed": {"loose-object", "pack", "reference"},
    "added": {"loose-object", "pack", "reference", "index"},
    "all": {"loose-object", "pack", "pack-metadata", "commit-graph", "reference", "index"},
}
_OURS = frozenset({"loose-object", "reference", "index"})
#: The fsync setting ``apply`` gave libgit2 last (empty: none yet; libgit2's default, off).
applied: list[bool] = []


def components(value: str | None, object_files: bool) -> set[str]:
    """The components git hardens for ``core.fsync`` = ``value`` (None: unset)."""
    chosen = set(_DEFAULT)
    for raw in (value or "").split(","):
        item = raw.strip().lower()
        if not item:
            continue
        if item == "none":
            chosen.clear()
            continue
        drop = item.startswith("-")
        name = item.lstrip("-")
        parts = _AGGREGATES.get(name, {name})
        chosen = chosen - parts if drop else chosen | parts
    if object_files:  # git fsyncs loose objects whenever it is set, whatever core.fsync says
        chosen.add("loose-object")
    return chosen


def wanted(get: Callable[[str], str | None]) -> bool:
    """Whether the repository's config (read through ``get``) asks to fsync what gitpatch
    writes (loose objects, refs or the index) with a method that reaches the disk."""
    method = (get("core.fsyncMethod") or "fsync").strip().lower()
    if method == "writeout-only":
        return False
    flag = (get("core.fsyncObjectFiles") or "").strip().lower()
    object_files = flag in ("true", "yes", "on", "1")
    return bool(components(get("core.fsync"), object_files) & _OURS)


def apply(durable: bool) -> None:
    """Turn libgit2's fsync of objects, refs and the index on or off (process-wide). A caller
    on a hot path reads ``applied`` first: nothing to do when it is already ``[durable]``."""
    if applied != [durable]:
        pygit2.settings.enable_fsync_gitdir(durable)
        applied[:] = [durable]


def enabled() -> bool:
    """Whether this process fsyncs what it writes to the git directory (``apply``'s last
    word; libgit2's default, off, until then)."""
    return applied == [True]


@contextlib.contextmanager
def objects_written(gitdir: str, need: int) -> Iterator[None]:
    """Writing about ``need`` bytes of objects: when libgit2 fails without a reason (it loses
    the errno of a full disk, leaving a stale message: the store's error is ``unexplained``)
    and the object directory has no room for them, say so (``filesystem_error``)."""
    try:
        yield
    except RepositoryError as exc:
        refuse_full(exc, gitdir, need)
        raise


def refuse_full(exc: RepositoryError, gitdir: str, need: int) -> None:
    """``objects_written``'s check, for a writer that catches ``exc`` itself (so that a
    write that succeeds never enters this module): raise ``filesystem_error`` when ``exc``
    is libgit2's reasonless failure and the object directory has no room for ``need``
    bytes; return otherwise (the caller re-raises ``exc``)."""
    if not exc.unexplained:
        return
    st = os.statvfs(common_dir(gitdir) / "objects")
    if st.f_bavail * st.f_frsize >= need + 65536:
        return
    raise FilesystemError(
        "could not write the objects of this change to the repository: the disk is "
        "full; nothing was changed",
        hint="Free some space, then retry the same call.",
        details={"path": "objects", "errno": "ENOSPC"},
    ) from exc
