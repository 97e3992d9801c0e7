"""Carrying a change onto a person's uncommitted work, by 3-way merges of single files.

The person's edits that are not committed stay theirs: they never go into an agent's commit.
Two merges do that, each over one file's blobs:

- ``onto_branch``: the agent edited what it saw on disk (the person's work included); its
  delta, disk -> disk + edit, is merged onto the committed content, so the agent's commit
  holds only the agent's change;
- ``onto_disk``: when a branch moves under a checkout (an auto-mode land, an approval, an
  undo), each changed file the person edited gets committed -> new merged into their disk
  content; the index follows the branch, so ``git status`` still shows their work as theirs.

Where both touched the same lines, ``DirtyWorktree`` names them and nothing changes. A
deletion (or move) of a file with uncommitted changes is refused the same way: the person's
work would go with it. Staged changes of a written path are refused by the preflight.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import pygit2

from gitpatch.checkout.worktree import WorkingTree
from gitpatch.core.model import Changeset, FileChange
from gitpatch.core.spliced import as_bytes
from gitpatch.errors import DirtyWorktree
from gitpatch.store import Store

__all__ = ["clashes", "onto_branch", "onto_disk"]


def onto_branch(
    store: Store, seen: pygit2.Oid, head: pygit2.Oid | None, changeset: Changeset
) -> list[FileChange]:
    """The agent's ``changeset`` (made on ``seen``: head plus the disk content of the files
    the person changed) as changes to ``head``; refuses where it overlaps the person's work."""
    out: list[FileChange] = []
    for change in changeset.changes:
        mine = _person_changed(store, seen, head, change.source or change.path)
        if not mine and not _person_changed(store, seen, head, change.path):
            out.append(change)
            continue
        if change.content is None or change.source is not None:
            what = "moves" if change.content is not None else "deletes"
            path = change.source or change.path
            raise DirtyWorktree(
                f"the change {what} {path}, which has uncommitted changes on disk; they would "
                "be lost with it. Nothing was changed",
                hint=f"Ask the person to commit or stash their work on {path} first, or "
                "leave that file alone.",
                details={"paths": [path]},
            )
        committed = store.read(head, change.path) if head is not None else None
        if committed is None:
            raise DirtyWorktree(
                f"{change.path} is not committed (a new file of the person's): committing the "
                "change would commit their draft with it. Nothing was changed",
                hint=f"Ask the person to commit {change.path} first, or to open gitpatch with "
                "dirty='record' (git config gitpatch.uncommitted record).",
                details={"paths": [change.path]},
            )
        disk = store.read(seen, change.path)
        merged = _merge(
            store, change.path, disk, as_bytes(change.content), committed, person="base"
        )
        out.append(FileChange(change.path, merged, mode=change.mode))
    return out


def _person_changed(store: Store, seen: pygit2.Oid, head: pygit2.Oid | None, path: str) -> bool:
    then = None if head is None else store.entry(head, path)
    now = store.entry(seen, path)
    return (then.oid if then else None) != (now.oid if now else None)


def onto_disk(
    store: Store,
    worktree: WorkingTree,
    old: pygit2.Oid | None,
    new: pygit2.Oid,
    paths: Sequence[str],
    keep: Sequence[pygit2.Oid] = (),
) -> tuple[str, str, str] | None:
    """The carry trees (disk before, disk after, index after) for landing ``old`` -> ``new``
    on ``paths`` in a checkout where some of them hold the person's uncommitted work; None
    when none does. Refuses where the person's lines and the change overlap. A file whose
    disk content is the one at a ``keep`` commit (work recorded under the change, which
    ``new`` holds) simply takes its content at ``new``."""
    local = worktree.modified(str(old) if old is not None else None, paths)
    local = [p for p in local if worktree.modified(str(new), [p])]  # already as new: fine
    recorded = set(local)
    for commit in keep:
        recorded &= set(worktree.modified(str(commit), sorted(recorded)))
    recorded = set(local) - recorded
    if not local or recorded == set(local):
        return None  # nothing of the person's but what the change itself records
    before: list[FileChange] = []
    after: list[FileChange] = []
    for path in local:
        data = worktree.read(path)
        disk = worktree.filters.to_blob(path, data) if data is not None else None
        then = store.read(old, path) if old is not None else None
        now = store.read(new, path)
        if path in recorded:
            before.append(FileChange(path, disk, mode=worktree.disk_mode(path)))
            after.append(FileChange(path, now))
            continue
        if disk is None or now is None:
            who = "the person deleted" if disk is None else "the change deletes"
            raise DirtyWorktree(
                f"{path}: {who} it while the other side changed it; nothing was changed",
                hint=f"Ask the person to commit, stash or restore {path} first.",
                details={"paths": [path]},
            )
        merged = _merge(store, path, then, disk, now, person="ours")
        before.append(FileChange(path, disk, mode=worktree.disk_mode(path)))
        after.append(FileChange(path, merged, mode=worktree.disk_mode(path)))
    disk_before = store.build_tree(old, before)
    disk_after = store.build_tree(new, after)
    index_after = store.tree_of(new)
    return str(disk_before), str(disk_after), str(index_after)


def _merge(
    store: Store,
    path: str,
    base: bytes | None,
    ours: bytes,
    theirs: bytes | None,
    *,
    person: str,
) -> bytes:
    """``ours`` and ``theirs`` merged over ``base``; ``DirtyWorktree`` naming the lines where
    they overlap. ``person`` says which side is the person's work (``base`` or ``ours``)."""
    if theirs is None or base == theirs:
        return ours
    if base == ours:
        return theirs
    merged = store.merge_file(path, base, ours, theirs)
    if merged is not None:
        return merged
    if person == "base":  # the person's work is base -> theirs; the agent's is base -> ours
        spans = clashes(base or b"", theirs, ours)
        where = "your uncommitted edit"
    else:  # the person's work is base -> ours; the change is base -> theirs
        spans = clashes(base or b"", ours, theirs)
        where = "the uncommitted edit"
    lines = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in spans) or "?"
    word = "line" if len(spans) == 1 and spans[0][0] == spans[0][1] else "lines"
    raise DirtyWorktree(
        f"{path}: the change overlaps {where} at {word} {lines} of the file on disk (not "
        "committed); nothing was changed",
        hint="Edit other lines, or ask the person to commit or stash their work on those lines "
        "first.",
        details={"paths": [path], "lines": [list(s) for s in spans]},
    )


def clashes(base: bytes, person: bytes, other: bytes) -> list[tuple[int, int]]:
    """1-based inclusive line ranges of ``person`` whose change from ``base`` overlaps the
    change ``other`` makes to ``base`` (an insertion counts at the line it goes before)."""
    old = base.splitlines(keepends=True)
    theirs = _changed(old, other.splitlines(keepends=True))
    matcher = difflib.SequenceMatcher(None, old, person.splitlines(keepends=True), autojunk=False)
    mine = [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
    # git's merge calls changes a line apart a conflict too, and may align blank lines
    # differently from difflib: widen by one line, and name every change of the person's
    # rather than none
    near = [m for m in mine if any(m[0] - 1 <= b and a <= m[1] + 1 for a, b in theirs)]
    return [(j1 + 1, max(j2, j1 + 1)) for _i1, _i2, j1, j2 in near or mine]


def _changed(old: list[bytes], new: list[bytes]) -> list[tuple[int, int]]:
    """0-based half-open ranges of ``old`` that ``new`` replaces (insertions are empty)."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return [(i1, i2) for tag, i1, i2, _j1, _j2 in matcher.get_opcodes() if tag != "equal"]
