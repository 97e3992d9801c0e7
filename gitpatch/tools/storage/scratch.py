"""One proposal across several refs: ordinary paths plus ``work://`` / ``memory://`` roots.

An apply_patch may touch ordinary paths (the Workspace's branch) and scratch addresses
(``refs/gitpatch/work/SESSION``, ``refs/gitpatch/memory/ROOT``) at once. Each ref gets its own
proposal commit, built on its own head by the Workspace's one attempt loop
(``workspace.propose``: paths checked, uncommitted disk content recorded first, git's
conversions applied); then every ref and the notes move in ONE ref transaction (one
``Transition`` through the one publisher), inside the working tree's journaled land when the
branch is on disk. Either all of it happens or none.

Also here: the helpers that turn family keys (``work://s1/a.md``) into paths on their ref and
back. What this does not do: move a file from one ref to another (refused: a move stays
within one root), or keep such a change for review (refused: scratch addresses take changes
directly).
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pygit2

from gitpatch.core.model import EditReport, FileOp, Proposal, UpdateFile
from gitpatch.core.paths import Address, parse_address
from gitpatch.errors import InvalidArguments
from gitpatch.tools.storage.base import Applied
from gitpatch.tools.storage.resource_ids import resource_id
from gitpatch.workspace.build import proposal_files
from gitpatch.workspace.propose import Attempt, retried
from gitpatch.workspace.publisher import Transition, publish
from gitpatch.workspace.results import EditResult, FileResult, edit_results

if TYPE_CHECKING:
    from gitpatch.porcelain.workspace import Workspace

__all__ = ["edit_report", "key", "propose_across", "rename", "roots", "strip"]

# -- keys ----------------------------------------------------------------------------------------


def _root_key(path: str) -> tuple[str, str] | None:
    address = parse_address(path)
    return None if address is None else (address.family, address.root)


def roots(proposal: Proposal) -> list[Address | None]:
    """The ref groups a proposal touches: None for ordinary paths, else one Address per root."""
    seen: dict[tuple[str, str] | None, Address | None] = {}
    for path in proposal.paths:
        address = parse_address(path)
        seen.setdefault(_root_key(path), address)
    return list(seen.values())


def _local(path: str) -> str:
    address = parse_address(path)
    return path if address is None else address.path


def strip(proposal: Proposal, root: Address | None) -> Proposal:
    """The proposal with family addresses turned into paths on their ref."""
    if root is None:
        return proposal
    ops: list[FileOp] = []
    for op in proposal.operations:
        new = dataclasses.replace(op, path=_local(op.path))
        if isinstance(new, UpdateFile) and new.move_to is not None:
            new = dataclasses.replace(new, move_to=_local(new.move_to))
        ops.append(new)
    return dataclasses.replace(proposal, operations=tuple(ops))


def key(path: str, root: Address | None) -> str:
    """A path on ``root``'s ref as the storage key (``work://s1/path``)."""
    return path if root is None else f"{root.family}://{root.root}/{path}"


def rename(f: FileResult, root: Address | None) -> FileResult:
    """A file result with its paths as storage keys."""
    moved = None if f.moved_from is None else key(f.moved_from, root)
    return FileResult(path=key(f.path, root), action=f.action, moved_from=moved)


def edit_report(e: EditResult, root: Address | None) -> EditReport:
    """An edit result with its path as a storage key."""
    return EditReport(key(e.path, root), e.index, e.start_line, e.end_line, e.level)


# -- proposing across refs -------------------------------------------------------------------


@dataclasses.dataclass
class _Part:
    """The share of the proposal one ref takes, built by the Workspace's one attempt loop."""

    root: Address | None
    ws: Workspace
    attempt: Attempt


def _split(
    main: Workspace,
    holder: Callable[[Address], Workspace],
    proposal: Proposal,
    groups: Sequence[Address | None],
    pid: str,
) -> list[_Part]:
    parts: list[_Part] = []
    for root in groups:
        wanted = None if root is None else (root.family, root.root)
        ops: list[FileOp] = []
        for op in proposal.operations:
            if _root_key(op.path) != wanted:
                continue
            if isinstance(op, UpdateFile) and op.move_to and _root_key(op.move_to) != wanted:
                raise InvalidArguments(
                    f"cannot move {op.path} to {op.move_to}: a move stays within one root",
                    hint="Add the file at the new address and delete the old one instead.",
                    details={"path": op.path, "move_to": op.move_to},
                )
            ops.append(op)
        ws = main if root is None else holder(root)
        local = strip(dataclasses.replace(proposal, operations=tuple(ops)), root)
        parts.append(_Part(root, ws, Attempt(ws.context, ws.normalize_proposal(local), pid)))
    return parts


def propose_across(
    main: Workspace,
    holder: Callable[[Address], Workspace],
    proposal: Proposal,
    groups: Sequence[Address | None],
    review: bool,
    before_write: Callable[[], None] | None,
) -> Applied:
    """Build one commit per ref and move them all in one transaction (see the module doc);
    ``holder(root)`` gives the Workspace on a family root's ref."""
    if review:
        raise InvalidArguments(
            "a change that touches work:// or memory:// addresses cannot be kept for review",
            hint="Split the call: scratch addresses in one, reviewed paths in another.",
        )
    parts = _split(main, holder, proposal, groups, secrets.token_hex(6))
    called: list[bool] = []

    def attempt() -> Applied:
        for part in parts:
            part.attempt.build()
        if before_write is not None and not called:
            before_write()
            called.append(True)
        _publish(main, parts, proposal.tool)
        return _applied(parts)

    return retried(attempt, main.branch)


def _constant(note: dict[str, Any]) -> Callable[[dict[str, Any] | None], dict[str, Any]]:
    return lambda _old: note


def _publish(main: Workspace, parts: Sequence[_Part], tool: str) -> None:
    """Every part's ref and note in one transition; the disk follows the ordinary part."""
    notes: dict[pygit2.Oid, Callable[[dict[str, Any] | None], dict[str, Any]]] = {}
    refs = []
    checkout = None
    land: tuple[str, ...] | None = None
    checked = True  # False: the ordinary part was carried onto a person's uncommitted work
    for part in parts:
        built = part.attempt.built
        assert built is not None
        notes[built.commit] = _constant(part.attempt.note(tool))
        refs.append((part.ws.branch, built.commit, part.attempt.head))
        if part.root is None and main.mode == "auto":
            checkout = (main.branch, built.base, built.commit)
            land = built.land_paths
            checked = not part.attempt.kept
    step = Transition(
        refs=tuple(refs),
        notes=notes,
        message=f"gitpatch: {tool or 'propose'} {parts[0].attempt.pid}",
        checkout=checkout,
        paths=land,
        disk_checked=checked,
    )
    publish(main.context, step)


def _applied(parts: Sequence[_Part]) -> Applied:
    files, edits, ids = [], [], {}
    for part in parts:
        built = part.attempt.built
        assert built is not None
        for f in proposal_files(part.ws.store, built.base, built.changeset):
            files.append(rename(f, part.root))
            ident = resource_id(part.ws.store, built.commit, f.path)
            if f.action != "delete" and ident is not None:
                ids[key(f.path, part.root)] = ident
        edits += [edit_report(e, part.root) for e in edit_results(built.changeset)]
    main = next((p for p in parts if p.root is None), parts[0])
    assert main.attempt.built is not None
    ordinary = main.root is None
    return Applied(
        version=str(main.attempt.built.commit),
        files=tuple(files),
        edits=tuple(edits),
        ids=ids,
        proposal_id=main.attempt.pid,
        branch=main.ws.branch if ordinary else None,
        target=main.ws.target if ordinary else None,
        versions={
            p.ws.branch: str(p.attempt.built.commit) for p in parts if p.attempt.built is not None
        },
        # what a plain Workspace result says too: the session's own worktree, and the person's
        # uncommitted work the ordinary part recorded or carried
        worktree=_session_worktree(main.ws) if ordinary else None,
        recorded=tuple(main.attempt.recorded) if ordinary else (),
        carried=tuple(main.attempt.kept) if ordinary else (),
    )


def _session_worktree(ws: Workspace) -> str | None:
    tree = ws.worktree
    return str(tree.root) if ws.session and tree is not None else None
