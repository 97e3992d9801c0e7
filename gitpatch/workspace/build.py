"""Building a proposal's commit for ``gitpatch.workspace.api``: nothing here moves a ref.

``record_dirty`` commits the disk content of touched files that differ from the branch head, so
the agent's edit applies to what it saw; ``build`` applies the proposal on that base, refuses a
change a person already rejected and writes the proposal commit. The workspace then publishes
it (ref, note and disk together).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pygit2

from gitpatch import engine
from gitpatch.checkout import preflight as checkout
from gitpatch.checkout.filters import Filters
from gitpatch.checkout.worktree import WorkingTree
from gitpatch.core.model import Changeset, FileChange, Proposal
from gitpatch.errors import DirtyWorktree, ProposalRejected
from gitpatch.store import Store
from gitpatch.workspace import guards
from gitpatch.workspace.context import Context, Dirty
from gitpatch.workspace.results import (
    FileResult,
    ProposalResult,
    edit_results,
    file_results,
    summary,
)
from gitpatch.workspace.sessions import PROPOSAL_PREFIX, REJECTED_PREFIX

__all__ = ["Built", "Dirty", "build", "proposal_files", "proposal_result", "record_dirty"]

#: What to do with uncommitted changes to the files a proposal touches.


@dataclasses.dataclass(frozen=True)
class Built:
    """A proposal commit ready to publish: nothing points at it yet."""

    commit: pygit2.Oid
    base: pygit2.Oid | None
    changeset: Changeset
    fingerprint: str
    land_paths: tuple[str, ...]


def build(
    store: Store,
    proposal: Proposal,
    base: pygit2.Oid | None,
    recorded: Sequence[str],
    pid: str,
    revision: bool,
    filters: Filters | None = None,
) -> Built:
    """Apply the proposal on ``base``, build its commit; move no ref.

    With ``filters`` (a working tree's conversions) the edits apply to each converted file as
    checkout writes it, and the result is stored as ``git add`` would store it.
    """
    changeset = engine.apply(proposal, guards.Snapshot(store, base, filters))
    if filters is not None:
        changeset = _cleaned(changeset, filters)
    guards.check_gitmodules(changeset)
    print_ = guards.fingerprint(changeset)
    rejected = None if revision else store.ref_target(REJECTED_PREFIX + print_)
    if rejected is not None:
        raise _rejected(store, rejected, print_)
    tree = store.build_tree(base, changeset.changes)
    tool = proposal.tool or "propose"
    commit = store.commit(
        tree,
        [base] if base is not None else [],
        proposal.message or summary(tool, proposal_files(store, base, changeset)),
        {"Gitpatch-Proposal": pid, "Gitpatch-Tool": tool},
    )
    land = tuple(dict.fromkeys([*recorded, *changeset.paths]))
    return Built(commit, base, changeset, print_, land)


def _rejected(store: Store, commit: pygit2.Oid, print_: str) -> ProposalRejected:
    """The refusal of a change a person rejected: which proposal, who, why, and what works."""
    note = store.read_note(commit) or {}
    pid = str(note.get("id") or "")
    by = f" by {note['rejected_by']}" if note.get("rejected_by") else ""
    why = f": {note['reason']}" if note.get("reason") else ""
    return ProposalRejected(
        f"a person already rejected exactly this change (proposal {pid or commit}{by}{why})",
        hint="Do not replay a rejected change; change your approach. If the reviewer asked for "
        f"exactly this change, send it again with revises='{pid}' (Workspace API: "
        f"revises='{pid}' or revision=True).",
        details={"fingerprint": print_, "proposal_id": pid, "reason": note.get("reason", "")},
    )


def _cleaned(changeset: Changeset, filters: Filters) -> Changeset:
    changes = tuple(
        c
        if c.content is None
        else dataclasses.replace(c, content=filters.to_blob(c.path, c.content))
        for c in changeset.changes
    )
    return dataclasses.replace(changeset, changes=changes)


def record_dirty(
    store: Store,
    worktree: WorkingTree,
    head: pygit2.Oid | None,
    paths: Sequence[str],
    pid: str,
    dirty: Dirty,
) -> tuple[pygit2.Oid | None, list[str]]:
    """Commit the disk content of touched paths that differ from ``head`` (not published).

    A path with unmerged index entries (a conflict waiting for a person) is refused first.
    """
    checkout.check_unmerged(worktree, paths)
    modified = worktree.modified(str(head) if head else None, paths)
    if not modified:
        return head, []
    if dirty == "refuse":
        raise DirtyWorktree(
            f"{', '.join(modified)} has uncommitted changes on disk",
            hint="Commit or discard those changes first, or open the Workspace with "
            "dirty='record' to have them recorded in a commit of their own.",
            details={"paths": modified},
        )
    changes = []
    for path in modified:
        data = worktree.read(path)
        if data is not None:
            data = worktree.filters.to_blob(path, data)
        if data is None and (head is None or store.entry(head, path) is None):
            continue
        changes.append(FileChange(path, data, mode=worktree.disk_mode(path)))
    if not changes:
        return head, []
    tree = store.build_tree(head, changes)
    record = store.commit(
        tree,
        [head] if head is not None else [],
        f"Record uncommitted changes to {', '.join(modified)}",
        {"Gitpatch-Record": pid},
    )
    return record, modified


def proposal_files(store: Store, base: pygit2.Oid | None, changeset: Changeset) -> list[FileResult]:
    """One ``FileResult`` per change of ``changeset``, an add or an update as ``base`` tells."""
    return file_results(changeset, lambda p: guards.blob(store, base, p) is not None)


def proposal_result(ctx: Context, built: Built, pid: str) -> ProposalResult:
    """What ``propose`` returns once ``built`` is published in ``ctx``'s mode."""
    holder = ctx.branch if ctx.mode == "auto" else PROPOSAL_PREFIX + pid
    files = proposal_files(ctx.store, built.base, built.changeset)
    names = ", ".join(f.path for f in files)
    if ctx.mode == "review":
        message = (
            f"Proposed {names} on {holder} for {ctx.target}; nothing on disk changes "
            "until a person approves it."
        )
    elif ctx.session is not None:
        message = (
            f"Applied {names} on session branch {holder} ({ctx.target} is protected: a "
            f"person merges the session with approve('{ctx.session}'))."
        )
    else:
        message = f"Applied {names} on {holder}."
    return ProposalResult(
        proposal_id=pid,
        version=str(built.commit),
        branch=holder,
        target=ctx.target,
        mode=ctx.mode,
        status="applied" if ctx.mode == "auto" else "proposed",
        base=str(built.base) if built.base is not None else "",
        files=files,
        edits=edit_results(built.changeset),
        message=message,
    )
