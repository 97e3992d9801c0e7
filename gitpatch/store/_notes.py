"""Proposal status as JSON notes on ``refs/notes/gitpatch``, changed by compare-and-swap.

The notes ref is an ordinary commit chain whose tree maps an annotated commit's hex id to a blob,
which is exactly what ``git notes --ref gitpatch show <commit>`` reads. gitpatch writes that
commit itself (one ``TreeBuilder`` per changed directory) in ``notes_update``, the one place
that writes notes: ``update_note`` moves the ref to it alone by CAS (when another writer wins,
the note is re-read and the change re-applied, a bounded number of times), while the workspace
and review move it in the same ref transaction as the branch or proposal it describes. Notes
written by git with a fan-out (``ab/cdef...``) are found and updated in place.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import pygit2

from gitpatch.core.model import FileChange
from gitpatch.core.retry import lost_race, retry
from gitpatch.errors import ConcurrentUpdate, InvalidArguments
from gitpatch.store._objects import MODE_TREE, Objects
from gitpatch.store._refs import Refs, RefUpdate
from gitpatch.store._repo import git_errors

__all__ = [
    "Notes",
    "NOTES_REF",
    "NOTE_RETRIES",
    "decode",
    "encode",
    "note_path",
    "notes_update",
]

NOTES_REF = "refs/notes/gitpatch"
#: How many lost compare-and-swaps ``update_note`` absorbs before raising ``ConcurrentUpdate``.
NOTE_RETRIES = 200
#: Root entries from which new notes are fanned out as ``ab/cdef...`` (git fans out at a few
#: hundred notes too; readers, git's and ours, accept any mix of layouts).
FANOUT_AT = 256

T = TypeVar("T")

NoteChange = Callable[[dict[str, Any] | None], dict[str, Any]]


def encode(note: dict[str, Any]) -> bytes:
    """The bytes stored for a note: sorted, indented JSON ending with a newline."""
    if not isinstance(note, dict):
        raise InvalidArguments(
            f"a gitpatch note must be a JSON object, got {type(note).__name__}",
            hint="Return a dict from the change function.",
        )
    try:
        return (json.dumps(note, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode()
    except (TypeError, ValueError) as exc:
        raise InvalidArguments(
            f"a gitpatch note must be JSON-serializable: {exc}",
            hint="Use only str, int, float, bool, None, lists and dicts in notes.",
        ) from exc


def decode(data: bytes) -> dict[str, Any]:
    """A note's content as a dict; text that is not a JSON object comes back as ``{"text": ...}``.

    People can write notes on this ref with plain ``git notes``, so non-JSON text is kept, not
    rejected.
    """
    text = data.decode("utf-8", errors="replace")
    try:
        value = json.loads(text)
    except ValueError:
        return {"text": text}
    return value if isinstance(value, dict) else {"text": text}


def note_path(store: Notes, tip: pygit2.Oid | None, commit: pygit2.Oid) -> tuple[str, bool]:
    """Where the note for ``commit`` is (or goes) in the notes tree at ``tip``; True if it exists.

    An existing note is found at any fan-out git uses. A new one goes at the root while the root
    is small and flat, and under ``ab/cdef...`` once it is large or fanned out, as git itself
    does: every note update rewrites the trees on the note's path, so a flat tree of thousands
    of notes would make each update cost (and store) the whole list again.
    """
    hexid = str(commit)
    if tip is None:
        return hexid, False
    with git_errors(f"read notes at {NOTES_REF}"):
        root = store.repo[tip].peel(pygit2.Tree)
        for path in (hexid, _fanned(hexid), f"{hexid[:2]}/{hexid[2:4]}/{hexid[4:]}"):
            try:
                root[path]
            except KeyError:
                continue
            return path, True
        return (_fanned(hexid) if _fanned_out(root) else hexid), False


def _fanned(name: str) -> str:
    return f"{name[:2]}/{name[2:]}"


def _is_dir(entry: pygit2.Object) -> bool:
    return entry.filemode == MODE_TREE


def _fanned_out(root: pygit2.Tree) -> bool:
    """Whether new notes go under ``ab/`` in ``root``: once it is large, or when it already is
    fanned out (every flat note is moved down at once, so a directory at either end of the
    sorted root shows it)."""
    size = len(root)
    return size >= FANOUT_AT or (size > 0 and (_is_dir(root[0]) or _is_dir(root[size - 1])))


def _needs_spreading(root: pygit2.Tree) -> bool:
    """Whether ``root`` still holds flat notes it is too large for: more entries than a fanned
    out root can have (256 directories), or ``FANOUT_AT`` entries that are not all directories.
    """
    size = len(root)
    if size > FANOUT_AT:
        return True
    return size == FANOUT_AT and not (_is_dir(root[0]) and _is_dir(root[size - 1]))


def _spread(root: pygit2.Tree, files: list[FileChange]) -> list[FileChange]:
    """``files`` plus moving every flat note of ``root`` to ``ab/cdef...`` in the same commit.

    Done once when the root outgrows ``FANOUT_AT``: afterwards the root holds at most 256
    directories, so what one note update rewrites stops growing with the number of notes
    (a flat root of N notes costs O(N) to parse and write on every proposal).
    """
    writing = {f.path for f in files}
    out = [
        FileChange(_fanned(f.path), f.content, source=f.path) if _flat_note(root, f.path) else f
        for f in files
    ]
    for entry in root:
        name = entry.name or ""
        if name not in writing and _flat_note(root, name):
            out.append(FileChange(_fanned(name), None, source=name))
    return out


def _flat_note(root: pygit2.Tree, name: str) -> bool:
    """A note file at the root (40 hex digits, a blob) whose fanned-out place is free."""
    if len(name) != 40 or name.strip("0123456789abcdef"):
        return False
    try:
        if _is_dir(root[name]):
            return False
        root[_fanned(name)]
    except KeyError:
        return True
    return False


def _note_at(
    store: Notes, tip: pygit2.Oid | None, commit: pygit2.Oid
) -> tuple[str, dict[str, Any] | None]:
    """Where ``commit``'s note is (or goes) in the notes tree at ``tip``, and the note or None."""
    path, found = note_path(store, tip, commit)
    data = store.read(tip, path) if found and tip is not None else None
    return path, None if data is None else decode(data)


def _read_note(store: Notes, commit: pygit2.Oid) -> dict[str, Any] | None:
    """The note attached to ``commit`` on ``NOTES_REF``, or None."""
    return _note_at(store, store.ref_target(NOTES_REF), commit)[1]


def notes_update(
    store: Notes, changes: Mapping[pygit2.Oid, NoteChange]
) -> tuple[RefUpdate, dict[pygit2.Oid, dict[str, Any]]]:
    """A new notes commit applying ``changes`` (commit -> ``change(old or None) -> new``) to the
    current notes tip, as a ``(NOTES_REF, new, tip)`` compare-and-swap for the caller to make,
    alone or in one transaction with other refs; and the new notes. Nothing moves here.
    """
    tip = store.ref_target(NOTES_REF)
    files: list[FileChange] = []
    written: dict[pygit2.Oid, dict[str, Any]] = {}
    for commit, change in changes.items():
        path, old = _note_at(store, tip, commit)
        written[commit] = change(old)
        files.append(FileChange(path, encode(written[commit])))
    if tip is not None:
        with git_errors(f"read notes at {NOTES_REF}"):
            root = store.repo[tip].peel(pygit2.Tree)
            if _needs_spreading(root):
                files = _spread(root, files)
    tree = store.build_tree(tip, files)
    new = store.commit(tree, [tip] if tip is not None else [], "Notes added by gitpatch")
    return (NOTES_REF, new, tip), written


def _update_note(store: Notes, commit: pygit2.Oid, change: NoteChange) -> dict[str, Any]:
    """Read-modify-write the note of ``commit``: ``change(old or None) -> new``; returns new.

    ``change`` may run several times (once per lost compare-and-swap), so it must be pure.
    """
    with git_errors(f"look up commit {commit}"):
        store.repo[commit]

    def attempt() -> tuple[RefUpdate, dict[str, Any]]:
        update, written = notes_update(store, {commit: change})
        return update, written[commit]

    note = _swap(store, commit, "update", attempt)
    assert note is not None
    return note


def _remove_note(store: Notes, commit: pygit2.Oid) -> bool:
    """Remove the note of ``commit`` by CAS on ``NOTES_REF``; False when there was none."""

    def attempt() -> tuple[RefUpdate, bool] | None:
        tip = store.ref_target(NOTES_REF)
        path, found = note_path(store, tip, commit)
        if tip is None or not found:
            return None
        tree = store.build_tree(tip, [FileChange(path, None)])
        return (NOTES_REF, store.commit(tree, [tip], "Notes removed by gitpatch"), tip), True

    return _swap(store, commit, "remove", attempt) is not None


def _swap(
    store: Notes, commit: pygit2.Oid, verb: str, attempt: Callable[[], tuple[RefUpdate, T] | None]
) -> T | None:
    """Move ``NOTES_REF`` to what ``attempt()`` built, rebuilding after each lost CAS.

    ``attempt`` returns the ``(ref, new, old)`` update and a value to hand back, or None when
    there is nothing to do.
    """

    def once() -> T | None:
        built = attempt()
        if built is None:
            return None
        (_ref, new, tip), value = built
        store.update_ref(NOTES_REF, new, tip, f"gitpatch: {verb} the note on {commit}")
        return value

    return retry(
        once,
        attempts=NOTE_RETRIES,
        catch=ConcurrentUpdate,
        when=lost_race,
        exhausted=lambda _exc: ConcurrentUpdate(
            f"could not {verb} the note of {commit} on {NOTES_REF}: other writers won "
            f"{NOTE_RETRIES} times in a row",
            hint="The notes ref is very busy; retry the call.",
            details={"ref": NOTES_REF, "commit": str(commit)},
            reason="changed",
        ),
    )


def _walk(
    repo: pygit2.Repository, tree: pygit2.Tree, prefix: str
) -> Iterator[tuple[pygit2.Oid, dict[str, Any]]]:
    for entry in tree:
        name = prefix + (entry.name or "")
        if entry.filemode == MODE_TREE:
            sub = repo[entry.id]
            assert isinstance(sub, pygit2.Tree)
            yield from _walk(repo, sub, name)
        elif len(name) == 40:
            try:
                annotated = pygit2.Oid(hex=name)
            except ValueError:
                continue  # not a note: notes trees may hold other files
            blob = repo[entry.id]
            assert isinstance(blob, pygit2.Blob)
            yield annotated, decode(blob.data)


def _iter_notes(store: Notes) -> Iterator[tuple[pygit2.Oid, dict[str, Any]]]:
    """Every (annotated commit id, note) on ``NOTES_REF``, in tree order."""
    tip = store.ref_target(NOTES_REF)
    if tip is None:
        return
    with git_errors(f"read notes at {NOTES_REF}"):
        tree = store.repo[tip].peel(pygit2.Tree)
        yield from _walk(store.repo, tree, "")


class Notes(Objects, Refs):
    """Proposal status in JSON notes on ``NOTES_REF``: the part of ``Store`` for notes."""

    def read_note(self, commit: pygit2.Oid) -> dict[str, Any] | None:
        """The JSON note of ``commit`` on ``refs/notes/gitpatch``, or None."""
        return _read_note(self, commit)

    def update_note(
        self, commit: pygit2.Oid, change: Callable[[dict[str, Any] | None], dict[str, Any]]
    ) -> dict[str, Any]:
        """Read-modify-write the note of ``commit`` by CAS; ``change`` may run more than once."""
        return _update_note(self, commit, change)

    def remove_note(self, commit: pygit2.Oid) -> bool:
        """Remove the note of ``commit`` by CAS; False when it had none."""
        return _remove_note(self, commit)

    def iter_notes(self) -> Iterator[tuple[pygit2.Oid, dict[str, Any]]]:
        """Every (commit id, note) on ``refs/notes/gitpatch``."""
        return _iter_notes(self)
