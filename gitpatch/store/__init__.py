"""All git access for gitpatch (pygit2 only): trees, commits, CAS refs, merges, notes.

Nobody else holds the pygit2 repository (the working tree's index aside, see
``gitpatch.checkout.worktree``): what the rest of gitpatch needs from git is a ``Store`` method.
libgit2 errors become ``GitpatchError`` here, in ``git_errors`` / ``translate``, and nowhere else.
"""

from __future__ import annotations

from gitpatch.store._errors import git_errors, is_lock_contention, translate
from gitpatch.store.notes import NOTES_REF
from gitpatch.store.refs import RefUpdate
from gitpatch.store.store import (
    DEFAULT_EMAIL,
    DEFAULT_NAME,
    HISTORY_DEPTH,
    CommitInfo,
    Store,
    TreeEntry,
)

__all__ = [
    "DEFAULT_EMAIL",
    "DEFAULT_NAME",
    "HISTORY_DEPTH",
    "NOTES_REF",
    "CommitInfo",
    "RefUpdate",
    "Store",
    "TreeEntry",
    "git_errors",
    "is_lock_contention",
    "translate",
]
