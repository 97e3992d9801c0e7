"""One proposal across several refs: ordinary paths plus ``work://`` / ``memory://`` roots.

An apply_patch may touch ordinary paths (the Workspace's branch) and scratch addresses
(``refs/gitpatch/work/SESSION``, ``refs/gitpatch/memory/ROOT``) at once. Each ref gets its own
proposal commit, built on its own head with the Workspace's rules (paths checked, uncommitted
disk content recorded first); then every ref and the notes move in ONE ref transaction, inside
the working tree's journaled land when the branch is on disk. Either all of it happens or none.

What this does not do: move a file from one ref to another (refused: a move stays within one
root), or keep such a change for review (refused: scratch addresses take changes directly).
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pygit2

from gitpatch import guards
from gitpatch._workspace_build import Built, build, proposal_files
from gitpatch.errors import ConcurrentUpdate, InvalidArguments
from gitpatch.model import FileOp, Proposal, UpdateFile
from gitpatch.paths import Address, parse_address
from gitpatch.results import edit_results
from gitpatch.storage import Applied
from gitpatch.store import NOTES_REF
from gitpatch.store.notes import notes_update
from gitpatch.store.refs import RefUpdate, backoff

if TYPE_CHECKING:
    from gitpatch._workspace_storage import WorkspaceStorage
    from gitpatch.workspace import Workspace

__all__ = ["propose_across"]

#: Lost compare-and-swaps absorbed before ``concurrent_update``.
MAX_ATTEMPTS = 30


@dataclasses.dataclass
class _Part:
    """The share of the proposal one ref takes."""

    root: Address | None
    ws: Workspace
    proposal: Proposal
    head: pygit2.Oid | None = None
    first: pygit2.Oid | None = None
    built: Built | None = None


def _root_of(path: str) -> tuple[str, str] | None:
    address = parse_address(path)
    return None if address is None else (address.family, address.root)


def _split(
    storage: WorkspaceStorage, proposal: Proposal, roots: Sequence[Address | None]
) -> list[_Part]:
    from gitpatch._workspace_storage import _strip

    parts: list[_Part] = []
    for root in roots:
        key = None if root is None else (root.family, root.root)
        ops: list[FileOp] = []
        for op in proposal.operations:
            if _root_of(op.path) != key:
                continue
            if isinstance(op, UpdateFile) and op.move_to and _root_of(op.move_to) != key:
                raise InvalidArguments(
                    f"cannot move {op.path} to {op.move_to}: a move stays within one root",
                    hint="Add the file at the new address and delete the old one instead.",
                    details={"path": op.path, "move_to": op.move_to},
                )
            ops.append(op)
        local = _strip(dataclasses.replace(proposal, operations=tuple(ops)), root)
        holder = storage.workspace if root is None else storage._family(root)
        parts.append(_Part(root, holder, local))
    return parts


def propose_across(
    storage: WorkspaceStorage,
    proposal: Proposal,
    roots: Sequence[Address | None],
    review: bool,
    gate: Callable[[], None] | None,
) -> Applied:
    """Build one commit per ref and move them all in one transaction (see the module doc)."""
    if review:
        raise InvalidArguments(
            "a change that touches work:// or memory:// addresses cannot be kept for review",
            hint="Split the call: scratch addresses in one, reviewed paths in another.",
        )
    parts = _split(storage, proposal, roots)
    for part in parts:
        part.proposal = part.ws._normalize_proposal(part.proposal)
    pid = secrets.token_hex(6)
    for attempt in range(MAX_ATTEMPTS):
        for part in parts:
            _build(part, pid, first=attempt == 0)
        if gate is not None and attempt == 0:
            gate()
        try:
            _publish(storage.workspace, parts, pid, proposal.tool)
        except ConcurrentUpdate as exc:
            if exc.details.get("reason") == "locked" or attempt == MAX_ATTEMPTS - 1:
                raise
            backoff(attempt, cap=0.05)
            continue
        return _applied(parts, pid)
    raise AssertionError("unreachable")


def _build(part: _Part, pid: str, first: bool) -> None:
    """Build ``part``'s commit on its ref's current head; after a lost race, refuse when
    another writer changed one of its paths (else the proposal is simply rebuilt)."""
    ws = part.ws
    with ws._consistent_view():
        head = ws.store.ref_target(ws.branch)
        if first:
            ws._check_paths(head, part.proposal.paths)
            part.first = head
        guards.check_unchanged(
            ws.store,
            part.first,
            head,
            part.proposal.paths,
            since_version=False,
            branch=ws.branch,
        )
        base, recorded = ws._record_dirty(head, part.proposal.paths, pid)
    part.head = head
    part.built = build(ws.store, part.proposal, base, recorded, pid, False)


def _publish(main: Workspace, parts: Sequence[_Part], pid: str, tool: str) -> None:
    store = main.store
    notes: dict[pygit2.Oid, dict[str, Any]] = {}
    updates: list[RefUpdate] = []
    for part in parts:
        assert part.built is not None
        notes[part.built.commit] = part.ws._note(part.built, pid, tool, False)
        updates.append((part.ws.branch, part.built.commit, part.head))

    def move() -> None:
        for attempt in range(MAX_ATTEMPTS):
            changes = {c: _constant(n) for c, n in notes.items()}
            note_ref, _ = notes_update(store, changes)
            try:
                store.update_refs([*updates, note_ref], f"gitpatch: {tool or 'propose'} {pid}")
                return
            except ConcurrentUpdate as exc:
                if exc.details.get("ref") != NOTES_REF or attempt == MAX_ATTEMPTS - 1:
                    raise
                backoff(attempt, cap=0.05)

    disk = next((p for p in parts if p.root is None and p.ws._tracks_disk()), None)
    if disk is None or main.mode != "auto":
        move()
        return
    assert main.worktree is not None and disk.built is not None
    built = disk.built
    main.worktree.land(
        str(built.base) if built.base is not None else None,
        str(built.commit),
        built.land_paths,
        move,
        ref=main.branch,
        verify=True,
        notes={str(c): (None, n) for c, n in notes.items()},
    )


def _constant(note: dict[str, Any]) -> Callable[[dict[str, Any] | None], dict[str, Any]]:
    return lambda _old: note


def _key(path: str, root: Address | None) -> str:
    return path if root is None else f"{root.family}://{root.root}/{path}"


def _applied(parts: Sequence[_Part], pid: str) -> Applied:
    from gitpatch._workspace_storage import _edit_report, _rename, resource_id

    files, edits, ids = [], [], {}
    for part in parts:
        assert part.built is not None
        store = part.ws.store
        for f in proposal_files(store, part.built.base, part.built.changeset):
            files.append(_rename(f, part.root))
            if f.action != "delete":
                ident = resource_id(store, part.built.commit, f.path)
                if ident is not None:
                    ids[_key(f.path, part.root)] = ident
        edits += [_edit_report(e, part.root) for e in edit_results(part.built.changeset)]
    main = next((p for p in parts if p.root is None), parts[0])
    assert main.built is not None
    ordinary = main.root is None
    return Applied(
        version=str(main.built.commit),
        files=tuple(files),
        edits=tuple(edits),
        ids=ids,
        proposal_id=pid,
        branch=main.ws.branch if ordinary else None,
        target=main.ws.target if ordinary else None,
        versions={p.ws.branch: str(p.built.commit) for p in parts if p.built is not None},
    )
