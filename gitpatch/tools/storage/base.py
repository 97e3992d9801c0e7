"""Where the tools read and write: storages and the namespaces that hold them.

A storage offers two capabilities over keys (clean relative POSIX paths, or for a Workspace
``work://`` / ``memory://`` addresses):

- reading: ``read(key)`` (bytes, version and resource id together), ``read_bytes(key)``,
  ``stat(key)``, ``list()``;
- writing: ``apply(proposal, ...)`` runs the pure engine on the storage's current content and,
  only when every edit succeeded, opens its writer, which completes the replacement on success
  and leaves every target as it was on failure.

Storages: ``MemoryStorage`` here (files in a dict, versions are counters), a ``Workspace``
through ``gitpatch.tools.storage.workspace`` (each change is a proposal commit, versions are commit
ids), and ``mounts.MountedFilesystem`` (virtual roots such as ``/workspace`` mapped
onto storages). A namespace turns the path a caller sent into a ``Target`` (which storage,
which key, how texts show it). This module does no policy checks (``gitpatch.tools.policy``) and
formats no texts (``gitpatch.tools``).

Stable resource ids for files in git history (``resource_id``) are here too. A file's id is a
hash of the commit that created it and the path it was created at. Walking back along the
first-parent history from a head, an edit keeps the path, a move (git's rename detection, which
also sees gitpatch's own moves) continues at the old path, and the commit where the path first
appears ends the walk. So edits and moves keep the id, and a file deleted and created again at
the same path gets a new one.

And, since it is where those ids are found for a change, ``applied``, the one builder of the
storage's answer (``Applied``) from the Workspace's ``ProposalResult``, with family keys
(``work://s1/a.md``) for paths on a scratch ref.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import posixpath
import secrets
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Literal, Protocol, runtime_checkable

import pygit2

from gitpatch import engine
from gitpatch.core.model import Changeset, EditReport, Proposal
from gitpatch.core.paths import Address, normalize, parse_address
from gitpatch.core.spliced import as_bytes
from gitpatch.errors import (
    InvalidArguments,
    NotATextResource,
    ResourceConflict,
    ResourceNotFound,
    UnsafePath,
)
from gitpatch.store import Store, file_id
from gitpatch.workspace import blob
from gitpatch.workspace.results import (
    EditResult,
    FileResult,
    ProposalResult,
    file_results,
)

__all__ = [
    "Applied",
    "FileRead",
    "BeforeWrite",
    "MemoryStorage",
    "Namespace",
    "Share",
    "Stat",
    "Storage",
    "Target",
    "Version",
    "applied",
    "resolve_plain",
    "resource_id",
    "uuid_like",
]

Version = str | int


@dataclasses.dataclass(frozen=True)
class Stat:
    """What is at a key: a file (with its size) or a directory."""

    kind: Literal["file", "directory"]
    size: int = 0


@dataclasses.dataclass(frozen=True)
class FileRead:
    """One file's bytes with the version they belong to and the resource's stable id."""

    data: bytes
    version: Version
    id: str


@dataclasses.dataclass(frozen=True)
class Applied:
    """A change a storage applied (or, with ``review``, keeps for a person to approve)."""

    version: Version
    files: tuple[FileResult, ...]
    edits: tuple[EditReport, ...] = ()
    ids: Mapping[str, str] = dataclasses.field(default_factory=dict)
    proposal_id: str | None = None
    branch: str | None = None
    review: bool = False
    target: str | None = None
    #: Every ref the change moved and its new commit, when it moved several (``work://``...).
    versions: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: Where the change is on disk when that is a session's own worktree (auto mode).
    worktree: str | None = None
    #: Files with a person's uncommitted work: recorded in a commit of their own first, or
    #: (``carried``) left uncommitted with the change merged into them.
    recorded: tuple[str, ...] = ()
    carried: tuple[str, ...] = ()
    #: Files with a hand-set skip-worktree bit: committed, but their disk copy stays as it was.
    hidden: tuple[str, ...] = ()
    #: A harness's retry of the tool call that made this change, nothing moved since: the
    #: original change, and nothing changed again.
    replayed: bool = False


#: Called by a storage right before its writer opens; raising there aborts with no change.
BeforeWrite = Callable[[], None]


@runtime_checkable
class Storage(Protocol):
    """The reader and writer capabilities every storage offers (see the module docstring)."""

    def read(self, key: str) -> FileRead:
        """The file's bytes, version and id; ``resource_not_found`` / ``not_a_text_resource``."""
        ...

    def read_bytes(self, key: str) -> bytes:
        """The file's bytes (``read(key).data``)."""
        ...

    def stat(self, key: str) -> Stat | None:
        """What is at ``key``, or None."""
        ...

    def list(self, prefix: str = "") -> list[str]:
        """Every file key below ``prefix`` (all files for ``""``), sorted."""
        ...

    def apply(
        self,
        proposal: Proposal,
        *,
        expected_version: Version | None = None,
        review: bool = False,
        before_write: BeforeWrite | None = None,
    ) -> Applied:
        """Apply ``proposal`` all or nothing; ``review`` keeps it for approval instead."""
        ...


@dataclasses.dataclass(frozen=True)
class Target:
    """A resolved path: the storage, its key there, and the path as texts show it."""

    storage: Storage
    key: str
    shown: str
    address: Address | None = None


class Namespace(Protocol):
    """Resolves the paths callers send, from a working directory, to targets."""

    root: str

    def resolve(self, path: str, cwd: str | None = None) -> Target:
        """The target ``path`` names (relative paths start at ``cwd``, default ``root``)."""
        ...


# -- plain storages ----------------------------------------------------------------------------


def resolve_plain(
    storage: Storage,
    path: str,
    cwd: str | None,
    root: str | None,
    normalizer: Callable[[str], str] | None = None,
) -> Target:
    """Resolve on a plain storage: relative POSIX paths (from ``cwd``) and family addresses.
    ``normalizer``: the storage's own (a Workspace's, which the proposal's paths then need no
    second run of), else ``normalize`` below ``root``."""
    if not isinstance(path, str):
        raise InvalidArguments("path must be a string", hint="Pass the path as a string.")
    address = parse_address(path)
    if address is not None:
        return Target(storage, str(address), str(address), address)
    if not path.strip():
        normalize(path)  # the one "path is empty" error
    if cwd and not path.strip().startswith("/"):
        path = posixpath.join(cwd, path.strip())
    key = normalizer(path) if normalizer is not None else normalize(path, root)
    return Target(storage, key, key)


class MemoryStorage:
    """Files kept in memory, for embedding and tests; versions are counters.

    ``MemoryStorage({"notes.txt": "hello\\n", "logo.png": b"..."})``. Every change takes the next
    number of one counter as the version of each file it touches; a file's id is kept across
    edits and moves and is new when a file is created again at a deleted path.
    """

    root = ""

    def __init__(self, files: Mapping[str, str | bytes] | None = None) -> None:
        self._files: dict[str, bytes] = {}
        self._meta: dict[str, tuple[str, int]] = {}
        self._owner: dict[int, dict[str, str]] = {}
        self._counter = itertools.count(1)
        self._last = 0
        self._pending_gone: dict[str, str] = {}
        self._lock = threading.RLock()
        with self.writer() as staged:
            for key, data in (files or {}).items():
                staged[normalize(key)] = data.encode("utf-8") if isinstance(data, str) else data

    # -- reading -------------------------------------------------------------------------------

    def read_bytes(self, path: str) -> bytes:
        """The bytes of the file at ``path``."""
        return self.read(path).data

    def read(self, key: str) -> FileRead:
        """See ``Storage.read``."""
        with self._lock:
            if key not in self._files:
                self._refuse_directory(key)
                raise ResourceNotFound(
                    f"{key}: no such file",
                    hint="Check the path; list the files to see what exists.",
                    details={"path": key},
                )
            ident, version = self._meta[key]
            return FileRead(self._files[key], version, ident)

    def stat(self, key: str) -> Stat | None:
        """See ``Storage.stat``."""
        with self._lock:
            if key in self._files:
                return Stat("file", len(self._files[key]))
            return Stat("directory") if self._is_directory(key) else None

    def list(self, prefix: str = "") -> list[str]:
        """See ``Storage.list``."""
        with self._lock:
            base = prefix.rstrip("/") + "/" if prefix else ""
            return sorted(k for k in self._files if k.startswith(base))

    def resolve(self, path: str, cwd: str | None = None) -> Target:
        """Relative POSIX paths only (see ``Namespace``)."""
        return resolve_plain(self, path, cwd, None)

    # -- writing -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def writer(self) -> Iterator[dict[str, bytes | None]]:
        """Stage ``{key: bytes, or None to delete}``; all of it lands when the block exits
        normally, none of it when it raises."""
        staged: dict[str, bytes | None] = {}
        yield staged
        with self._lock:
            self._commit(staged)

    def apply(
        self,
        proposal: Proposal,
        *,
        expected_version: Version | None = None,
        review: bool = False,
        before_write: BeforeWrite | None = None,
    ) -> Applied:
        """See ``Storage.apply``; ``review`` is refused (nothing here can hold a proposal)."""
        if review:
            raise InvalidArguments(
                "a memory storage cannot keep a change for review",
                hint="Use a Workspace to keep changes for a person's approval.",
            )
        with self._lock:
            for key in proposal.paths:
                self._refuse_family(key)
                if key not in self._files:
                    self._refuse_directory(key)
            if expected_version is not None:
                self._check_version(proposal.paths[0], expected_version)
            changeset = engine.apply(proposal, _Snapshot(self._files))
            if before_write is not None:
                before_write()
            existed = set(self._files)
            moves = {c.path: c.source for c in changeset.changes if c.source is not None}
            with self.writer() as staged:
                for change in changeset.changes:
                    if change.source is not None:
                        staged.setdefault(change.source, None)
                    staged[change.path] = (
                        None if change.content is None else as_bytes(change.content)
                    )
            version = self._last
            self._link_moves(moves)
            return Applied(
                version=version,
                files=tuple(file_results(changeset, existed.__contains__)),
                edits=changeset.report,
                ids=self._ids(changeset),
            )

    # -- internals -----------------------------------------------------------------------------

    def _commit(self, staged: Mapping[str, bytes | None]) -> None:
        self._last = version = next(self._counter)
        gone = {k: self._meta[k][0] for k, v in staged.items() if v is None and k in self._meta}
        for key, data in staged.items():
            if data is None:
                self._files.pop(key, None)
                self._meta.pop(key, None)
                continue
            old = self._meta.get(key)
            self._files[key] = bytes(data)
            self._meta[key] = (old[0] if old else secrets.token_hex(8), version)
        self._owner[version] = {k: m[0] for k, m in self._meta.items() if k in staged}
        self._pending_gone = gone

    def _link_moves(self, moves: Mapping[str, str]) -> None:
        """A moved file keeps the id its source had."""
        for dest, source in moves.items():
            ident = self._pending_gone.get(source)
            if ident is not None and dest in self._meta:
                self._meta[dest] = (ident, self._meta[dest][1])
                self._owner[self._meta[dest][1]][dest] = ident

    def _ids(self, changeset: Changeset) -> dict[str, str]:
        return {c.path: self._meta[c.path][0] for c in changeset.changes if c.path in self._meta}

    def _check_version(self, key: str, expected: Version) -> None:
        try:
            wanted = int(str(expected).strip())
        except ValueError:
            raise InvalidArguments(
                f"expected_version {expected!r} is not a version of this storage",
                hint="Pass the integer version your last read or edit returned.",
                details={"expected_version": expected},
            ) from None
        current = self._meta.get(key)
        if current is None:
            return  # the engine reports the missing file
        owner = self._owner.get(wanted, {}).get(key)
        if owner is not None and owner != current[0]:
            raise ResourceNotFound(
                f"{key} was deleted since version {wanted} and a new file was created there",
                hint="The file you read no longer exists; read the current file first.",
                details={"path": key, "version": wanted},
            )
        if wanted != current[1]:
            raise ResourceConflict(
                f"{key} changed since version {wanted}: it is now at version {current[1]}",
                hint="Read the file again and redo the edit on its current content, passing the "
                "new version as expected_version.",
                details={"path": key, "expected_version": wanted, "current_version": current[1]},
            )

    def _is_directory(self, key: str) -> bool:
        return any(k.startswith(key.rstrip("/") + "/") for k in self._files)

    def _refuse_directory(self, key: str) -> None:
        if self._is_directory(key):
            raise NotATextResource(
                f"{key} is a directory, not a file",
                hint="Name a file inside the directory.",
                details={"path": key},
            )

    @staticmethod
    def _refuse_family(key: str) -> None:
        if "://" in key:
            raise UnsafePath(
                f"{key}: a memory storage has no work:// or memory:// addresses",
                hint="Use a relative path.",
                details={"path": key},
            )


class _Snapshot(Mapping[str, bytes]):
    """A read-only view of a MemoryStorage's files for the engine."""

    def __init__(self, files: Mapping[str, bytes]) -> None:
        self._files = files

    def __getitem__(self, key: str) -> bytes:
        return self._files[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)


# -- stable resource ids ------------------------------------------------------------------------


def _moved_from(
    store: Store, parent: pygit2.Commit, commit: pygit2.Commit, path: str
) -> str | None:
    # Only a path this commit deletes can be where ``path`` moved from. Looking for one first
    # costs what the commit changed; libgit2's tree diff (for its rename detection) walks every
    # entry of both trees (27 ms on a 20,000-file tree for a commit that adds one file).
    changed = store.changed_paths(parent.id, commit.id)
    gone = [p for p in changed if file_id(commit.tree, p) is None]
    if not any(file_id(parent.tree, p) is not None for p in gone):
        return None
    diff = parent.tree.diff_to_tree(commit.tree)
    diff.find_similar()
    for delta in diff.deltas:
        if delta.status == pygit2.enums.DeltaStatus.RENAMED and delta.new_file.path == path:
            return str(delta.old_file.path)
    return None


def uuid_like(text: str) -> str:
    """A UUID-shaped digest of ``text``."""
    d = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return f"{d[:8]}-{d[8:12]}-{d[12:16]}-{d[16:20]}-{d[20:32]}"


#: (commit hex, path) -> id, for commits already walked; bounded, cleared when full.
_KNOWN: dict[tuple[str, str], str] = {}
_KNOWN_LIMIT = 100_000
_KNOWN_LOCK = threading.Lock()


def resource_id(store: Store, head: pygit2.Oid | None, path: str) -> str | None:
    """The stable id of the file at ``path`` on ``head``: a hash of the commit that created it
    and the path it was created at, following moves (git's rename detection) back along the
    first-parent history (at most ``store.HISTORY_DEPTH`` commits). Every (commit, path) the
    walk passes is remembered, so the next edit's lookup stops at its parent (``_known``)."""
    if head is None or blob(store, head, path) is None:
        return None
    known = _known(store, head, path)
    if known is not None:
        return known
    seen: list[tuple[str, str]] = []
    found: str | None = None
    origin = head
    for commit in store.first_parents(head):
        origin = commit.id
        with _KNOWN_LOCK:
            found = _KNOWN.get((str(commit.id), path))
        if found is not None:
            break
        seen.append((str(commit.id), path))
        if not commit.parents:
            break
        parent = commit.parents[0]
        if file_id(parent.tree, path) is not None:
            continue
        source = _moved_from(store, parent, commit, path)
        if source is None:
            break
        path = source
    ident = found or uuid_like(f"{origin}\0{path}")
    _remember(seen, ident)
    return ident


def _known(store: Store, head: pygit2.Oid, path: str) -> str | None:
    """The id ``resource_id`` finds without walking the history: ``head`` already walked, or
    its first parent, holding a file at the same ``path``, already walked (an edit after an
    edit): the walk would stop there. None when the walk has to run."""
    with _KNOWN_LOCK:
        found = _KNOWN.get((str(head), path))
    if found is not None:
        return found
    parents = store.info(head).parents
    if not parents or blob(store, parents[0], path) is None:
        return None
    with _KNOWN_LOCK:
        found = _KNOWN.get((str(parents[0]), path))
    if found is not None:
        _remember([(str(head), path)], found)
    return found


def _remember(seen: list[tuple[str, str]], ident: str) -> None:
    with _KNOWN_LOCK:
        if len(_KNOWN) + len(seen) > _KNOWN_LIMIT:
            _KNOWN.clear()
        _KNOWN.update(dict.fromkeys(seen, ident))


# -- the storage's answer for a change ----------------------------------------------------------


def key(path: str, root: Address | None) -> str:
    """A path on ``root``'s ref as the storage key (``work://s1/path``)."""
    return path if root is None else f"{root.family}://{root.root}/{path}"


def _rename(f: FileResult, root: Address | None) -> FileResult:
    """A file result with its paths as storage keys."""
    moved = None if f.moved_from is None else key(f.moved_from, root)
    return FileResult(path=key(f.path, root), action=f.action, moved_from=moved)


def _edit_report(e: EditResult, root: Address | None) -> EditReport:
    """An edit result with its path as a storage key."""
    return EditReport(key(e.path, root), e.index, e.start_line, e.end_line, e.level)


#: One ref's share of a change: the store holding it, its result, its family root (or None).
Share = tuple["Store", ProposalResult, Address | None]


def applied(shares: Sequence[Share]) -> Applied:
    """The storage's answer for a change, from each ref's ``ProposalResult`` (the one place
    resource ids are found for it): paths as storage keys, and with several refs, every
    ref's new commit; the ordinary ref's share (else the only one) names the change."""
    files: list[FileResult] = []
    edits: list[EditReport] = []
    ids: dict[str, str] = {}
    for store, result, root in shares:
        commit = pygit2.Oid(hex=result.version)
        for f in result.files:
            files.append(_rename(f, root))
            ident = resource_id(store, commit, f.path) if f.action != "delete" else None
            if ident is not None:
                ids[key(f.path, root)] = ident
        edits += [_edit_report(e, root) for e in result.edits]
    _store, main, root = next((s for s in shares if s[2] is None), shares[0])
    named = root is None or len(shares) == 1
    return Applied(
        version=main.version,
        files=tuple(files),
        edits=tuple(edits),
        ids=ids,
        proposal_id=main.proposal_id,
        branch=main.branch if named else None,
        review=main.mode == "review",
        target=main.target if named else None,
        versions={r.branch: r.version for _s, r, _root in shares} if len(shares) > 1 else {},
        # the session's own worktree, and the person's uncommitted work recorded or carried
        worktree=main.worktree or None,
        recorded=tuple(key(p, root) for p in main.recorded),
        carried=tuple(key(p, root) for p in main.carried),
        hidden=tuple(key(p, root) for p in main.hidden),
    )
