"""A Workspace seen as a storage (``gitpatch.storage``): keys, versions and resource ids.

Ordinary keys are repository-relative paths on the Workspace's branch (disk content included
when the branch is checked out); ``work://SESSION/p`` and ``memory://ROOT/p`` keys live on
``refs/gitpatch/work/SESSION`` and ``refs/gitpatch/memory/ROOT``, never in the working tree.
A version is the commit id holding the content; a resource id is derived from the commit that
created the file (followed back through moves), so edits and moves keep it and a file deleted
and created again gets a new one. Writing goes through ``Workspace.propose`` (or, for a change
spanning several refs, ``gitpatch.families``), so every rule of the Workspace holds here too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import ClassVar

import pygit2

from gitpatch.errors import GitpatchError, NotATextResource, ResourceConflict, ResourceNotFound
from gitpatch.guards import blob
from gitpatch.model import EditReport, FileChange, Proposal, UpdateFile
from gitpatch.paths import Address, parse_address
from gitpatch.policy import RulePolicy, rules_from_config
from gitpatch.results import EditResult, FileResult, ProposalResult
from gitpatch.storage import Applied, FileRead, Gate, Stat, Target, Version, _plain_resolve
from gitpatch.store import Store
from gitpatch.store.trees import MODE_TREE
from gitpatch.workspace import Workspace

__all__ = ["WorkspaceStorage", "resource_id"]

#: Commits walked back to find where a file was created.
ID_HISTORY_LIMIT = 5_000
#: Trailer of the commit that pins the uncommitted disk content a read handed out.
READ_TRAILER = "Gitpatch-Read"


def resource_id(store: Store, head: pygit2.Oid | None, path: str) -> str | None:
    """The stable id of the file at ``path`` on ``head``: a hash of the commit that created it
    and the path it was created at, following moves (git's rename detection) back."""
    if head is None or _file(store.repo[head].peel(pygit2.Tree), path) is None:
        return None
    commit = store.repo[head].peel(pygit2.Commit)
    for _ in range(ID_HISTORY_LIMIT):
        if not commit.parents:
            break
        parent = commit.parents[0]
        if _file(parent.tree, path) is not None:
            commit = parent
            continue
        source = _moved_from(store.repo, parent, commit, path)
        if source is None:
            break
        path, commit = source, parent
    digest = hashlib.sha256(f"{commit.id}\0{path}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def _file(tree: pygit2.Tree, path: str) -> pygit2.Oid | None:
    try:
        obj = tree[path]
    except KeyError:
        return None
    return None if obj.filemode == MODE_TREE else obj.id


def _moved_from(
    repo: pygit2.Repository, parent: pygit2.Commit, commit: pygit2.Commit, path: str
) -> str | None:
    diff = parent.tree.diff_to_tree(commit.tree)
    diff.find_similar()
    for delta in diff.deltas:
        if delta.status == pygit2.enums.DeltaStatus.RENAMED and delta.new_file.path == path:
            return str(delta.old_file.path)
    return None


class WorkspaceStorage:
    """The storage view of one Workspace; ``WorkspaceStorage.of(ws)`` gives the same one each
    time, so ``reader=ws, writer=ws`` is one namespace."""

    _made: ClassVar[weakref.WeakKeyDictionary[Workspace, WorkspaceStorage]] = (
        weakref.WeakKeyDictionary()
    )
    _made_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.root = ""
        self._families: dict[str, Workspace] = {}
        self._review: Workspace | None = None

    @classmethod
    def of(cls, workspace: Workspace) -> WorkspaceStorage:
        """The storage wrapping ``workspace`` (made once)."""
        with cls._made_lock:
            found = cls._made.get(workspace)
            if found is None:
                found = cls._made[workspace] = cls(workspace)
            return found

    def config_policy(self) -> RulePolicy | None:
        """The tool rules in the repository's git config, if any (see the README):
        ``gitpatch.toolAllow``, ``gitpatch.toolDeny``, ``gitpatch.toolAsk`` (multi-valued
        globs) and ``gitpatch.toolRequireApproval`` (bool)."""
        config = self.workspace.store.repo.config
        values: dict[str, list[str]] = {}
        for name, key in (
            ("allow", "gitpatch.toolAllow"),
            ("deny", "gitpatch.toolDeny"),
            ("ask", "gitpatch.toolAsk"),
            ("requireApproval", "gitpatch.toolRequireApproval"),
        ):
            with contextlib.suppress(KeyError, pygit2.GitError):
                values[name] = [str(v) for v in config.get_multivar(key)]
        return rules_from_config(values)

    # -- namespace ---------------------------------------------------------------------------

    def resolve(self, path: str, cwd: str | None = None) -> Target:
        """Relative POSIX paths (absolute ones inside the repository are accepted too)."""
        tree = self.workspace.worktree
        root = str(tree.root).rstrip("/") if tree is not None else None
        return _plain_resolve(self, path, cwd, root)

    # -- reading -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _view(self, key: str) -> Iterator[tuple[Workspace, str, bool]]:
        """(the Workspace holding ``key``, its path there, whether disk is its content), with
        that Workspace's calls and lands held off."""
        ws = self.workspace
        address = parse_address(key)
        with ws._calls:
            if address is not None:
                yield self._family(address), address.path, False
                return
            disk = ws._tracks_disk()
            with ws._consistent_view():
                yield ws, key, disk

    def read(self, key: str) -> FileRead:
        """See ``Storage.read``. Uncommitted disk content gets a version of its own: a commit
        pinning it (no ref moves), which ``apply`` accepts as ``expected_version``."""
        with self._view(key) as (ws, path, disk):
            store = ws.store
            head = store.ref_target(ws.branch)
            ws._check_paths(head, [path])
            data = self._disk(ws, path) if disk else None
            if not disk and head is not None:
                data = store.read(head, path)
            if data is None:
                raise ResourceNotFound(
                    f"{key}: no such file",
                    hint="Check the path; list the files to see what exists.",
                    details={"path": key},
                )
            version = head
            if disk and (head is None or blob(store, head, path) != pygit2.hash(data)):
                version = _pin(store, head, path, data)
            ident = resource_id(store, head, path) or _new_id(path, version)
            return FileRead(data, str(version) if version else "", ident)

    @staticmethod
    def _disk(ws: Workspace, path: str) -> bytes | None:
        assert ws.worktree is not None
        return ws.worktree.read(path)

    def stat(self, key: str) -> Stat | None:
        """See ``Storage.stat``."""
        with self._view(key) as (ws, path, disk):
            if disk:
                assert ws.worktree is not None
                full = ws.worktree.root / path
                if full.is_dir():
                    return Stat("directory")
                return Stat("file", full.stat().st_size) if full.is_file() else None
            head = ws.store.ref_target(ws.branch)
            found = None if head is None else ws.store.entry(head, path)
            if found is None:
                return None
            if found.mode == MODE_TREE:
                return Stat("directory")
            return Stat("file", ws.store.repo[found.oid].peel(pygit2.Blob).size)

    def list(self, prefix: str = "") -> list[str]:
        """Files on the branch head below ``prefix`` (committed content)."""
        from gitpatch.guards import Snapshot

        ws = self.workspace
        with ws._calls:
            head = ws.store.ref_target(ws.branch)
            base = prefix.rstrip("/") + "/" if prefix else ""
            return sorted(p for p in Snapshot(ws.store, head) if p.startswith(base))

    # -- writing -----------------------------------------------------------------------------

    def apply(
        self,
        proposal: Proposal,
        *,
        expected_version: Version | None = None,
        review: bool = False,
        gate: Gate | None = None,
    ) -> Applied:
        """See ``Storage.apply``: one proposal commit per ref touched, all refs in one ref
        transaction; ``review`` keeps the change on ``refs/heads/gitpatch/<id>``."""
        groups = _groups(proposal)
        if len(groups) > 1:
            from gitpatch.families import propose_across

            with self.workspace._calls:
                applied: Applied = propose_across(self, proposal, groups, review, gate)
                return applied
        (root,) = groups
        with self.workspace._calls:
            ws = self._holder(root, review)
            local = _strip(proposal, root)
            expected = self._expected(ws, local, expected_version)
            if gate is not None:
                gate()
            result = ws.propose(local, expected_version=expected)
            return self._applied(ws, result, root)

    def _holder(self, root: Address | None, review: bool) -> Workspace:
        if root is not None:
            if review:
                raise NotATextResource(
                    f"{root.family}://{root.root}/ changes cannot be kept for review",
                    hint="Scratch addresses take changes directly; ask for approval of "
                    "ordinary paths only.",
                )
            return self._family(root)
        return self._reviewer() if review else self.workspace

    def _family(self, address: Address) -> Workspace:
        ref = address.ref
        found = self._families.get(ref)
        if found is None:
            ws = self.workspace
            found = Workspace(ws.store, None, "auto", ref, author=ws.author)
            self._families[ref] = found
        return found

    def _reviewer(self) -> Workspace:
        ws = self.workspace
        if ws.mode == "review":
            return ws
        if self._review is None:
            self._review = Workspace(
                ws.store,
                ws.worktree,
                "review",
                ws.branch,
                dirty=ws.dirty,
                protected=ws.protected,
                author=ws.author,
                allow_ignored=ws.allow_ignored,
            )
        return self._review

    def _expected(self, ws: Workspace, proposal: Proposal, expected: Version | None) -> str | None:
        """A pinned read version (see ``read``) becomes the head it was read on, once the disk
        still holds what was read; anything else passes through unchanged."""
        if expected is None:
            return None
        text = str(expected).strip()
        commit = None
        with contextlib.suppress(GitpatchError, ValueError, KeyError, pygit2.GitError):
            commit = ws.store.repo[ws.store.resolve_commit(text)].peel(pygit2.Commit)
            if READ_TRAILER not in ws.store.trailers(commit.id):
                commit = None
        return text if commit is None else _unpin(ws, commit, proposal.paths, text)

    def _applied(self, ws: Workspace, result: ProposalResult, root: Address | None) -> Applied:
        review = result.mode == "review"
        head = ws.store.ref_target(ws.branch) if not review else pygit2.Oid(hex=result.version)
        files = tuple(_rename(f, root) for f in result.files)
        ids: dict[str, str] = {}
        for f in result.files:
            ident = resource_id(ws.store, head, f.path) if f.action != "delete" else None
            if ident is not None:
                ids[_key(f.path, root)] = ident
        return Applied(
            version=result.version,
            files=files,
            edits=tuple(_edit_report(e, root) for e in result.edits),
            ids=ids,
            proposal_id=result.proposal_id,
            branch=result.branch,
            review=review,
            target=result.target,
        )


def _pin(store: Store, head: pygit2.Oid | None, path: str, data: bytes) -> pygit2.Oid:
    """A commit holding ``data`` at ``path`` on top of ``head``; no ref points at it."""
    tree = store.build_tree(head, [FileChange(path, data)])
    parents = [head] if head is not None else []
    return store.commit(tree, parents, f"Pin uncommitted {path} as read", {READ_TRAILER: path})


def _unpin(ws: Workspace, pin: pygit2.Commit, paths: Sequence[str], text: str) -> str | None:
    for path in paths:
        then = _file(pin.tree, path)
        disk = ws.worktree.disk_blob(path) if ws.worktree is not None else None
        if then is not None and disk != str(then):
            raise ResourceConflict(
                f"{path} changed on disk since version {text[:12]}",
                hint="Read the file again and redo the edit on its current content, passing the "
                "new version as expected_version.",
                details={"path": path, "expected_version": text},
            )
    return str(pin.parents[0].id) if pin.parents else None


def _new_id(path: str, version: object) -> str:
    digest = hashlib.sha256(f"{version}\0{path}\0untracked".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def _groups(proposal: Proposal) -> list[Address | None]:
    """The ref groups a proposal touches: None for ordinary paths, else one Address per root."""
    seen: dict[tuple[str, str] | None, Address | None] = {}
    for path in proposal.paths:
        address = parse_address(path)
        key = None if address is None else (address.family, address.root)
        seen.setdefault(key, address)
    return list(seen.values())


def _strip(proposal: Proposal, root: Address | None) -> Proposal:
    """The proposal with family addresses turned into paths on their ref."""
    if root is None:
        return proposal
    ops = []
    for op in proposal.operations:
        new = dataclasses.replace(op, path=_local(op.path))
        if isinstance(new, UpdateFile) and new.move_to is not None:
            new = dataclasses.replace(new, move_to=_local(new.move_to))
        ops.append(new)
    return dataclasses.replace(proposal, operations=tuple(ops))


def _local(path: str) -> str:
    address = parse_address(path)
    return path if address is None else address.path


def _key(path: str, root: Address | None) -> str:
    return path if root is None else f"{root.family}://{root.root}/{path}"


def _rename(f: FileResult, root: Address | None) -> FileResult:
    moved = None if f.moved_from is None else _key(f.moved_from, root)
    return FileResult(path=_key(f.path, root), action=f.action, moved_from=moved)


def _edit_report(e: EditResult, root: Address | None) -> EditReport:
    return EditReport(_key(e.path, root), e.index, e.start_line, e.end_line, e.level)
