"""Spaces: one bare repository per user or team under the data directory.

``users/<user>.git`` and ``teams/<team>.git`` are created on the first write (made in a
temporary directory and renamed into place, so two processes racing to create one both end up
using the same repository). A resource is a path on the space's ``main``.

``SpaceStorage`` is the space seen as a ``tools.storage.base.Storage``: it speaks the spec's
integer versions (``main``'s first-parent generation number: 1 for the first commit, +1 per
commit, each naming exactly one commit) and enforces the space's size limits before anything
is written. An auto space's changes are committed by ``gitpatch.doors.hosted.direct`` (one
commit each, no note, in batches), keeping the Workspace's rules for them (path checks,
rejected changes, compare-and-swap on the ref); every other call goes to the space's
``Workspace`` (through ``WorkspaceStorage``), so the approval gate, review branches and notes
hold here too. This module does not decide who may use a space
(``gitpatch.doors.hosted.access``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import itertools
import os
import secrets
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pygit2

from gitpatch.core.model import Changeset, Proposal
from gitpatch.core.paths import parse_address
from gitpatch.doors.hosted.direct import Change, Made, WriteQueue, build_change, preview_on
from gitpatch.doors.hosted.generations import Generations
from gitpatch.doors.hosted.limits import SpacesConfig, SpaceSettings
from gitpatch.errors import (
    GitpatchError,
    InvalidArguments,
    PayloadTooLarge,
    ResourceConflict,
    ResourceNotFound,
    StorageLimitReached,
)
from gitpatch.porcelain.workspace import Workspace
from gitpatch.store import Store
from gitpatch.tools.storage.base import (
    Applied,
    BeforeWrite,
    FileRead,
    Stat,
    Target,
    Version,
    resolve_plain,
)
from gitpatch.tools.storage.workspace import WorkspaceStorage
from gitpatch.workspace import blob, check_unchanged, preview

__all__ = ["BRANCH", "Space", "SpaceStorage", "Spaces", "check_path_limits", "disk_bytes"]

#: The branch that holds a space's resources.
BRANCH = "refs/heads/main"
#: Who the service's commits name as author (the caller is in the notes' tool facts).
AUTHOR = "gitpatch service <gitpatch@localhost>"


def disk_bytes(path: Path) -> int:
    """Bytes of every file under ``path`` (what a repository takes on disk). Files and
    directories that go away meanwhile (``git gc`` running next to it) are skipped."""
    total = 0
    for folder, _dirs, files in os.walk(path):  # os.walk ignores vanished directories
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total


class Space:
    """One space: its bare repository, Workspace, versions and storage view."""

    def __init__(self, name: str, path: Path, config: SpacesConfig) -> None:
        self.name = name
        self.path = path
        self._head_file = os.path.join(path, "HEAD")  # os.path on a str: no Path objects
        self._seen = False
        self.config = config
        self._lock = threading.Lock()
        self._writing = threading.Lock()
        #: What the repository takes on disk (bytes), as last measured (``maintenance``), plus
        #: what changes wrote since (``count_written``); None until first measured.
        self.disk_used: int | None = None
        self._disk = threading.Lock()
        self._written = 0  # bytes changes wrote since the start (``count_written``)
        self._ws: Workspace | None = None
        self._generations: Generations | None = None
        self.storage = SpaceStorage(self)
        #: An auto space's changes, committed in batches (``direct``).
        self.queue = WriteQueue(lambda: self.workspace().plumbing.store, BRANCH, self.writing)

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Held while a space's change (or batch of changes, ``direct.WriteQueue``) is
        written: the writes of a space queue here, in this process (a lock) and across
        processes (an exclusive ``flock`` on the repository directory, which packing takes
        too: ``git gc`` removes the empty object directories a writer is about to fill),
        instead of racing on the branch and throwing work away. The compare-and-swap on
        ``main`` still guards against every other writer."""
        with self._writing, self._flock(fcntl.LOCK_EX):
            yield

    @contextlib.contextmanager
    def packing(self) -> Iterator[None]:
        """Exclusive against every writer of the space, in any process (see ``writing``)."""
        with self._writing, self._flock(fcntl.LOCK_EX):
            yield

    @contextlib.contextmanager
    def _flock(self, mode: int) -> Iterator[None]:
        if not self.exists():  # nothing to pack yet: the first write creates the repository
            yield
            return
        fd = os.open(self.path, os.O_RDONLY)  # the repository directory itself: no file made
        try:
            fcntl.flock(fd, mode)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    @property
    def settings(self) -> SpaceSettings:
        """This space's limits and mode (re-read when spaces.toml changes)."""
        return self.config.settings(self.name)

    def measure(self) -> None:
        """Measure what the repository takes on disk again. What changes write during the
        walk is counted on top (what it also saw then counts twice until the next measure: a
        few KB over, never under)."""
        with self._disk:
            before = self._written
        measured = disk_bytes(self.path)
        with self._disk:
            self.disk_used = measured + self._written - before

    def count_written(self, written: int) -> None:
        """Count ``written`` bytes a change added, until the next ``measure``."""
        with self._disk:
            self._written += written
            if self.disk_used is not None:
                self.disk_used += written

    def exists(self) -> bool:
        """True once the space's repository was created (a space is never deleted under a
        running service: once seen, it is not looked for again)."""
        if not self._seen:
            self._seen = os.path.isfile(self._head_file)
        return self._seen

    def create(self) -> None:
        """Create the bare repository if it does not exist (safe against racing creators)."""
        if self.exists():
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}.tmp")
        Store.init_bare(tmp, BRANCH.removeprefix("refs/heads/"))
        try:
            tmp.rename(self.path)
        except OSError:
            if not self.exists():
                raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def workspace(self) -> Workspace:
        """The Workspace over the space's ``main`` in the configured mode (reopened when the
        mode changes)."""
        mode = self.settings.mode
        with self._lock:
            if self._ws is None or self._ws.mode != mode:
                protected = ["main"] if mode == "review" else []
                self._ws = Workspace.open(
                    self.path, mode, BRANCH, protected=protected, author=AUTHOR
                )
                self._generations = Generations(self._ws.plumbing.store, self.path)
            return self._ws

    @property
    def generations(self) -> Generations:
        """Commit <-> integer version for this space."""
        self.workspace()
        assert self._generations is not None
        return self._generations

    def head(self) -> pygit2.Oid | None:
        """The commit ``main`` points at (None for an empty or missing space)."""
        if not self.exists():
            return None
        return self.workspace().plumbing.store.ref_target(BRANCH)


#: A path component may have at most this many bytes (UTF-8): the limit of ext4, XFS, APFS...
MAX_COMPONENT_BYTES = 255
#: A resource path may have at most this many bytes and levels, so a clone of the space
#: checks out everywhere and no walk over it runs deep.
MAX_PATH_BYTES = 1024
MAX_PATH_DEPTH = 64


def check_path_limits(target: Target) -> Target:
    """``target`` when its path is within the limits above; ``invalid_arguments`` otherwise."""
    key = target.key
    parts = key.split("/")
    longest = max(parts, key=lambda part: len(part.encode("utf-8", "surrogatepass")))
    size = len(key.encode("utf-8", "surrogatepass"))
    problem = None
    if size > MAX_PATH_BYTES:
        problem = f"is {size} bytes long, over the limit of {MAX_PATH_BYTES}"
    elif len(parts) > MAX_PATH_DEPTH:
        problem = f"has {len(parts)} levels, over the limit of {MAX_PATH_DEPTH}"
    elif len(longest.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES:
        problem = f"has a name over {MAX_COMPONENT_BYTES} bytes ({longest[:40]}...)"
    if problem is not None:
        raise InvalidArguments(
            f"path {key[:80]}{'...' if len(key) > 80 else ''} {problem}",
            hint=f"Use shorter paths: at most {MAX_COMPONENT_BYTES} bytes per name, "
            f"{MAX_PATH_BYTES} bytes and {MAX_PATH_DEPTH} levels in all.",
            details={"limit_bytes": MAX_PATH_BYTES, "limit_component_bytes": MAX_COMPONENT_BYTES},
        )
    return target


class SpaceStorage:
    """A space as a ``Storage`` with integer versions and size limits (module docstring)."""

    root = ""

    def __init__(self, space: Space) -> None:
        self.space = space
        self._sizes: dict[pygit2.Oid, int] = {}

    def _inner(self) -> WorkspaceStorage:
        return WorkspaceStorage.of(self.space.workspace())

    def resolve(self, path: str, cwd: str | None = None) -> Target:
        """Relative POSIX paths only (see ``gitpatch.tools.storage.base.Namespace``), within
        ``check_path_limits``."""
        return check_path_limits(resolve_plain(self, path, None, None))

    # -- reading -----------------------------------------------------------------------------

    def _missing(self, key: str) -> ResourceNotFound:
        return ResourceNotFound(
            f"{key}: no such resource in this space",
            hint="Check the path; list_resources shows what exists.",
            details={"path": key},
        )

    def read(self, key: str) -> FileRead:
        """The resource's bytes, its integer version (the space's) and id."""
        if not self.space.exists():
            raise self._missing(key)
        found = self._inner().read(key)
        version = self.space.generations.of(pygit2.Oid(hex=str(found.version)))
        return FileRead(found.data, version, found.id)

    def read_bytes(self, key: str) -> bytes:
        """The resource's bytes (``read(key).data``)."""
        return self.read(key).data

    def stat(self, key: str) -> Stat | None:
        """What is at ``key`` on ``main``, or None."""
        return self._inner().stat(key) if self.space.exists() else None

    def list(self, prefix: str = "") -> list[str]:
        """Every resource path below ``prefix``."""
        return self._inner().list(prefix) if self.space.exists() else []

    def version(self) -> int:
        """The space's current version (0 when it holds nothing yet)."""
        return self.space.generations.of(self.space.head()) if self.space.exists() else 0

    def commit_of(self, version: int) -> str | None:
        """The commit id of ``version`` on ``main``."""
        found = self.space.generations.commit_at(self.space.head(), version)
        return None if found is None else str(found)

    # -- writing -----------------------------------------------------------------------------

    def apply(
        self,
        proposal: Proposal,
        *,
        expected_version: Version | None = None,
        review: bool = False,
        before_write: BeforeWrite | None = None,
    ) -> Applied:
        """Check the limits, then apply; versions are integers. A space is created only for
        a change that passed every check. In an auto space a change is one commit on
        ``main`` (``direct``: no note), committed with the changes queued with it; a review,
        a revision or a change a person rejected goes through the Workspace. Either way the
        writes of a space queue (``Space.writing``)."""
        if not self.space.exists():
            with self.space.writing():
                if not self.space.exists():
                    self._check_limits(None, None, preview(None, proposal).changeset)
                    self.space.create()
        ws = self.space.workspace()
        direct = ws.mode == "auto" and not review and proposal.revises is None
        if not direct or any(parse_address(p) is not None for p in proposal.paths):
            with self.space.writing():
                return self._through_workspace(ws, proposal, expected_version, review, before_write)
        wrote = [before_write is None]
        reference: list[pygit2.Oid] = []

        def build(
            head: pygit2.Oid | None, moved: tuple[pygit2.Oid | None, ...] | None
        ) -> Made | None:
            try:
                if moved is not None:  # another writer moved main: did it touch these paths?
                    check_unchanged(
                        ws.plumbing.store,
                        moved[0],
                        moved[1],
                        proposal.paths,
                        since_version=True,
                        branch=BRANCH,
                    )
                # the spec's order: a stale version first, then the edit, then the limits
                if expected_version is not None:
                    if not reference:  # the commit of that version, found once
                        reference.append(
                            pygit2.Oid(hex=str(self._expected(head, expected_version)))
                        )
                    self._check_unchanged(ws.plumbing.store, head, reference[0], proposal)
                changes = preview_on(ws, head, proposal)
                written, size = self._check_limits(ws, head, changes)
                if not wrote[0] and before_write is not None:
                    before_write()
                    wrote[0] = True
                made = build_change(ws, head, changes, proposal, written)
                if made is not None:  # the next change's limits start from its size
                    self._remember_size(made.commit, size)
                return made
            except (ResourceConflict, ResourceNotFound) as exc:
                raise self._in_versions(exc, expected_version) from exc

        made = self.space.queue.submit(Change(build))
        if made is not None:
            return self._numbered(made.applied(ws), made.written)
        with self.space.writing():  # a change a person rejected: refused with the reasons
            return self._through_workspace(ws, proposal, expected_version, review, None)

    def _through_workspace(
        self,
        ws: Workspace,
        proposal: Proposal,
        expected_version: Version | None,
        review: bool,
        before_write: BeforeWrite | None,
    ) -> Applied:
        """The change through the Workspace (its propose loop, note included)."""
        head = ws.plumbing.store.ref_target(BRANCH)
        # the spec's order: a stale version first, then the edit itself, then the limits
        expected = self._expected(head, expected_version)
        if expected_version is not None and expected is not None:
            self._check_unchanged(ws.plumbing.store, head, pygit2.Oid(hex=expected), proposal)
        written, _size = self._check_limits(ws, head, ws.plumbing.preview(proposal).changeset)
        try:
            applied = self._inner().apply(
                proposal, expected_version=expected, review=review, before_write=before_write
            )
        except (ResourceConflict, ResourceNotFound) as exc:
            raise self._in_versions(exc, expected_version) from exc
        return self._numbered(applied, written)

    def _numbered(self, applied: Applied, written: int) -> Applied:
        """``applied`` with the space's integer version; the disk use counted up."""
        self.space.count_written(written)  # until the next measure: at most this much more
        commit = pygit2.Oid(hex=str(applied.version))
        after = self.space.head() if applied.review else commit
        return dataclasses.replace(
            applied,
            version=self.space.generations.of(after),
            versions={applied.branch or BRANCH: str(commit)},
        )

    def _expected(self, head: pygit2.Oid | None, expected: Version | None) -> str | None:
        """The commit the caller read: ``expected`` as a commit id, or (none given) the head
        this call starts from, so a change made meanwhile, or the resource deleted and made
        again, is refused rather than overwritten."""
        if expected is None:
            return None if head is None else str(head)
        number = int(expected)
        found = self.space.generations.commit_at(head, number)
        if found is None:
            now = self.space.generations.of(head)
            raise ResourceConflict(
                f"version {number} is not a version of this space (it is at version {now})",
                hint="Read the resource again and pass the version it returns.",
                details={"expected_version": number, "current_version": now},
            )
        return str(found)

    def _check_unchanged(
        self, store: Store, head: pygit2.Oid | None, expected: pygit2.Oid, proposal: Proposal
    ) -> None:
        """``resource_conflict`` when a path the proposal touches differs between the version
        the caller read and the head, before the edit is tried on content it never saw."""
        for path in proposal.paths:
            if blob(store, head, path) != blob(store, expected, path):
                conflict = ResourceConflict("changed", details={"path": path})
                raise self._in_versions(conflict, self.space.generations.of(expected))

    def _in_versions(self, exc: GitpatchError, expected: Version | None) -> GitpatchError:
        """The Workspace's conflict texts speak commit ids; the service's speak versions."""
        path = str(exc.details.get("path", "the resource"))
        now = self.version()
        since = f"version {expected}" if expected is not None else "the patch was prepared"
        if isinstance(exc, ResourceNotFound):
            if "deleted since" not in exc.message:
                return exc
            return ResourceNotFound(
                f"{path} was deleted and created again since {since}; the new resource was "
                "left untouched",
                hint="Read the resource (and its version) again before editing it.",
                details={"path": path, "current_version": now},
            )
        return ResourceConflict(
            f"{path} changed since {since}: the space is now at version {now}",
            hint="Read the resource again and redo the edit on its current content, passing "
            "the new version as expected_version.",
            details={"path": path, "expected_version": expected, "current_version": now},
        )

    # -- limits ------------------------------------------------------------------------------

    def _check_limits(
        self, ws: Workspace | None, head: pygit2.Oid | None, changeset: Changeset
    ) -> tuple[int, int]:
        """``payload_too_large`` / ``storage_limit_reached`` from ``changeset``, what the
        proposal does on ``head`` (``ws`` None: on an empty space); returns the bytes of
        content it writes and the bytes of every resource once it is applied."""
        settings = self.space.settings
        store = None if ws is None else ws.plumbing.store
        changes = changeset.changes
        before = {path: self._blob_size(store, head, path) for path in changeset.paths}
        delta = written = 0
        for change in changes:
            size = len(change.content or b"")
            written += size
            if size > settings.max_file_bytes:
                raise PayloadTooLarge(
                    f"{change.path} would be {size} bytes, over this space's per-file limit of "
                    f"{settings.max_file_bytes} bytes",
                    hint="Patching does not raise the limit: make the resource smaller or "
                    "split it into several.",
                    details={"path": change.path, "size": size, "limit": settings.max_file_bytes},
                )
            for path in {change.path, change.source or change.path}:
                delta -= before[path]
            delta += size
        if self.space.disk_used is None and self.space.exists():
            self.space.measure()
        disk = self.space.disk_used
        if delta > 0 and disk is not None and disk > settings.max_disk_bytes:
            raise StorageLimitReached(
                f"the space's repository takes {disk} bytes on disk, history included, over "
                f"its quota of {settings.max_disk_bytes} bytes",
                hint="Ask for a larger quota; changes that shrink the space are still allowed.",
                details={"disk": disk, "limit": settings.max_disk_bytes},
            )
        used = self._space_size(store, head)
        if delta > 0 and used + delta > settings.max_space_bytes:
            raise StorageLimitReached(
                f"the space would hold {used + delta} bytes, over its storage limit of "
                f"{settings.max_space_bytes} bytes",
                hint="Delete or shrink resources in this space first, or ask for a larger limit.",
                details={"used": used, "change": delta, "limit": settings.max_space_bytes},
            )
        # each path the changeset touches: its old bytes go, its new bytes (if any) come; a
        # move with no content keeps its source's bytes
        after = sum(
            before[c.source] if c.content is None and c.source else len(c.content or b"")
            for c in changes
        )
        return written, used - sum(before.values()) + after

    @staticmethod
    def _blob_size(store: Store | None, commit: pygit2.Oid | None, path: str) -> int:
        found = None if store is None else blob(store, commit, path)
        return 0 if store is None or found is None else store.blob_size(found)

    def _remember_size(self, commit: pygit2.Oid, size: int) -> None:
        """``commit`` holds ``size`` bytes of resources (``_check_limits`` counted them), so
        the next change, made on it, finds its size without a diff."""
        if len(self._sizes) > 1000:
            self._sizes.clear()
        self._sizes[commit] = size

    def _space_size(self, store: Store | None, head: pygit2.Oid | None) -> int:
        """Bytes of every resource on ``head``: from a nearby first parent already measured
        plus the paths changed since (a full count only on the first call)."""
        if store is None or head is None:
            return 0
        if head not in self._sizes:
            if len(self._sizes) > 1000:
                self._sizes.clear()
            recent = itertools.islice(store.first_parents(head), 64)
            base = next((c.id for c in recent if c.id in self._sizes), None)
            if base is None:
                total = sum(self._blob_size(store, head, p) for p in store.files(head))
            else:
                total = self._sizes[base] + sum(
                    self._blob_size(store, head, p) - self._blob_size(store, base, p)
                    for p in store.changed_paths(base, head)
                )
            self._sizes[head] = total
        return self._sizes[head]


class Spaces:
    """Every space under a data directory, each opened once per process."""

    def __init__(self, root: Path, config: SpacesConfig | None = None) -> None:
        self.root = root
        self.config = config or SpacesConfig(root / "spaces.toml")
        self._open: dict[str, Space] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> Space:
        """The space ``users/<user>`` or ``teams/<team>`` (it may not exist yet)."""
        kind, _, owner = name.partition("/")
        assert kind in ("users", "teams") and owner and "/" not in owner
        with self._lock:
            found = self._open.get(name)
            if found is None:
                found = self._open[name] = Space(
                    name, self.root / kind / f"{owner}.git", self.config
                )
            return found
