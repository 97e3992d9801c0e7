"""One proposal across several refs: ordinary paths plus ``work://`` / ``memory://`` roots.

An apply_patch may touch ordinary paths (the Workspace's branch) and scratch addresses
(``refs/gitpatch/work/SESSION``, ``refs/gitpatch/memory/ROOT``) at once. Each ref gets its own
proposal commit, built on its own head by the Workspace's one attempt loop
(``workspace.propose.land``: paths checked, uncommitted disk content recorded first, git's
conversions applied), and every ref and the notes move in ONE ref transaction (one
transition through the one publisher), inside the working tree's journaled land when the
branch is on disk. Either all of it happens or none.

Also here: the helpers that turn family keys (``work://s1/a.md``) into paths on their ref
(``base.applied`` turns them back, in the one ``Applied`` builder). Plain paths never come
here. What this does not do: move a file from one ref to another (refused: a move stays
within one root), or keep such a change for review (refused: scratch addresses take changes
directly).
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from gitpatch.core.model import FileOp, Proposal, UpdateFile
from gitpatch.core.paths import Address, parse_address
from gitpatch.errors import InvalidArguments
from gitpatch.tools.storage.base import Applied, applied
from gitpatch.workspace import Attempt, land, proposal_result

if TYPE_CHECKING:
    from gitpatch.porcelain.workspace import Workspace

__all__ = ["propose_across", "roots", "strip"]

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
        parts.append(
            _Part(
                root, ws, Attempt(ws.plumbing.context, ws.plumbing.normalize_proposal(local), pid)
            )
        )
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
    # main's context publishes: its branch (the ordinary part's) follows on disk
    land(
        main.plumbing.context, [p.attempt for p in parts], proposal.tool, before_write=before_write
    )
    return _applied(parts)


def _applied(parts: Sequence[_Part]) -> Applied:
    shares = []
    for part in parts:
        one = part.attempt
        assert one.built is not None
        kept = {"recorded": one.recorded, "carried": one.kept}
        result = proposal_result(part.ws.plumbing.context, one.built, one.pid, **kept)
        shares.append((part.ws.plumbing.store, result, part.root))
    return applied(shares)
