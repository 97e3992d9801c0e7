"""All git access for gitpatch (pygit2 only): trees, commits, CAS refs, merges, notes.

Nobody else holds the pygit2 repository (the working tree's index aside, see
``gitpatch.checkout.worktree``): what the rest of gitpatch needs from git is a ``Store`` method
or one of the few helpers named here. This package face is the only way in: the modules under
it are private. libgit2 errors become ``GitpatchError`` here, in ``git_errors`` / ``translate``,
and nowhere else.
"""

from __future__ import annotations

from gitpatch.store._diffs import FilePatch, HunkText, apply_hunks, split_lines
from gitpatch.store._entries import entry as blob_entry
from gitpatch.store._entries import file_id, is_dir
from gitpatch.store._errors import git_errors, is_lock_contention, translate
from gitpatch.store._loose import LARGE as LARGE_BLOB
from gitpatch.store._loose import blob_id
from gitpatch.store._notes import FANOUT_AT as NOTES_FANOUT_AT
from gitpatch.store._notes import NOTES_REF, NoteChange, note_path, notes_update
from gitpatch.store._notes import decode as decode_note
from gitpatch.store._refs import RefUpdate
from gitpatch.store._store import (
    DEFAULT_EMAIL,
    DEFAULT_NAME,
    HISTORY_DEPTH,
    CommitInfo,
    Store,
    TreeEntry,
)
from gitpatch.store._trees import MODE_LINK, MODE_SUBMODULE, MODE_TREE

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
