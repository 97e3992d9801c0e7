"""All git access for gitpatch (pygit2 only): trees, commits, CAS refs, merges, notes."""

from __future__ import annotations

from gitpatch.store.notes import NOTES_REF
from gitpatch.store.refs import RefUpdate
from gitpatch.store.store import DEFAULT_EMAIL, DEFAULT_NAME, CommitInfo, Store, TreeEntry

__all__ = [
    "DEFAULT_EMAIL",
    "DEFAULT_NAME",
    "NOTES_REF",
    "CommitInfo",
    "RefUpdate",
    "Store",
    "TreeEntry",
]
