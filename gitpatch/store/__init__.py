"""All git access for gitpatch (pygit2 only): trees, commits, CAS refs, merges, notes.

Nobody else holds the pygit2 repository (the working tree's index aside, see
``gitpatch.checkout.worktree``): what the rest of gitpatch needs from git is a ``Store`` method
or one of the few helpers named here. This package face is the only way in: the modules under
it are private. libgit2 errors become ``GitpatchError`` here, in ``git_errors`` / ``translate``,
and nowhere else.
"""

from __future__ import annotations

import os
from typing import Any

import pygit2

from gitpatch.core.spliced import Content
from gitpatch.errors import RepositoryError
from gitpatch.safety import durability, owners
from gitpatch.store._diffs import FilePatch, HunkText, apply_hunks, split_lines
from gitpatch.store._history import HISTORY_DEPTH, History
from gitpatch.store._loose import LARGE as LARGE_BLOB
from gitpatch.store._loose import blob_id
from gitpatch.store._notes import FANOUT_AT as NOTES_FANOUT_AT
from gitpatch.store._notes import NOTES_REF, NoteChange, Notes, note_path, notes_update
from gitpatch.store._notes import decode as decode_note
from gitpatch.store._objects import (
    DEFAULT_EMAIL,
    DEFAULT_NAME,
    MODE_LINK,
    MODE_SUBMODULE,
    MODE_TREE,
    CommitInfo,
    TreeEntry,
    file_id,
    is_dir,
    raise_tree_cache,
)
from gitpatch.store._objects import entry as blob_entry
from gitpatch.store._refs import RefUpdate
from gitpatch.store._repo import git_errors, is_lock_contention, translate

__all__ = [
    "DEFAULT_EMAIL",
    "DEFAULT_NAME",
    "HISTORY_DEPTH",
    "LARGE_BLOB",
    "MODE_LINK",
    "MODE_SUBMODULE",
    "MODE_TREE",
    "NOTES_FANOUT_AT",
    "NOTES_REF",
    "CommitInfo",
    "FilePatch",
    "HunkText",
    "NoteChange",
    "RefUpdate",
    "Store",
    "TreeEntry",
    "apply_hunks",
    "blob_entry",
    "blob_id",
    "decode_note",
    "file_id",
    "git_errors",
    "is_dir",
    "is_lock_contention",
    "note_path",
    "notes_update",
    "split_lines",
    "translate",
]


class Store(Notes, History):
    """All git access. One Store (and one pygit2.Repository) per thread/process.

    Made of its nouns, each in its own private module: ``Objects`` (blobs, trees, commits),
    ``Refs`` (compare-and-swap, recovery of a killed process's locks), ``Notes`` (proposal
    status), ``History`` (walks, diffs, merges, reverts), all over ``Repo`` (the handle, git
    config and attributes, the operation around a change, ``git_errors``). The store never reads
    or writes the index file or the working tree: that is ``gitpatch.checkout.worktree``'s job.
    """

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self._identity: tuple[str, str] | None = None
        #: The last few large blobs ``build_tree`` wrote, id -> content (see ``_objects.build``):
        #: a land takes its blob from here instead of reading it back (``WorkingTree``).
        self.fresh_blobs: dict[pygit2.Oid, Content] = {}
        self._durable = durability.wanted(self.config_get)
        self._objects = owners.common_dir(repo.path) / "objects"
        #: prefix -> (stat data of its folder and of packed-refs, the names listed then)
        self._flat: dict[str, tuple[tuple[Any, ...], list[str]]] = {}

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Store:
        """Open the repository at (or above) ``path``; ``RepositoryError`` if there is none."""
        where = os.fspath(path)
        raise_tree_cache()
        try:
            with git_errors(f"open the repository at {where!r}"):
                repo = pygit2.Repository(where)
        except RepositoryError as exc:
            cause = str(exc.details.get("cause", exc.message))
            if "object format" in cause:  # libgit2 reads SHA-1 repositories only
                raise RepositoryError(
                    f"{where!r} is a git repository with SHA-256 object names "
                    "(extensions.objectFormat), which gitpatch cannot read: its git library "
                    "knows SHA-1 repositories only; nothing was changed",
                    hint="Edit this repository's files directly, or work in a SHA-1 clone "
                    "(`git init --object-format=sha1`, then fetch into it).",
                    details={"path": where, "reason": "object_format"},
                ) from exc.__cause__
            raise RepositoryError(
                f"not a git repository: {where!r} ({cause})",
                hint="Run `git init` there first, or pass the path of an existing repository.",
                details={"path": where},
            ) from exc.__cause__
        store = cls(repo)
        sig = store.signature()
        with git_errors("set the reflog identity"):
            repo.set_ident(sig.name, sig.email)  # reflog entries then name who moved the ref
        return store

    @staticmethod
    def init_bare(path: str | os.PathLike[str], branch: str = "main") -> None:
        """Create an empty bare repository at ``path`` whose HEAD names ``branch``."""
        with git_errors(f"create a bare repository at {os.fspath(path)!r}"):
            pygit2.init_repository(os.fspath(path), bare=True, initial_head=branch)
