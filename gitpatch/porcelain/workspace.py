"""The public API: a Workspace turns proposals into commits and lands them, safely.

``Workspace.open(path, mode)`` picks the branch proposals target. Each ``propose`` builds one
commit in the object store on top of the branch head (after recording any uncommitted content
of the touched files, so the agent's edit applies to what it saw), then:

- ``auto``: moves the branch by compare-and-swap and writes only the changed paths to disk
  through ``WorkingTree.land``; a protected branch is never moved, the change lands on a
  session branch ``gitpatch/session/<name>`` started at its head instead, checked out in the
  session's own linked worktree once one is needed (until then the session lands on its
  branch in the object store alone, see ``review.workbench``);
- ``review``: creates ``refs/heads/gitpatch/<id>`` and leaves the working tree alone.

Losing the compare-and-swap to another writer re-reads the head: if a touched file changed,
the caller gets ``resource_conflict``; otherwise the proposal is rebuilt on the new head. Every
error leaves no ref, note, file or index entry behind: nothing moves until everything is built.

The Workspace is the front door, not the machinery: building commits, publishing them and
landing them on disk live in ``gitpatch.checkout``, the review lifecycle in ``workspace.review``.
It never talks to a user (no terminal, no click, no MCP): front ends map its errors.
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from gitpatch.checkout.worktree import WorkingTree
from gitpatch.core.model import Proposal
from gitpatch.core.text import Document
from gitpatch.errors import (
    InvalidArguments,
    ResourceNotFound,
)
from gitpatch.formats import apply_patch, detect, patch_resource, search_replace, unified_diff
from gitpatch.porcelain._plumbing import Plumbing, serialized
from gitpatch.review import (
    amend,
    checkpoints,
    checks,
    commands,
    feedback,
    lifecycle,
    partial,
    queue,
    workbench,
    worktrees,
)
from gitpatch.review import sessions as session_admin
from gitpatch.store import Store
from gitpatch.workspace import Attempt, Context, Dirty, guards, land, versions
from gitpatch.workspace.config import settings
from gitpatch.workspace.results import (
    CheckReport,
    Landing,
    Mode,
    ProposalResult,
    ReadResult,
)
from gitpatch.workspace.sessions import (
    DEFAULT_PROTECTED,
    PROPOSAL_PREFIX,
    REJECTED_PREFIX,
    SESSION_PREFIX,
    check_session_name,
    pick_target,
    protected_branches,
    session_target,
    short,
    start_session,
)

if TYPE_CHECKING:
    from gitpatch.review import CheckpointResult, SessionInfo
    from gitpatch.workspace.results import LogEntry, ProposalDetail, ProposalInfo

__all__ = [
    "DEFAULT_PROTECTED",
    "PROPOSAL_PREFIX",
    "REJECTED_PREFIX",
    "SESSION_PREFIX",
    "Workspace",
    "protected_branches",
    "session_target",
]


class Workspace:
    """One repository, one target branch, one mode; its calls run one at a time."""

    def __init__(self, context: Context) -> None:
        self._plumbing = Plumbing(context)

    def _serial(self) -> contextlib.AbstractContextManager[None]:
        return self._plumbing._serial()

    @property
    def _ctx(self) -> Context:
        return self._plumbing.context

    # -- state (read-only; the rest is in ``plumbing.context``) ------------------------------

    @property
    def plumbing(self) -> Plumbing:
        """The steps under these verbs, for the tool storages, the hosted service and the
        doors' internals: the context, the store and working tree, holding calls off,
        reading head and disk together, normalizing paths, the replay check, overlaps,
        notices, the dry run, the session's own worktree (``gitpatch.porcelain._plumbing``)."""
        return self._plumbing

    @property
    def mode(self) -> Mode:
        """``auto`` (land on the branch) or ``review`` (one branch per proposal)."""
        return self._ctx.mode

    @property
    def target(self) -> str:
        """The branch proposals are meant for (a protected branch when a session is used)."""
        return self._ctx.target

    @property
    def branch(self) -> str:
        """The branch proposals are built on and, in auto mode, land on."""
        return self._ctx.branch

    @property
    def session(self) -> str | None:
        """The session name: auto mode lands on ``gitpatch/session/<name>``; in review mode
        the session's proposals stack (see ``gitpatch.workspace.stack``)."""
        return self._ctx.session

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path,
        mode: Mode | None = None,
        branch: str | None = None,
        *,
        dirty: Dirty | None = None,
        session: str | None = None,
        protected: Sequence[str] | None = None,
        author: str | None = None,
        allow_ignored: bool | None = None,
        agent: str | None = None,
        name: str | None = None,
        max_file_bytes: int | None = None,
    ) -> Workspace:
        """Open the repository at ``path`` (with a working tree or bare) in ``mode`` (default:
        ``.gitpatch.toml``'s ``[review] mode``, else ``auto``; ``config.settings`` resolves
        every default here, as the CLI and the MCP server see them).

        ``dirty`` (default: git config ``gitpatch.uncommitted``, else ``carry``) is what a
        change does to a person's uncommitted work in the files it touches: ``carry`` merges
        the change into it and never commits it, ``record`` commits it first (the result and
        the review say so), ``refuse`` refuses. ``agent`` names the agent (its MCP client)
        as the author of its commits. ``max_file_bytes``: a proposal leaving a file larger
        than that is refused (``payload_too_large``) before anything is written.

        ``branch`` defaults to the checked-out one. In auto mode a protected target
        (``protected``, else git config ``gitpatch.protected``, else ``.gitpatch.toml``'s
        ``protected``, default main and master), or an explicit ``session`` name,
        starts or resumes ``gitpatch/session/<name>`` in a linked worktree of its own (see
        ``review.worktrees``): the person's HEAD, index and files are never touched. ``name`` is the
        session name to use when one is needed (a protected target in auto mode), and in
        review mode the session whose proposals stack (``session`` does the same there).
        """
        store = Store.open(path)
        found = settings(store)  # the one resolver: git config, then .gitpatch.toml
        mode = mode or found.mode
        policy = _dirty_policy(mode, dirty or found.dirty)
        guarded = protected if protected is not None else found.protected
        with store.operation():
            ws = cls._open(
                store, mode, branch, policy, session, guarded, author, allow_ignored, name
            )
        if agent:
            ws._plumbing.context = dataclasses.replace(ws._ctx, agent=agent)
        if max_file_bytes is not None:
            ws._plumbing.context = dataclasses.replace(ws._ctx, max_file_bytes=max_file_bytes)
        return ws

    @classmethod
    def _open(
        cls,
        store: Store,
        mode: Mode,
        branch: str | None,
        dirty: Dirty,
        session: str | None,
        protected: Sequence[str] | None,
        author: str | None,
        allow_ignored: bool | None,
        name: str | None = None,
    ) -> Workspace:
        """``open`` once the store is open, under the opening's owner record."""
        worktree = WorkingTree.of(store)
        store.recover(sweep=True)
        if worktree is not None:
            worktree.recover()
        guarded = protected_branches(store, protected)
        target, resumed = pick_target(store, branch, guarded)
        if allow_ignored is None:
            allow_ignored = store.config_bool("gitpatch.allowIgnored")
        if resumed is not None and session is None:
            session = resumed
        on = target
        if mode == "auto" and (session is not None or target in guarded):
            session = session or name or "agent"
            on = start_session(store, target, session)
            store, worktree = _session_checkout(store, worktree, on)
        elif mode == "review":
            session = session or name
            if session is not None:
                check_session_name(session)
        else:
            session = None
        sig = store.signature()
        context = Context(
            store=store,
            worktree=worktree,
            mode=mode,
            target=target,
            branch=on,
            session=session,
            protected=guarded,
            author=author or f"{sig.name} <{sig.email}>",
            dirty=dirty,
            allow_ignored=allow_ignored,
            proposer=author or "",
        )
        queue.recover(context)  # a killed approval queue's lock and record
        return cls(context)

    # -- editing -----------------------------------------------------------------------------

    def apply(
        self,
        edits: str | Sequence[Mapping[str, Any]],
        *,
        path: str | None = None,
        expected_version: str | None = None,
        revision: bool = False,
    ) -> ProposalResult:
        """Apply an edit in whichever language it is written, all of it or nothing; see
        ``propose`` for ``expected_version`` and ``revision``.

        - a text (``formats.detect``): a ``*** Begin Patch`` text (updates, adds, deletes,
          moves), a unified diff (``git diff`` or ``diff -u`` output), or SEARCH/REPLACE
          blocks, each after its path line, or all for the file ``path`` (the ``patch`` tool);
        - a list of patch_resource edit objects (anchored, line-range, insert-after) for the
          file ``path`` (the ``patch_resource`` tool).
        """
        if not isinstance(edits, str):
            if path is None:
                raise InvalidArguments(
                    "patch_resource edits need the path of the file they edit",
                    hint="Pass path='a.py' with the list of edit objects.",
                )
            proposal = patch_resource.parse(path, edits)
            return self._propose_as("patch_resource", proposal, expected_version, revision)
        if path is not None:
            proposal = search_replace.parse(edits, path)
            return self._propose_as("patch", proposal, expected_version, revision)
        fmt = detect(edits)
        if fmt == "apply_patch":
            proposal = apply_patch.parse(edits)
            return self._propose_as("apply_patch", proposal, expected_version, revision)
        if fmt == "unified_diff":
            proposal = unified_diff.parse(edits)
            return self._propose_as("apply_diff", proposal, expected_version, revision)
        proposal = search_replace.parse(edits)
        return self._propose_as("patch", proposal, expected_version, revision)

    def _propose_as(
        self, tool: str, proposal: Proposal, expected_version: str | None, revision: bool
    ) -> ProposalResult:
        proposal = dataclasses.replace(proposal, tool=tool)
        return self.propose(proposal, expected_version=expected_version, revision=revision)

    @serialized
    def read(self, path: str) -> ReadResult:
        """A file's text as the agent would edit it, and the version (commit id) it belongs to.

        When the branch is checked out the text comes from disk (uncommitted edits included),
        since that is what a following edit applies to; its version then pins that content
        (a commit no ref points at), so a later change on disk is a ``resource_conflict``.
        Files outside a sparse checkout come from the branch, as git shows them.
        """
        pipe = self._plumbing
        clean = pipe.normalize(path)
        with pipe.consistent_view():
            seen = pipe.view()
            pipe.check_paths(seen.head, [clean])
            data, version = pipe.read_in(seen, clean)
        if data is None:
            raise ResourceNotFound(
                f"cannot read {clean}: no such file on {short(self.branch)}",
                hint="Check the path (it is relative to the repository root).",
                details={"path": clean},
            )
        text = Document.from_bytes(data, clean).text
        return ReadResult(path=clean, content=text, version=str(version) if version else "")

    # -- proposing ---------------------------------------------------------------------------

    @serialized
    def propose(
        self,
        proposal: Proposal,
        *,
        expected_version: str | None = None,
        revision: bool = False,
        revises: str | None = None,
    ) -> ProposalResult:
        """Build ``proposal`` as one commit and land it (auto) or put it up for review.

        ``expected_version``: a commit id the caller read; a touched file whose content changed
        since is a ``resource_conflict`` (other files changing is not). ``revision=True`` allows
        a change identical to one a person rejected; ``revises`` names the proposal this one
        revises (it implies ``revision``, and both notes say so). In review mode with a session
        the proposal is built on the session's open proposals (``view``).
        """
        proposal = self._plumbing.normalize_proposal(proposal)
        revises = revises if revises is not None else proposal.revises
        revised = None if revises is None else feedback.revisable(self._ctx, revises)
        revision = revision or revised is not None
        read_as = guards.resolve_version(self._ctx.store, expected_version)
        expected = None if read_as is None else versions.unpin(self._ctx.store, read_as)
        pid = secrets.token_hex(6)
        while True:
            ctx = self._ctx
            one = Attempt(ctx, proposal, pid, revision, read_as, expected)
            one.call = proposal.call

            def attempt(ctx: Context = ctx, one: Attempt = one) -> ProposalResult:
                land(ctx, [one], proposal.tool, revised=revised)
                return one.result()

            if ctx.session is None:
                return attempt()  # no session, no worktree of its own to keep in step
            try:
                return checkpoints.around_edit(ctx, attempt)
            except workbench.MadeMeanwhile:
                self._plumbing.made_meanwhile()  # made by another process: land there

    # -- review (written in gitpatch.review.lifecycle) --------------------------------------------

    @overload
    def approve(
        self,
        proposal_id: str,
        by: str,
        *,
        squash: bool = ...,
        skip_checks: str | None = ...,
        hunks: str | Sequence[str] | None = ...,
        told: Callable[[str], None] | None = ...,
    ) -> ProposalResult: ...

    @overload
    def approve(
        self,
        proposal_id: list[str] | tuple[str, ...],
        by: str,
        *,
        squash: bool = ...,
        skip_checks: str | None = ...,
        batch: bool = ...,
        progress: Callable[[Landing], None] | None = ...,
    ) -> list[Landing]: ...

    def approve(
        self,
        proposal_id: str | list[str] | tuple[str, ...],
        by: str,
        *,
        squash: bool = False,
        skip_checks: str | None = None,
        hunks: str | Sequence[str] | None = None,
        told: Callable[[str], None] | None = None,
        batch: bool = False,
        progress: Callable[[Landing], None] | None = None,
    ) -> ProposalResult | list[Landing]:
        """Merge a proposal (or a session, by name) into its target once the project's checks
        pass on the result (``skip_checks``: the person's reason to skip them), in its turn
        in the approval queue; see ``review.lifecycle`` and ``review.queue``. ``told`` hears,
        before anything moves, which other open proposals it lands. ``hunks`` (``1,3``,
        ``a.py:2``) lands only those, as one commit; the rest stays open
        (``gitpatch.review.partial``).

        A list of ids (or sessions) approves them in order, each landing on the one before
        and checked on that result, and returns one ``Landing`` each; those whose checks fail
        or that no longer merge are marked (``checks_failed``, ``needs_revision``) and
        skipped. ``batch``: check them together first, splitting the batch on a failure (for
        slow checks)."""
        with self._serial():
            return self._approve(proposal_id, by, squash, skip_checks, hunks, told, batch, progress)

    def _approve(
        self,
        proposal_id: str | list[str] | tuple[str, ...],
        by: str,
        squash: bool,
        skip_checks: str | None,
        hunks: str | Sequence[str] | None,
        told: Callable[[str], None] | None,
        batch: bool,
        progress: Callable[[Landing], None] | None,
    ) -> ProposalResult | list[Landing]:
        if not isinstance(proposal_id, str):
            if hunks is not None or told is not None:
                raise InvalidArguments(
                    "hunks and told are for one proposal, not a list",
                    hint="Approve the proposal on its own to land some of its hunks.",
                )
            landed = queue.land(
                self._ctx,
                list(proposal_id),
                by,
                squash=squash,
                skip_checks=skip_checks,
                batch=batch,
                progress=progress,
            )
            session_admin.follow_all(self._ctx)
            return landed
        if hunks is not None:
            with queue.turn(self._ctx):
                done = partial.approve(self._ctx, proposal_id, by, hunks)
        else:
            done = queue.approve(
                self._ctx, proposal_id, by, squash=squash, skip_checks=skip_checks, told=told
            )
        session_admin.follow_all(self._ctx)
        return done

    @serialized
    def check(self) -> CheckReport:
        """Run the project's checks (``.gitpatch.toml`` ``[checks]``) on this Workspace's work
        as it stands: in review mode its session's open stack's top, else its branch head;
        a tree that passed before is not checked again (the approval shares the cache)."""
        head = self._plumbing.view().head
        if head is None:
            raise InvalidArguments(
                f"nothing to check: {short(self.branch)} has no commit yet",
                hint="Make a change first.",
            )
        return checks.run(self._ctx, head)

    @serialized
    def amend(
        self,
        proposal_id: str,
        by: str,
        *,
        files: Mapping[str, bytes | None] | None = None,
        patch: str | None = None,
        hunk: str | None = None,
        text: str | None = None,
    ) -> ProposalResult:
        """A person's own edit of an open proposal: new contents of ``files``, a unified
        diff ``patch`` against its version, or the new ``text`` of one ``hunk`` (its context
        and added lines); a new version in the same lineage (``gitpatch.review.amend``)."""
        given = [files is not None, patch is not None, hunk is not None or text is not None]
        if sum(given) != 1 or (hunk is None) != (text is None):
            raise InvalidArguments(
                "amend needs one of: files, patch, or hunk with text",
                hint="Pass files={path: bytes}, patch=TEXT, or hunk='a.py:2' and text=LINES.",
            )
        if hunk is not None and text is not None:
            return amend.amend_hunk(self._ctx, proposal_id, by, hunk, text)
        if patch is not None:
            return amend.amend_patch(self._ctx, proposal_id, by, patch)
        assert files is not None
        return amend.amend(self._ctx, proposal_id, by, files)

    @serialized
    def comment(
        self,
        proposal_id: str,
        by: str,
        text: str,
        *,
        kind: str = "comment",
        at: str | None = None,
    ) -> dict[str, Any]:
        """Add a person's comment (``kind``: comment or request_changes; ``at``: ``PATH:LINE``
        for a line comment) to a proposal; the agent reads it in show_proposal,
        list_proposals and a notice."""
        return feedback.comment(self._ctx, proposal_id, by, text, kind, at)

    @serialized
    def reject(
        self,
        proposal_id: str,
        by: str,
        reason: str,
        *,
        hunks: str | Sequence[str] | None = None,
    ) -> ProposalResult:
        """Reject a proposal: its ref goes, the reason is noted; see ``review``. ``hunks``
        refuses only those; the rest stays open (``gitpatch.review.partial``)."""
        if hunks is not None:
            done = partial.reject(self._ctx, proposal_id, by, hunks, reason)
        else:
            done = lifecycle.reject(self._ctx, proposal_id, by, reason)
        session_admin.follow_all(self._ctx)
        return done

    @serialized
    def proposals(self) -> list[ProposalInfo]:
        """Every proposal with its status; see ``gitpatch.review.lifecycle``."""
        return lifecycle.proposals(self._ctx)

    @serialized
    def show(self, proposal_id: str) -> ProposalDetail:
        """One proposal's diff, stats and info; see ``gitpatch.review.lifecycle``."""
        return lifecycle.show(self._ctx, proposal_id)

    @serialized
    def undo(self, proposal_id: str | None = None) -> ProposalResult:
        """Revert the last gitpatch commit (or proposal ``proposal_id``'s) with a new commit;
        see ``gitpatch.review.lifecycle``."""
        done = lifecycle.undo(self._ctx, proposal_id)
        session_admin.follow_all(self._ctx)
        return done

    # -- the workbench (written in gitpatch.review.workbench, checkpoints, sessions) ------------

    def checkpoint(self, command: str | None = None) -> CheckpointResult:
        """Record what commands changed in the session's worktree as one proposal of the
        session (``command``: what ran, for the ``Gitpatch-Command`` trailer). The worktree
        is made first when the session has none (``made`` says so)."""
        checkpoints.check(self._ctx, command)  # bad input makes no worktree
        bench = self._plumbing.session_worktree()
        done = self._checkpoint(command)
        return done.model_copy(update={"made": bench.made}) if bench.made else done

    @serialized
    def _checkpoint(self, command: str | None) -> CheckpointResult:
        return checkpoints.checkpoint(self._ctx, command)

    def run(self, command: Sequence[str] | str, *, timeout: float | None = None) -> commands.Ran:
        """Run ``command`` in the session's worktree, then checkpoint what it changed. An
        argv list runs as it is, its output and exit status passing through; a shell command
        line (a str) runs for at most ``timeout`` seconds, its output capped to head and
        tail. The Workspace's other calls are not held off meanwhile."""
        bench, checkpoint = self._plumbing.session_worktree, self.checkpoint
        if isinstance(command, str):
            if timeout is None:
                raise InvalidArguments(
                    "a shell command line needs a timeout",
                    hint="Pass timeout=120, say, or the command as an argv list.",
                )
            return commands.run_captured(bench, checkpoint, command, timeout)
        return commands.run(bench, checkpoint, command)

    @serialized
    def sessions(self) -> list[SessionInfo]:
        """Every session of the repository: name, mode, target, worktree, open proposals,
        last activity."""
        return session_admin.listing(self._ctx)

    @serialized
    def end_session(self, name: str, *, force: bool = False) -> str:
        """Remove session ``name``'s worktree and branch once nothing of it is open; refuses
        (changing nothing) while proposals are open or its worktree has unrecorded changes,
        and while it holds ignored files unless ``force`` (they are then removed, named)."""
        ctx = self._ctx
        checkout = None if ctx.worktree is not None else WorkingTree.of(ctx.store)
        if checkout is None:
            return session_admin.end(ctx, name, force=force)
        # a lazy session (no worktree of its own yet) ends another through the checkout's,
        # and a save its recovery sets aside there is told here all the same
        try:
            return session_admin.end(dataclasses.replace(ctx, worktree=checkout), name, force=force)
        finally:
            self._plumbing.aside_elsewhere += checkout.set_aside

    @serialized
    def log(self, limit: int = 50) -> list[LogEntry]:
        """The gitpatch commits on the branch, newest first; see ``gitpatch.review.lifecycle``."""
        return lifecycle.log(self._ctx, limit)


def _session_checkout(
    store: Store, worktree: WorkingTree | None, ref: str
) -> tuple[Store, WorkingTree | None]:
    """The store and working tree a session works in: the person's checkout when it has the
    session branch checked out, else the session's own linked worktree when it was made
    (``review.worktrees``), else none yet: the session is lazy (``workbench.lazy``) until
    a command, a checkpoint or ``session path`` makes it. A bare repository has none."""
    if worktree is None or store.head_branch() == ref:
        return store, worktree
    if store.ref_target(ref) is None:
        return store, None  # an unborn session: git cannot check it out anywhere yet
    found = worktrees.checked_out(store, ref)
    if found is None:
        # its own worktree's folder removed by hand: git's record of it goes, or the branch
        # would stay "checked out" there and no change could land (one on a drive that is
        # away, not mounted, keeps its record; one being made, in another process, is left)
        # (under the workbench's lock: an end in another process may have set it aside)
        # (the lock only then: a lazy session's opening never waits for a land on it)
        name = ref.removeprefix(SESSION_PREFIX)
        own = worktrees.place(store, name)
        if worktrees.left_behind(store, own):
            with workbench.locked(store, name):
                if not worktrees.filling(store, name):
                    worktrees.forget(store, own, unless_locked=True)
        return store, None
    return worktrees.recovered(found)


def _dirty_policy(mode: str, dirty: str) -> Dirty:
    """``dirty`` as a policy, once ``mode`` and it are known values."""
    if mode not in ("auto", "review"):
        raise InvalidArguments(f"unknown mode {mode!r}", hint="Use mode='auto' or mode='review'.")
    for policy in typing.get_args(Dirty):
        if dirty == policy:
            return policy  # type: ignore[no-any-return]
    raise InvalidArguments(
        f"unknown dirty policy {dirty!r} (git config gitpatch.uncommitted or dirty=...)",
        hint="Use dirty='carry' (the default), 'record' or 'refuse'.",
    )
