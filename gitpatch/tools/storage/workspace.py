"""A Workspace seen as a storage (``gitpatch.tools.storage.base``): keys, versions and resource ids.

Ordinary keys are repository-relative paths on the Workspace's branch (disk content included
when the branch is checked out); ``work://SESSION/p`` and ``memory://ROOT/p`` keys live on
``refs/gitpatch/work/SESSION`` and ``refs/gitpatch/memory/ROOT``, never in the working tree.
A version is the commit id holding the content; a resource id is derived from the commit that
created the file (followed back through moves), so edits and moves keep it and a file deleted
and created again gets a new one. Writing goes through ``Workspace.propose`` (or, for a change
spanning several refs, ``storage.scratch``), so every rule of the Workspace holds here too;
plain paths never enter the scratch-family code.

Reading uncommitted disk content hands out a version of its own: a commit pinning that content
on top of the head (no ref points at it; ``gitpatch.workspace.versions``). Passed back as
``expected_version``, the Workspace takes it for the head it was read on as long as the disk
still holds what was read, and answers ``resource_conflict`` once it does not.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

from gitpatch.core.model import Proposal
from gitpatch.core.paths import Address, parse_address
from gitpatch.errors import (
    InvalidArguments,
    ResourceNotFound,
)
from gitpatch.porcelain.workspace import Workspace
from gitpatch.store import MODE_TREE
from gitpatch.tools.policy import (
    CombinedPolicy,
    ToolPermissionPolicy,
    rules_from_config,
    workspace_tool_policy,
)
from gitpatch.tools.storage import scratch as families
from gitpatch.tools.storage.base import (
    Applied,
    BeforeWrite,
    FileRead,
    Stat,
    Target,
    Version,
    applied,
    resolve_plain,
    resource_id,
    uuid_like,
)
from gitpatch.workspace import versions
from gitpatch.workspace.config import settings

__all__ = ["READ_TRAILER", "WorkspaceStorage"]

#: Trailer of the commit that pins the uncommitted disk content a read handed out.
READ_TRAILER = versions.READ_TRAILER


class WorkspaceStorage:
    """The storage view of one Workspace. Two views of the same Workspace are equal, so
    ``reader=ws, writer=ws`` is one namespace; a view holds its Workspace alive, nothing holds
    the view but its user."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.root = ""
        self._families: dict[str, Workspace] = {}
        self._review: Workspace | None = None

    @classmethod
    def of(cls, workspace: Workspace) -> WorkspaceStorage:
        """A storage view of ``workspace``."""
        return cls(workspace)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WorkspaceStorage) and other.workspace is self.workspace

    def __hash__(self) -> int:
        return id(self.workspace)

    def config_policy(self) -> ToolPermissionPolicy | None:
        """The tool rules of the repository's settings, if any (see docs/tools.md): the
        ``[policy]`` table of ``.gitpatch.toml`` and git config's ``gitpatch.toolAllow``,
        ``gitpatch.toolDeny``, ``gitpatch.toolAsk`` (multi-valued globs) and
        ``gitpatch.toolRequireApproval`` (bool), together (the strictest wins)."""
        store = self.workspace.plumbing.store
        found: list[ToolPermissionPolicy] = []
        file = settings(store).file
        if file.require_approval or file.allow is not None or file.deny or file.ask:
            rules = (file.require_approval, file.allow, file.deny, file.ask)
            found.append(workspace_tool_policy(*rules))
        from_git = rules_from_config(
            {
                "allow": store.config_values("gitpatch.toolAllow"),
                "deny": store.config_values("gitpatch.toolDeny"),
                "ask": store.config_values("gitpatch.toolAsk"),
                "requireApproval": store.config_values("gitpatch.toolRequireApproval"),
            }
        )
        if from_git is not None:
            found.append(from_git)
        if len(found) < 2:
            return found[0] if found else None
        return CombinedPolicy(tuple(found))

    # -- namespace ---------------------------------------------------------------------------

    def resolve(self, path: str, cwd: str | None = None) -> Target:
        """Relative POSIX paths (absolute ones inside the repository are accepted too), each
        normalised as the Workspace's edge does (``Plumbing.normalize``), once."""
        return resolve_plain(self, path, cwd, None, self.workspace.plumbing.normalize)

    # -- reading -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _view(self, key: str) -> Iterator[tuple[Workspace, str, bool]]:
        """(the Workspace holding ``key``, its path there, whether disk is its content), with
        that Workspace's calls and lands held off."""
        ws = self.workspace
        address = parse_address(key)
        with ws.plumbing.exclusive():
            if address is not None:
                yield self.family(address), address.path, False
                return
            disk = ws.plumbing.tracks_disk()
            with ws.plumbing.consistent_view():
                yield ws, key, disk

    def read(self, key: str) -> FileRead:
        """See ``Storage.read`` and, for uncommitted content, the module docstring."""
        with self._view(key) as (ws, path, disk):
            store = ws.plumbing.store
            seen = ws.plumbing.view()
            head = seen.head
            ws.plumbing.check_paths(head, [path])
            if disk:
                data, version = ws.plumbing.read_in(seen, path)
            else:
                tree = ws.plumbing.worktree
                filters = tree.filters if tree is not None else None
                data, version = versions.read(store, None, head, path, filters)
            if data is None:
                raise ResourceNotFound(
                    f"{key}: no such file",
                    hint="Check the path; list the files to see what exists.",
                    details={"path": key},
                )
            ident = resource_id(store, head, path) or uuid_like(f"{version}\0{path}\0new")
            return FileRead(data, str(version) if version else "", ident)

    def read_bytes(self, key: str) -> bytes:
        """The bytes of the file at ``key`` (disk content when the branch is checked out)."""
        return self.read(key).data

    def stat(self, key: str) -> Stat | None:
        """See ``Storage.stat``."""
        with self._view(key) as (ws, path, disk):
            if disk and ws.plumbing.worktree is not None:
                full = ws.plumbing.worktree.root / path
                if full.is_dir():
                    return Stat("directory")
                return Stat("file", full.stat().st_size) if full.is_file() else None
            head = ws.plumbing.store.ref_target(ws.branch)
            found = None if head is None else ws.plumbing.store.entry(head, path)
            if found is None or head is None:
                return None
            if found.mode == MODE_TREE:
                return Stat("directory")
            return Stat("file", len(ws.plumbing.store.read(head, path) or b""))

    def list(self, prefix: str = "") -> list[str]:
        """Files on the branch head below ``prefix`` (committed content)."""
        ws = self.workspace
        with ws.plumbing.exclusive():
            head = ws.plumbing.store.ref_target(ws.branch)
            if head is None:
                return []
            base = prefix.rstrip("/") + "/" if prefix else ""
            return sorted(p for p in ws.plumbing.store.files(head) if p.startswith(base))

    # -- writing -----------------------------------------------------------------------------

    def apply(
        self,
        proposal: Proposal,
        *,
        expected_version: Version | None = None,
        review: bool = False,
        before_write: BeforeWrite | None = None,
    ) -> Applied:
        """See ``Storage.apply``: one proposal commit per ref touched, all refs in one ref
        transaction; ``review`` keeps the change on ``refs/heads/gitpatch/<id>``. Plain paths
        go straight to the Workspace; only ``work://`` and ``memory://`` keys take the
        scratch-family code."""
        with self.workspace.plumbing.exclusive():
            if not any(parse_address(p) is not None for p in proposal.paths):
                ws = self._reviewer() if review else self.workspace
                return self._propose(ws, proposal, None, expected_version, review, before_write)
            roots = families.roots(proposal)
            if len(roots) > 1:
                # a review-mode Workspace keeps its ordinary paths for review: such a change
                # is refused like one the policy asks approval for (never landed on the branch)
                kept = review or (None in roots and self.workspace.mode == "review")
                return families.propose_across(
                    self.workspace, self.family, proposal, roots, kept, before_write
                )
            (root,) = roots
            local = families.strip(proposal, root)
            holder = self._holder(root, review)
            return self._propose(holder, local, root, expected_version, review, before_write)

    def _propose(
        self,
        ws: Workspace,
        proposal: Proposal,
        root: Address | None,
        expected_version: Version | None,
        review: bool,
        before_write: BeforeWrite | None,
    ) -> Applied:
        """``proposal`` (paths on ``ws``'s ref) through ``ws.propose``, or the result of the
        call that made the head when this is a retry of it."""
        found = ws.plumbing.replayed(proposal.call) if proposal.call and not review else None
        if found is not None:  # a retry of the call that made the head: its result again
            return dataclasses.replace(applied([(ws.plumbing.store, found, root)]), replayed=True)
        expected = None if expected_version is None else str(expected_version).strip()
        if before_write is not None:
            before_write()
        result = ws.propose(proposal, expected_version=expected)
        return applied([(ws.plumbing.store, result, root)])

    def _holder(self, root: Address | None, review: bool) -> Workspace:
        if root is not None:
            if review:
                raise InvalidArguments(
                    f"{root.family}://{root.root}/ changes cannot be kept for review",
                    hint="Scratch addresses take changes directly; ask for approval of "
                    "ordinary paths only.",
                )
            return self.family(root)
        return self._reviewer() if review else self.workspace

    def family(self, address: Address) -> Workspace:
        """The Workspace (bare view, auto mode) on ``address``'s ref."""
        ref = address.ref
        found = self._families.get(ref)
        if found is None:
            ctx = dataclasses.replace(
                self.workspace.plumbing.context,
                worktree=None,
                mode="auto",
                target=ref,
                branch=ref,
                session=None,
            )
            found = self._families[ref] = Workspace(ctx)
        return found

    def _reviewer(self) -> Workspace:
        ws = self.workspace
        if ws.mode == "review":
            return ws
        if self._review is None:
            ctx = dataclasses.replace(ws.plumbing.context, mode="review", target=ws.branch)
            self._review = Workspace(ctx)
        return self._review
