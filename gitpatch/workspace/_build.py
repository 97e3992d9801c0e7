"""Building a proposal's commit for ``gitpatch.porcelain.workspace``: nothing here moves a ref.

``record_dirty`` commits the disk content of touched files that differ from the branch head, so
the agent's edit applies to what it saw; ``build`` applies the proposal on that base, refuses a
change a person already rejected and writes the proposal commit. The workspace then publishes
it (ref, note and disk together). ``Context`` is what one Workspace call works on (repository,
working tree, mode, branches), the commit built in it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Literal

import pygit2

from gitpatch import engine
from gitpatch.checkout import indexfile
from gitpatch.checkout import preflight as checkout
from gitpatch.checkout.filters import ATTRIBUTES_FILE, Filters, changes_attributes
from gitpatch.checkout.worktree import WorkingTree
from gitpatch.core.budget import checkpoint
from gitpatch.core.model import Changeset, FileChange, Proposal
from gitpatch.core.spliced import as_bytes
from gitpatch.errors import (
    DirtyWorktree,
    GitpatchError,
    NoChange,
    PayloadTooLarge,
    ProposalRejected,
)
from gitpatch.store import Store, git_errors
from gitpatch.workspace import _carry as carry
from gitpatch.workspace import _guards as guards
from gitpatch.workspace.results import (
    HIDDEN_NOTE,
    FileResult,
    Mode,
    ProposalResult,
    edit_results,
    file_results,
    summary,
)
from gitpatch.workspace.sessions import PROPOSAL_PREFIX, REJECTED_PREFIX

__all__ = [
    "Built",
    "Context",
    "Dirty",
    "build",
    "carried",
    "commit_changes",
    "proposal_files",
    "proposal_result",
    "record_dirty",
    "refuse_rejected",
]


#: What a call does with uncommitted changes to the files it edits: ``carry`` (the default)
#: merges the change into them and leaves them uncommitted, ``record`` commits them first,
#: ``refuse`` refuses.
Dirty = Literal["carry", "record", "refuse"]


@dataclasses.dataclass(frozen=True)
class Context:
    """The repository, its working tree (None when bare), the mode and the branches in play.

    ``target`` is the branch proposals are meant for (a protected branch when a session is
    used); ``branch`` is the one they are built on and, in auto mode, land on; ``session`` is
    the session name when auto mode lands on ``gitpatch/session/<name>``.
    """

    store: Store
    worktree: WorkingTree | None
    mode: Mode
    target: str
    branch: str
    session: str | None
    protected: frozenset[str]
    author: str
    dirty: Dirty = "carry"
    allow_ignored: bool = False
    #: Who the agent is (the MCP client's name, else ``agent``): agent commits' author.
    agent: str = "agent"
    #: Who the notes name as the proposals' author, when not the agent (``author=`` given).
    proposer: str = ""
    #: The largest file a proposal may leave (None: no limit): ``payload_too_large`` above.
    max_file_bytes: int | None = None

    def proposed_by(self) -> str:
        """``Name <email>`` of whoever makes the proposals: the ``author`` the Workspace was
        opened with, else the agent (as its commits' author), never the person by default."""
        if self.proposer:
            return self.proposer
        sig = self.agent_signature()
        return f"{sig.name} <{sig.email}>"

    def agent_signature(self) -> pygit2.Signature:
        """The author of the agent's commits: the agent and its session, so ``git log``
        tells agent work from a person's (the person stays the committer)."""
        label = self.session_label()
        name = f"{self.agent} (gitpatch session {label})"
        email = "".join(c if c.isalnum() or c in "-_." else "-" for c in label)
        try:
            with git_errors("name the agent"):
                return pygit2.Signature(name, f"{email}@gitpatch.invalid")
        except GitpatchError:  # a name libgit2 refuses
            return pygit2.Signature("agent (gitpatch)", "agent@gitpatch.invalid")

    def session_label(self) -> str:
        """What the ``Gitpatch-Session`` trailer names: the session, else the agent."""
        return self.session or self.agent

    def tracks_disk(self) -> bool:
        """True when the working tree shows ``branch`` (so disk content is the base)."""
        return self.worktree is not None and self.store.head_branch() == self.branch


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
    by: tuple[pygit2.Signature, str] | None = None,
    *,
    max_bytes: int | None = None,
) -> Built:
    """Apply the proposal on ``base``, build its commit; move no ref.

    With ``filters`` (a working tree's conversions) the edits apply to each converted file as
    checkout writes it, and the result is stored as ``git add`` would store it. ``by`` (the
    agent's signature, its session) authors the commit and names the session in a trailer.
    A file left larger than ``max_bytes`` is ``payload_too_large``, before any object is
    written.
    """
    changeset = engine.apply(proposal, guards.Snapshot(store, base, filters))
    if max_bytes is not None:
        _check_sizes(changeset, max_bytes)
    if filters is not None and changes_attributes(changeset.paths):
        # stored as `git add` would store them once the new attribute files are in place
        with filters.under(_attributes_after(store, base, changeset)) as after:
            changeset = _cleaned(changeset, after)
    elif filters is not None:
        changeset = _cleaned(changeset, filters)
    commit, print_ = commit_changes(store, proposal, base, changeset, pid, revision, by)
    land = tuple(dict.fromkeys([*recorded, *changeset.paths]))
    return Built(commit, base, changeset, print_, land)


def _check_sizes(changeset: Changeset, limit: int) -> None:
    """``payload_too_large`` when a file the changeset leaves is over ``limit`` bytes."""
    for change in changeset.changes:
        size = len(change.content) if change.content is not None else 0
        if size > limit:
            raise PayloadTooLarge(
                f"{change.path} would be {size} bytes, over the limit of {limit} bytes for "
                "one written file",
                hint="Nothing was written. Keep the file under the limit (split it into "
                "smaller files), or ask the person to raise it (gitpatch serve "
                "--max-file-bytes).",
                details={"path": change.path, "size": size, "limit": limit},
            )


def commit_changes(
    store: Store,
    proposal: Proposal,
    base: pygit2.Oid | None,
    changeset: Changeset,
    pid: str,
    revision: bool,
    by: tuple[pygit2.Signature, str] | None,
) -> tuple[pygit2.Oid, str]:
    """The commit of an applied ``changeset`` on ``base`` and its fingerprint; move no ref.

    ``.gitmodules`` content is checked and a change a person rejected is refused
    (``proposal_rejected``, with their reasons) unless ``revision``. ``build`` and the hosted
    service's direct writes both commit through here. The call's budget is checked first
    (``gitpatch.core.budget``): a call over it writes nothing.
    """
    checkpoint()
    guards.check_gitmodules(changeset)
    print_ = guards.fingerprint(changeset)
    refuse_rejected(store, print_, revision)
    tree = store.build_tree(base, changeset.changes)
    _refuse_same_modes(store, base, tree, changeset)
    return _commit(store, proposal, base, tree, changeset, pid, by), print_


def _refuse_same_modes(
    store: Store, base: pygit2.Oid | None, tree: pygit2.Oid, changeset: Changeset
) -> None:
    """``no_change`` for a mode change (a diff's ``new mode``) the files already have: the
    engine sees bytes only, so this is the first place that can tell."""
    modes = {c.path: c.mode for c in changeset.changes if c.mode is not None}
    if modes and base is not None and tree == store.tree_of(base):
        said = ", ".join(f"{path} {mode:o}" for path, mode in modes.items())
        raise NoChange(
            f"the files already have the modes the change gives ({said})",
            hint="Nothing was changed; there is nothing left to do.",
            details={"paths": list(modes)},
        )


def refuse_rejected(store: Store, print_: str, revision: bool) -> None:
    """Refuse a change with fingerprint ``print_`` a person rejected (``proposal_rejected``,
    with their reasons), unless it is a ``revision``."""
    rejected = None if revision else store.ref_target(REJECTED_PREFIX + print_)
    if rejected is not None:
        raise _rejected(store, rejected, print_)


def _commit(
    store: Store,
    proposal: Proposal,
    base: pygit2.Oid | None,
    tree: pygit2.Oid,
    changeset: Changeset,
    pid: str,
    by: tuple[pygit2.Signature, str] | None,
) -> pygit2.Oid:
    tool = proposal.tool or "propose"
    trailers = {"Gitpatch-Proposal": pid, "Gitpatch-Tool": tool}
    if by is not None:
        trailers["Gitpatch-Session"] = by[1]
    return store.commit(
        tree,
        [base] if base is not None else [],
        proposal.message or summary(tool, proposal_files(store, base, changeset)),
        trailers,
        author=by[0] if by is not None else None,
    )


def carried(
    store: Store,
    proposal: Proposal,
    built: Built,
    head: pygit2.Oid | None,
    pid: str,
    by: tuple[pygit2.Signature, str] | None,
) -> Built:
    """``built`` (made on the disk content the agent saw) as a commit on ``head`` holding only
    the agent's change, carried by 3-way merges (``carry.onto_branch``); its land then merges
    it into the person's uncommitted work on disk."""
    assert built.base is not None  # a recorded base exists whenever something was carried
    changes = carry.onto_branch(store, built.base, head, built.changeset)
    tree = store.build_tree(head, changes)
    commit = _commit(store, proposal, head, tree, built.changeset, pid, by)
    return Built(commit, head, built.changeset, built.fingerprint, built.changeset.paths)


def _attributes_after(
    store: Store, base: pygit2.Oid | None, changeset: Changeset
) -> dict[str, bytes]:
    """Every ``.gitattributes`` file once ``changeset`` is applied on ``base`` (empty for one
    it deletes, so git does not fall back to the index's copy)."""
    names = [p for p in (store.files(base) if base is not None else ()) if _is_attributes(p)]
    out = {p: store.read(base, p) or b"" for p in names} if base is not None else {}
    for change in changeset.changes:
        if _is_attributes(change.path):
            out[change.path] = as_bytes(change.content or b"")
    return out


def _is_attributes(path: str) -> bool:
    return path.rsplit("/", 1)[-1] == ATTRIBUTES_FILE


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
        if c.content is None or not filters.converts(c.path)  # to_blob would keep it as is
        else dataclasses.replace(c, content=filters.to_blob(c.path, as_bytes(c.content)))
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
    checkout.check_assumed(worktree, paths)  # local changes git hides are never recorded
    modified = worktree.modified(str(head) if head else None, paths)
    if not modified:
        return head, []
    if dirty == "carry":
        checkout.check_staged(store, worktree, head, modified)
    if dirty == "refuse":
        raise DirtyWorktree(
            f"{', '.join(modified)} has uncommitted changes on disk",
            hint="Commit or discard those changes first, or open the Workspace with "
            "dirty='carry' to have the change merged into them.",
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


def _replacements(files: Sequence[FileResult]) -> str:
    """Words for a directory replaced by a file, or a file by a directory, in one change."""
    added = [f.path for f in files if f.action != "delete"]
    deleted = [f.path for f in files if f.action == "delete"]
    said = [
        f" The directory {p}/ is replaced by the file {p}."
        for p in added
        if any(d.startswith(p + "/") for d in deleted)
    ]
    said += [
        f" The file {p} is replaced by the directory {p}/."
        for p in deleted
        if any(a.startswith(p + "/") for a in added)
    ]
    return "".join(said)


def proposal_result(
    ctx: Context,
    built: Built,
    pid: str,
    *,
    recorded: Sequence[str] = (),
    carried: Sequence[str] = (),
) -> ProposalResult:
    """What ``propose`` returns once ``built`` is published in ``ctx``'s mode; ``recorded``
    and ``carried`` are the person's files whose uncommitted work was committed first, or
    had the change merged in and stays uncommitted."""
    holder = ctx.branch if ctx.mode == "auto" else PROPOSAL_PREFIX + pid
    files = proposal_files(ctx.store, built.base, built.changeset)
    names = ", ".join(f.path for f in files)
    # review mode: the session's own worktree is named by review.checkpoints, when it has one
    auto_bench = ctx.session and ctx.worktree is not None and ctx.mode == "auto"
    where = str(ctx.worktree.root) if auto_bench and ctx.worktree is not None else ""
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
        if where:
            message += f" The session's worktree is {where}: run your tests there."
    else:
        message = f"Applied {names} on {holder}."
    message += _replacements(files)
    message += _uncommitted_note(recorded, carried, ctx.mode == "review")
    hidden = _hidden(ctx, built.changeset)
    if hidden:
        message += f" {HIDDEN_NOTE.format(files=', '.join(hidden))}"
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
        worktree=where,
        recorded=list(recorded),
        carried=list(carried),
        hidden=hidden,
    )


def _hidden(ctx: Context, changeset: Changeset) -> list[str]:
    """The files an auto land wrote to the commit and the index only: skip-worktree entries
    that have a file of their own on disk (a sparse checkout's absent files are expected)."""
    tree = ctx.worktree
    if ctx.mode != "auto" or tree is None or not ctx.tracks_disk():
        return []
    written = [c.path for c in changeset.changes if c.content is not None]
    bits = indexfile.skipped(tree.gitdir, tree.root, written)
    return [p for p in written if p in bits and os.path.lexists(tree.root / p)]


def _uncommitted_note(recorded: Sequence[str], carried: Sequence[str], review: bool) -> str:
    """The sentence that tells what happened to the person's uncommitted work, if any."""
    if carried and review:
        return (
            f" {', '.join(carried)} had uncommitted changes: the proposal holds only this "
            "change; approving it merges it into the person's work, which stays uncommitted."
        )
    if recorded:
        return (
            f" The person's uncommitted changes to {', '.join(recorded)} were first recorded "
            "in a commit of their own (dirty='record')."
        )
    if carried:
        return (
            f" {', '.join(carried)} had uncommitted changes: the commit holds only this "
            "change, and the person's work stays uncommitted on disk with it merged in."
        )
    return ""
