"""The public API: a Workspace turns proposals into commits and lands them, safely.

``Workspace.open(path, mode)`` picks the branch proposals target. Each ``propose`` builds one
commit in the object store on top of the branch head (after recording any uncommitted content
of the touched files, so the agent's edit applies to what it saw), then:

- ``auto``: moves the branch by compare-and-swap and writes only the changed paths to disk
  through ``WorkingTree.land``; a protected branch is never moved, the change lands on a
  session branch ``gitpatch/session/<name>`` started at its head instead;
- ``review``: creates ``refs/heads/gitpatch/<id>`` and leaves the working tree alone.

Losing the compare-and-swap to another writer re-reads the head: if a touched file changed,
the caller gets ``resource_conflict``; otherwise the proposal is rebuilt on the new head. Every
error leaves no ref, note, file or index entry behind: nothing moves until everything is built.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import random
import secrets
import stat
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pygit2

from gitpatch import engine
from gitpatch.errors import (
    ConcurrentUpdate,
    DirtyWorktree,
    InternalError,
    InvalidArguments,
    NotATextResource,
    PathIgnored,
    ProposalRejected,
    RepositoryError,
    ResourceConflict,
    ResourceNotFound,
    UnsafePath,
)
from gitpatch.model import Changeset, FileChange, FileOp, Proposal, UpdateFile
from gitpatch.paths import normalize
from gitpatch.results import EditResult, FileResult, Mode, ProposalResult, ReadResult
from gitpatch.store import Store
from gitpatch.store.trees import MODE_LINK, MODE_SUBMODULE, MODE_TREE
from gitpatch.text import Document
from gitpatch.worktree import WorkingTree

if TYPE_CHECKING:
    from gitpatch.results import LogEntry, ProposalDetail, ProposalInfo

__all__ = [
    "DEFAULT_PROTECTED",
    "PROPOSAL_PREFIX",
    "REJECTED_PREFIX",
    "SESSION_PREFIX",
    "Workspace",
    "fingerprint",
    "protected_branches",
    "session_target",
]

Dirty = Literal["record", "refuse"]

PROPOSAL_PREFIX = "refs/heads/gitpatch/"
SESSION_PREFIX = "refs/heads/gitpatch/session/"
REJECTED_PREFIX = "refs/gitpatch/rejected/"
DEFAULT_PROTECTED = ("main", "master")
#: Lost compare-and-swaps absorbed before ``concurrent_update`` (each costs one rebuild).
MAX_ATTEMPTS = 60
_SESSION_CONFIG = "gitpatch-session.{name}.target"


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _short(ref: str) -> str:
    return ref.removeprefix("refs/heads/")


def _branch_ref(name: str) -> str:
    ref = name if name.startswith("refs/") else f"refs/heads/{name}"
    if not pygit2.reference_is_valid_name(ref):
        raise InvalidArguments(
            f"{name!r} is not a valid branch name",
            hint="Pass a branch name such as 'main' or a full ref such as 'refs/heads/main'.",
            details={"branch": name},
        )
    return ref


def protected_branches(store: Store, override: Sequence[str] | None = None) -> frozenset[str]:
    """Full refs of the protected branches: ``override``, else git config ``gitpatch.protected``
    (multi-valued or comma-separated), else main and master."""
    names: list[str] = list(override) if override is not None else []
    if override is None:
        with contextlib.suppress(KeyError, pygit2.GitError):
            for value in store.repo.config.get_multivar("gitpatch.protected"):
                names.extend(part.strip() for part in str(value).split(","))
        if not names:
            names = list(DEFAULT_PROTECTED)
    return frozenset(_branch_ref(n) for n in names if n.strip())


def session_target(store: Store, name: str) -> str | None:
    """The protected branch (full ref) the session ``name`` was started from, if recorded."""
    key = _SESSION_CONFIG.format(name=name)
    with contextlib.suppress(KeyError, pygit2.GitError):
        if key in store.repo.config:
            return str(store.repo.config[key])
    return None


def fingerprint(store: Store, base: pygit2.Oid | None, changeset: Changeset) -> str:
    """sha256 of the sorted ``"<path>\\t<new blob hex or DELETED>"`` lines of a changeset."""
    lines: dict[str, str] = {}
    for change in changeset.changes:
        if change.source is not None:
            lines[change.source] = "DELETED"
        if change.content is None:
            lines[change.path] = "DELETED"
        else:
            lines[change.path] = str(pygit2.hash(change.content))
    text = "\n".join(f"{path}\t{blob}" for path, blob in sorted(lines.items()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Snapshot(Mapping[str, bytes]):
    """The regular files of one commit, read lazily: the engine reads only what it names."""

    def __init__(self, store: Store, commit: pygit2.Oid | None) -> None:
        self._store = store
        self._commit = commit
        self._cache: dict[str, bytes | None] = {}

    def _load(self, path: str) -> bytes | None:
        if path not in self._cache:
            found = None if self._commit is None else self._store.entry(self._commit, path)
            if found is None or found.mode == MODE_TREE:
                self._cache[path] = None
            else:
                self._cache[path] = self._store.read(self._commit, path)  # type: ignore[arg-type]
        return self._cache[path]

    def __getitem__(self, path: str) -> bytes:
        data = self._load(path)
        if data is None:
            raise KeyError(path)
        return data

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, str) or self._commit is None:
            return False
        found = self._store.entry(self._commit, path)
        return found is not None and found.mode != MODE_TREE

    def __iter__(self) -> Iterator[str]:
        if self._commit is None:
            return
        tree = self._store.repo[self._commit].peel(pygit2.Tree)
        stack: list[tuple[str, pygit2.Tree]] = [("", tree)]
        while stack:
            prefix, node = stack.pop()
            for entry in node:
                name = prefix + (entry.name or "")
                if entry.filemode == MODE_TREE:
                    stack.append((name + "/", self._store.repo[entry.id].peel(pygit2.Tree)))
                else:
                    yield name

    def __len__(self) -> int:
        return sum(1 for _ in self)


@dataclasses.dataclass(frozen=True)
class _Built:
    """A proposal commit ready to publish: nothing points at it yet."""

    commit: pygit2.Oid
    base: pygit2.Oid | None
    changeset: Changeset
    fingerprint: str
    land_paths: tuple[str, ...]


class Workspace:
    """One repository, one target branch, one mode; its calls run one at a time."""

    def __init__(
        self,
        store: Store,
        worktree: WorkingTree | None,
        mode: Mode,
        target: str,
        *,
        dirty: Dirty = "record",
        protected: frozenset[str] = frozenset(),
        author: str | None = None,
        allow_ignored: bool = False,
    ) -> None:
        self.store = store
        self.worktree = worktree
        self.mode: Mode = mode
        #: The branch proposals are meant for (a protected branch when a session is used).
        self.target = target
        #: The branch proposals are built on and, in auto mode, land on.
        self.branch = target
        #: The session name when auto mode lands on ``gitpatch/session/<name>``.
        self.session: str | None = None
        self.dirty: Dirty = dirty
        self.protected = protected
        self.allow_ignored = allow_ignored
        sig = store.signature()
        self.author = author or f"{sig.name} <{sig.email}>"

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path,
        mode: Mode = "auto",
        branch: str | None = None,
        *,
        dirty: Dirty = "record",
        session: str | None = None,
        protected: Sequence[str] | None = None,
        author: str | None = None,
        allow_ignored: bool | None = None,
    ) -> Workspace:
        """Open the repository at ``path`` (with a working tree or bare).

        ``branch`` defaults to the checked-out one. In auto mode a protected target (git config
        ``gitpatch.protected``, default main and master), or an explicit ``session`` name,
        starts or resumes ``gitpatch/session/<name>`` and, when the target is checked out,
        switches to it keeping the working tree as ``git switch -c`` does.
        """
        if mode not in ("auto", "review"):
            raise InvalidArguments(
                f"unknown mode {mode!r}", hint="Use mode='auto' or mode='review'."
            )
        if dirty not in ("record", "refuse"):
            raise InvalidArguments(
                f"unknown dirty policy {dirty!r}", hint="Use dirty='record' or dirty='refuse'."
            )
        store = Store.open(path)
        worktree = None if store.repo.is_bare else WorkingTree(store.repo)
        if worktree is not None:
            worktree.recover()
        guarded = protected_branches(store, protected)
        target, resumed = cls._pick_target(store, branch, guarded)
        if allow_ignored is None:
            allow_ignored = _config_bool(store, "gitpatch.allowIgnored")
        ws = cls(
            store,
            worktree,
            mode,
            target,
            dirty=dirty,
            protected=guarded,
            author=author,
            allow_ignored=allow_ignored,
        )
        if resumed is not None and session is None:
            session = resumed
        if mode == "auto" and (session is not None or target in guarded):
            ws._start_session(session or "agent")
        return ws

    @staticmethod
    def _pick_target(
        store: Store, branch: str | None, guarded: frozenset[str]
    ) -> tuple[str, str | None]:
        """(target ref, session name when the chosen branch is itself a session branch)."""
        ref = _branch_ref(branch) if branch else store.head_branch()
        if ref is None:
            raise RepositoryError(
                "HEAD is detached: there is no branch to work on",
                hint="Check out a branch, or pass branch='name' to Workspace.open.",
            )
        if ref.startswith(SESSION_PREFIX):
            name = ref.removeprefix(SESSION_PREFIX)
            origin = session_target(store, name)
            if origin is None:
                origin = next((g for g in sorted(guarded) if store.ref_target(g)), None)
            if origin is not None:
                return origin, name
        return ref, None

    def _start_session(self, name: str) -> None:
        ref = _branch_ref(SESSION_PREFIX + name)
        if ref.startswith(SESSION_PREFIX + "/") or not name or "/" in name:
            raise InvalidArguments(
                f"invalid session name {name!r}",
                hint="Use a short name without slashes, such as 'agent'.",
            )
        head = self.store.ref_target(self.target)
        current = self.store.ref_target(ref)
        if current is None:
            if head is None:
                raise RepositoryError(
                    f"branch {_short(self.target)} has no commits to start a session from",
                    hint="Make a first commit on it, or open a non-protected branch.",
                )
            self.store.update_ref(ref, head, None, f"gitpatch: start session at {self.target}")
            current = head
        with contextlib.suppress(pygit2.GitError, OSError):
            self.store.repo.config[_SESSION_CONFIG.format(name=name)] = self.target
        if self.worktree is not None and self.store.head_branch() == self.target:
            self._switch(ref, head, current)
        self.branch = ref
        self.session = name

    def _switch(self, ref: str, here: pygit2.Oid | None, there: pygit2.Oid) -> None:
        """Point HEAD at ``ref``, keeping local changes (refused where they would be lost)."""
        assert self.worktree is not None
        repo = self.store.repo

        def move_head() -> None:
            repo.references.create("HEAD", ref, force=True)

        if here == there:
            move_head()
            return
        paths = self.store.changed_paths(here, there)
        local = self.worktree.modified(str(here) if here else None, paths)
        if local:
            raise DirtyWorktree(
                f"cannot switch to {ref}: local changes in {', '.join(local)} would be "
                "overwritten by the session's commits",
                hint="Commit or stash those files, then open the Workspace again.",
                details={"paths": local, "branch": ref},
            )
        self.worktree.land(str(here) if here else None, str(there), paths, move_head, ref="HEAD")

    # -- the tool methods --------------------------------------------------------------------

    def patch(self, path: str, edits: str, **kw: Any) -> ProposalResult:
        """Apply SEARCH/REPLACE blocks to one file (the ``patch`` tool)."""
        from gitpatch.formats import search_replace

        proposal = search_replace.parse(edits, path)
        return self.propose(dataclasses.replace(proposal, tool="patch"), **kw)

    def apply_patch(self, patch: str, **kw: Any) -> ProposalResult:
        """Apply a ``*** Begin Patch`` text: updates, adds, deletes and moves, all or none."""
        from gitpatch.formats import apply_patch

        proposal = apply_patch.parse(patch)
        return self.propose(dataclasses.replace(proposal, tool="apply_patch"), **kw)

    def patch_resource(
        self,
        path: str,
        edits: list[dict[str, Any]],
        expected_version: str | None = None,
        **kw: Any,
    ) -> ProposalResult:
        """Apply patch_resource edit objects to one file, optionally against a version read."""
        from gitpatch.formats import edits as edit_objects

        proposal = edit_objects.parse(path, edits)
        proposal = dataclasses.replace(proposal, tool="patch_resource")
        return self.propose(proposal, expected_version=expected_version, **kw)

    def read(self, path: str) -> ReadResult:
        """A file's text as the agent would edit it, and the version (commit id) it belongs to.

        When the branch is checked out the text comes from disk (uncommitted edits included),
        since that is what a following edit applies to.
        """
        self._recover()
        clean = self._normalize(path)
        head = self.store.ref_target(self.branch)
        self._check_paths(head, [clean])
        if self._tracks_disk():
            assert self.worktree is not None
            try:
                data: bytes | None = (self.worktree.root / clean).read_bytes()
            except FileNotFoundError:
                data = None
        else:
            data = None if head is None else self.store.read(head, clean)
        if data is None:
            raise ResourceNotFound(
                f"cannot read {clean}: no such file on {_short(self.branch)}",
                hint="Check the path (it is relative to the repository root).",
                details={"path": clean},
            )
        text = Document.from_bytes(data, clean).text
        return ReadResult(path=clean, content=text, version=str(head) if head else "")

    # -- proposing ---------------------------------------------------------------------------

    def propose(
        self, proposal: Proposal, *, expected_version: str | None = None, revision: bool = False
    ) -> ProposalResult:
        """Build ``proposal`` as one commit and land it (auto) or put it up for review.

        ``expected_version``: a commit id the caller read; a touched file whose content changed
        since is a ``resource_conflict`` (other files changing is not). ``revision=True`` allows
        a change identical to one a person rejected.
        """
        self._recover()
        proposal = self._normalize_proposal(proposal)
        touched = proposal.paths
        pid = secrets.token_hex(6)
        expected = self._resolve_version(expected_version)
        first = self.store.ref_target(self.branch)
        self._check_paths(first, touched)
        for attempt in range(MAX_ATTEMPTS):
            head = first if attempt == 0 else self.store.ref_target(self.branch)
            if expected is not None:
                self._check_unchanged(expected, head, touched, since_version=True)
            elif attempt > 0:
                self._check_unchanged(first, head, touched, since_version=False)
            built = self._build(proposal, head, pid, revision)
            try:
                self._publish(built, head, pid, proposal.tool)
            except ConcurrentUpdate as exc:
                if exc.details.get("reason") == "locked":
                    raise
                time.sleep(min(0.05, 0.0005 * 2**attempt) * (0.5 + random.random()))
                continue
            self._write_note(built, pid, proposal.tool, revision)
            return self._result(built, pid)
        raise ConcurrentUpdate(
            f"{_short(self.branch)} kept moving: {MAX_ATTEMPTS} attempts to land the proposal "
            "lost to other writers",
            hint="The branch is very busy; retry the call.",
            details={"branch": self.branch, "reason": "changed"},
        )

    def _build(
        self, proposal: Proposal, head: pygit2.Oid | None, pid: str, revision: bool
    ) -> _Built:
        """Record dirty files, apply the proposal, build its commit; move no ref."""
        base = head
        recorded: list[str] = []
        if self._tracks_disk():
            base, recorded = self._record_dirty(head, proposal.paths, pid)
        changeset = engine.apply(proposal, _Snapshot(self.store, base))
        print_ = fingerprint(self.store, base, changeset)
        if not revision and self.store.ref_target(REJECTED_PREFIX + print_) is not None:
            raise ProposalRejected(
                "a person already rejected exactly this change "
                f"(rejected proposal at {self.store.ref_target(REJECTED_PREFIX + print_)})",
                hint="Do not replay a rejected change; change your approach, or pass "
                "revision=True if the reviewer asked for this revision.",
                details={"fingerprint": print_},
            )
        tree = self.store.build_tree(base, changeset.changes)
        tool = proposal.tool or "propose"
        commit = self.store.commit(
            tree,
            [base] if base is not None else [],
            proposal.message or _summary(tool, _file_results(base, changeset, self.store)),
            {"Gitpatch-Proposal": pid, "Gitpatch-Tool": tool},
        )
        land = tuple(dict.fromkeys([*recorded, *changeset.paths]))
        return _Built(commit, base, changeset, print_, land)

    def _record_dirty(
        self, head: pygit2.Oid | None, paths: Sequence[str], pid: str
    ) -> tuple[pygit2.Oid | None, list[str]]:
        """Commit the disk content of touched paths that differ from ``head`` (not published)."""
        assert self.worktree is not None
        dirty = self.worktree.modified(str(head) if head else None, paths)
        if not dirty:
            return head, []
        if self.dirty == "refuse":
            raise DirtyWorktree(
                f"{', '.join(dirty)} has uncommitted changes on disk",
                hint="Commit or discard those changes first, or open the Workspace with "
                "dirty='record' to have them recorded in a commit of their own.",
                details={"paths": dirty},
            )
        changes = []
        for path in dirty:
            full = self.worktree.root / path
            data = full.read_bytes() if full.is_file() else None
            if data is None and (head is None or self.store.entry(head, path) is None):
                continue
            changes.append(FileChange(path, data))
        if not changes:
            return head, []
        tree = self.store.build_tree(head, changes)
        record = self.store.commit(
            tree,
            [head] if head is not None else [],
            f"Record uncommitted changes to {', '.join(dirty)}",
            {"Gitpatch-Record": pid},
        )
        return record, dirty

    def _publish(self, built: _Built, head: pygit2.Oid | None, pid: str, tool: str) -> None:
        if self.mode == "review":
            ref = PROPOSAL_PREFIX + pid
            self.store.update_ref(ref, built.commit, None, f"gitpatch: propose {pid}")
            return
        if self.branch in self.protected:
            raise InternalError("refusing to land an agent commit on a protected branch")

        def move() -> None:
            self.store.update_ref(self.branch, built.commit, head, f"gitpatch: {tool} {pid}")

        if self._tracks_disk():
            assert self.worktree is not None
            base = str(built.base) if built.base is not None else None
            self.worktree.land(base, str(built.commit), built.land_paths, move, ref=self.branch)
        else:
            move()

    def _write_note(self, built: _Built, pid: str, tool: str, revision: bool) -> None:
        note = {
            "id": pid,
            "status": "applied" if self.mode == "auto" else "proposed",
            "tool": tool or "propose",
            "target": self.target,
            "branch": self.branch if self.mode == "auto" else PROPOSAL_PREFIX + pid,
            "base": str(built.base) if built.base is not None else None,
            "fingerprint": built.fingerprint,
            "author": self.author,
            "created_at": _now_iso(),
            "revision": revision,
        }
        self.store.update_note(built.commit, lambda _old: dict(note))

    def _result(self, built: _Built, pid: str) -> ProposalResult:
        holder = self.branch if self.mode == "auto" else PROPOSAL_PREFIX + pid
        files = _file_results(built.base, built.changeset, self.store)
        names = ", ".join(f.path for f in files)
        if self.mode == "review":
            message = (
                f"Proposed {names} on {holder} for {self.target}; nothing on disk changes "
                "until a person approves it."
            )
        elif self.session is not None:
            message = (
                f"Applied {names} on session branch {holder} ({self.target} is protected: a "
                f"person merges the session with approve('{self.session}'))."
            )
        else:
            message = f"Applied {names} on {holder}."
        return ProposalResult(
            proposal_id=pid,
            version=str(built.commit),
            branch=holder,
            target=self.target,
            mode=self.mode,
            status="applied" if self.mode == "auto" else "proposed",
            base=str(built.base) if built.base is not None else "",
            files=files,
            edits=[
                EditResult(
                    path=r.path,
                    index=r.index,
                    start_line=r.start_line,
                    end_line=r.end_line,
                    level=r.level,
                )
                for r in built.changeset.report
            ],
            message=message,
        )

    # -- checks ------------------------------------------------------------------------------

    def _recover(self) -> None:
        if self.worktree is not None:
            self.worktree.recover()

    def _tracks_disk(self) -> bool:
        """True when the working tree shows ``self.branch`` (so disk content is the base)."""
        return self.worktree is not None and self.store.head_branch() == self.branch

    def _normalize(self, path: str) -> str:
        root = str(self.worktree.root) if self.worktree is not None else None
        return normalize(path, root.rstrip("/") if root else None)

    def _normalize_proposal(self, proposal: Proposal) -> Proposal:
        ops: list[FileOp] = []
        for op in proposal.operations:
            clean = dataclasses.replace(op, path=self._normalize(op.path))
            if isinstance(clean, UpdateFile) and clean.move_to is not None:
                clean = dataclasses.replace(clean, move_to=self._normalize(clean.move_to))
            ops.append(clean)
        if not ops:
            raise InvalidArguments(
                "the proposal has no operations", hint="Give at least one file operation."
            )
        return dataclasses.replace(proposal, operations=tuple(ops))

    def _resolve_version(self, version: str | None) -> pygit2.Oid | None:
        if version is None:
            return None
        text = str(version).strip().lower()
        if not text or any(c not in "0123456789abcdef" for c in text) or len(text) < 4:
            raise InvalidArguments(
                f"expected_version {version!r} is not a commit id",
                hint="Pass the version (a commit id) returned by your last read or edit.",
                details={"expected_version": version},
            )
        try:
            return self.store.resolve_commit(text)
        except RepositoryError as exc:
            raise InvalidArguments(
                f"expected_version {version!r} names no commit of this repository ({exc.message})",
                hint="Pass the version returned by your last read or edit, or read the file "
                "again to get its current version.",
                details={"expected_version": version},
            ) from exc

    def _check_paths(self, head: pygit2.Oid | None, paths: Sequence[str]) -> None:
        """Refuse symlinks, submodules and directories, in the branch and on disk."""
        for path in paths:
            parts = path.split("/")
            for depth in range(1, len(parts) + 1):
                prefix = "/".join(parts[:depth])
                found = None if head is None else self.store.entry(head, prefix)
                mode = found.mode if found is not None else None
                last = depth == len(parts)
                if mode is not None:
                    _refuse_mode(path, prefix, mode, last)
                if self._tracks_disk():
                    _refuse_disk(self.worktree.root, path, prefix, last)  # type: ignore[union-attr]
        ignored = [p for p in paths if self._ignored(head, p)]
        if ignored and not self.allow_ignored:
            raise PathIgnored(
                f"{', '.join(ignored)}: ignored by .gitignore; gitpatch does not edit or create "
                "ignored files",
                hint="Edit a tracked file, or set git config gitpatch.allowIgnored true.",
                details={"paths": ignored},
            )

    def _check_unchanged(
        self,
        reference: pygit2.Oid | None,
        head: pygit2.Oid | None,
        paths: Sequence[str],
        *,
        since_version: bool,
    ) -> None:
        """``resource_conflict`` when a touched path's content at ``head`` is not the one at
        ``reference``; ``resource_not_found`` when it was deleted (and maybe re-created) since."""
        if reference == head:
            return
        what = f"version {str(reference)[:12]}" if since_version else "the proposal was prepared"
        gone = self._deleted_since(reference, head, paths) if since_version else set()
        for path in paths:
            then = _blob(self.store, reference, path)
            now = _blob(self.store, head, path)
            if then is not None and path in gone:
                raise ResourceNotFound(
                    f"{path} was deleted since {what}"
                    + (" and a new file was created at that path" if now is not None else ""),
                    hint="The file you read no longer exists; read the current file (and its "
                    "version) before editing it.",
                    details={"path": path, "version": str(reference), "head": str(head)},
                )
            if then != now:
                raise ResourceConflict(
                    f"{path} changed since {what}: {_short(self.branch)} is now at "
                    f"{str(head)[:12]}",
                    hint="Read the file again and redo the edit on its current content, passing "
                    "the new version as expected_version.",
                    details={
                        "path": path,
                        "expected_version": str(reference),
                        "current_version": str(head),
                    },
                )

    def _deleted_since(
        self, reference: pygit2.Oid | None, head: pygit2.Oid | None, paths: Sequence[str]
    ) -> set[str]:
        """Touched paths that are missing in some commit between ``reference`` and ``head``."""
        if reference is None or head is None:
            return set()
        repo = self.store.repo
        present = [p for p in paths if _blob(self.store, reference, p) is not None]
        if not present:
            return set()
        gone: set[str] = set()
        walker = repo.walk(head, pygit2.enums.SortMode.TOPOLOGICAL)
        walker.hide(reference)
        for count, commit in enumerate(walker):
            if count >= 10_000:
                break
            for path in present:
                if path not in gone and _blob_in_tree(commit.tree, path) is None:
                    gone.add(path)
        return gone

    def _ignored(self, head: pygit2.Oid | None, path: str) -> bool:
        """True for a path .gitignore ignores and the branch does not track."""
        if self.worktree is None:
            return False
        if head is not None and self.store.entry(head, path) is not None:
            return False
        try:
            return bool(self.store.repo.path_is_ignored(path))
        except pygit2.GitError:
            return False

    # -- review (written in gitpatch.review) -------------------------------------------------

    def approve(self, id: str, by: str) -> ProposalResult:
        """Merge a proposal (or a session, by name) into its target; see ``gitpatch.review``."""
        from gitpatch import review

        self._recover()
        return review.approve(self, id, by)

    def reject(self, id: str, by: str, reason: str) -> ProposalResult:
        """Reject a proposal: its ref goes, the reason is noted; see ``gitpatch.review``."""
        from gitpatch import review

        self._recover()
        return review.reject(self, id, by, reason)

    def proposals(self) -> list[ProposalInfo]:
        """Every proposal with its status; see ``gitpatch.review``."""
        from gitpatch import review

        self._recover()
        return review.proposals(self)

    def show(self, id: str) -> ProposalDetail:
        """One proposal's diff, stats and info; see ``gitpatch.review``."""
        from gitpatch import review

        self._recover()
        return review.show(self, id)

    def undo(self) -> ProposalResult:
        """Revert the last gitpatch commit with a new commit; see ``gitpatch.review``."""
        from gitpatch import review

        self._recover()
        return review.undo(self)

    def log(self, limit: int = 50) -> list[LogEntry]:
        """The gitpatch commits on the branch, newest first; see ``gitpatch.review``."""
        from gitpatch import review

        self._recover()
        return review.log(self, limit)


def _refuse_mode(path: str, prefix: str, mode: int, last: bool) -> None:
    """Refuse a path that is, or goes through, a symlink, a submodule or a directory."""
    if mode == MODE_LINK:
        raise UnsafePath(
            f"{path}: {prefix} is a symbolic link; gitpatch does not follow or edit symlinks",
            hint="Edit the file the link points to, by its real path.",
            details={"path": path, "symlink": prefix},
        )
    if mode == MODE_SUBMODULE:
        raise NotATextResource(
            f"{path}: {prefix} is a submodule; gitpatch does not edit inside submodules",
            hint="Open a Workspace on the submodule's own repository instead.",
            details={"path": path, "submodule": prefix},
        )
    if mode == MODE_TREE and last:
        raise NotATextResource(
            f"{path} is a directory, not a file",
            hint="Name a file inside the directory.",
            details={"path": path},
        )


def _refuse_disk(root: Path, path: str, prefix: str, last: bool) -> None:
    """The same refusals for what is on disk (an untracked symlink or directory)."""
    try:
        st = (root / prefix).lstat()
    except (FileNotFoundError, NotADirectoryError):
        return
    if stat.S_ISLNK(st.st_mode):
        _refuse_mode(path, prefix, MODE_LINK, last)
    if last and stat.S_ISDIR(st.st_mode):
        _refuse_mode(path, prefix, MODE_TREE, last)
    if last and not stat.S_ISDIR(st.st_mode) and not stat.S_ISREG(st.st_mode):
        raise NotATextResource(
            f"{path} is not a regular file",
            hint="Only regular text files can be edited.",
            details={"path": path},
        )


def _blob_in_tree(tree: pygit2.Tree, path: str) -> pygit2.Oid | None:
    try:
        obj = tree[path]
    except KeyError:
        return None
    return None if obj.filemode == MODE_TREE else obj.id


def _blob(store: Store, commit: pygit2.Oid | None, path: str) -> pygit2.Oid | None:
    if commit is None:
        return None
    found = store.entry(commit, path)
    return None if found is None or found.mode == MODE_TREE else found.oid


def _config_bool(store: Store, key: str) -> bool:
    with contextlib.suppress(KeyError, pygit2.GitError, ValueError):
        if key in store.repo.config:
            return bool(store.repo.config.get_bool(key))
    return False


def _file_results(base: pygit2.Oid | None, changeset: Changeset, store: Store) -> list[FileResult]:
    out: list[FileResult] = []
    for change in changeset.changes:
        if change.source is not None:
            out.append(FileResult(path=change.path, action="move", moved_from=change.source))
        elif change.content is None:
            out.append(FileResult(path=change.path, action="delete"))
        elif _blob(store, base, change.path) is not None:
            out.append(FileResult(path=change.path, action="update"))
        else:
            out.append(FileResult(path=change.path, action="add"))
    return out


def _summary(tool: str, files: Sequence[FileResult]) -> str:
    """A commit subject such as ``patch: update a.py, add b.py (+2 more)``."""
    words = [
        f"move {f.moved_from} to {f.path}" if f.action == "move" else f"{f.action} {f.path}"
        for f in files
    ]
    more = f" (+{len(words) - 3} more)" if len(words) > 3 else ""
    return f"{tool}: {', '.join(words[:3])}{more}"
