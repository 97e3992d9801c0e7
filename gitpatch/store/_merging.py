"""3-way merges computed from the changed paths only, when the case is simple.

libgit2's ``merge_commits`` and ``revert_commit`` load both whole trees into an in-memory index:
seconds for a 100,000-file repository, whatever the size of the change. Most merges gitpatch
makes (approving a proposal, undoing a commit) touch a few paths, so ``merge_trees`` replays
the other side's changed entries onto ours, merging the content of a file only when both sides
edited it. Whatever needs more judgement — a path added, deleted or moved on one side and
changed on the other, a mode change or a link on both sides, binary content, a file/directory
swap, a content conflict — answers None, and the caller runs libgit2's full merge, which
detects renames and reports conflicts.
"""

from __future__ import annotations

import pygit2
from pygit2.enums import FileMode

from gitpatch.core.text import is_utf8_text
from gitpatch.errors import GitpatchError
from gitpatch.store._objects import MODE_BLOB, MODE_EXEC, build_entries
from gitpatch.store._treediff import Side, file_changes

__all__ = ["merge_blobs", "merge_trees"]

_REGULAR = (MODE_BLOB, MODE_EXEC)


def _text(repo: pygit2.Repository, oid: pygit2.Oid) -> bool:
    blob = repo[oid]
    assert isinstance(blob, pygit2.Blob)
    return is_utf8_text(blob.data)


def _merge_file(
    repo: pygit2.Repository, path: str, base: Side, ours: Side, theirs: Side
) -> tuple[pygit2.Oid, int] | None:
    """Both sides edited ``path``: their line-level merge, or None if it is not clean text."""
    if base is None or ours is None or theirs is None:
        return None  # added on both sides, or deleted on one: libgit2 decides
    if not base[1] == ours[1] == theirs[1] or ours[1] not in _REGULAR:
        return None
    # pygit2 hands merged content back as str (and cuts at NUL), so only UTF-8 text goes here.
    if not all(_text(repo, side[0]) for side in (base, ours, theirs)):
        return None
    result = repo.merge_file_from_index(
        pygit2.IndexEntry(path, base[0], FileMode(base[1])),
        pygit2.IndexEntry(path, ours[0], FileMode(ours[1])),
        pygit2.IndexEntry(path, theirs[0], FileMode(theirs[1])),
    )
    if result is None or isinstance(result, str) or not result.automergeable:
        return None
    return repo.create_blob(result.contents.encode("utf-8")), ours[1]


def merge_blobs(
    repo: pygit2.Repository, path: str, base: bytes | None, ours: bytes, theirs: bytes
) -> bytes | None:
    """One file's contents merged over ``base`` (None: both added it), None on a conflict or
    when a side is not UTF-8 text."""
    sides = [b"" if base is None else base, ours, theirs]
    for data in sides:
        if b"\x00" in data:
            return None
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    a, o, t = (pygit2.IndexEntry(path, repo.create_blob(d), FileMode.BLOB) for d in sides)
    result = repo.merge_file_from_index(a, o, t)
    if result is None or isinstance(result, str) or not result.automergeable:
        return None
    return result.contents.encode("utf-8")


def _may_rename(changes: dict[str, tuple[Side, Side]]) -> bool:
    values = changes.values()
    return any(a is None for a, _b in values) and any(b is None for _a, b in values)


def merge_trees(
    repo: pygit2.Repository,
    base: pygit2.Oid | None,
    ours: pygit2.Oid,
    theirs: pygit2.Oid | None,
) -> pygit2.Oid | None:
    """The tree of merging tree ``theirs`` into tree ``ours`` over ``base`` (None: empty), or None.

    None means "not simple": the caller must run libgit2's full merge.
    """
    mine = {path: (a, b) for path, a, b in file_changes(repo, base, ours)}
    yours = {path: (a, b) for path, a, b in file_changes(repo, base, theirs)}
    # libgit2 pairs a deletion with an addition on the same side as a rename; when both sides
    # touch a common path, such a pair can turn an apparent agreement into a rename/delete or
    # rename/add conflict, so that case is left to libgit2.
    if mine.keys() & yours.keys() and (_may_rename(mine) or _may_rename(yours)):
        return None
    entries: dict[str, tuple[pygit2.Oid, int] | None] = {}
    for path, (before, after) in yours.items():
        if path not in mine:
            entries[path] = after
            continue
        if mine[path][1] == after:
            continue  # both sides made the same change
        merged = _merge_file(repo, path, before, mine[path][1], after)
        if merged is None:
            return None
        entries[path] = merged
    if not entries:
        return ours
    ours_tree = repo[ours]
    assert isinstance(ours_tree, pygit2.Tree)
    try:
        return build_entries(repo, ours_tree, entries)
    except GitpatchError:
        return None  # a file where the other side has a directory, or the reverse
