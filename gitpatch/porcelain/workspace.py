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

import dataclasses
import functools
import secrets
import threading
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import pygit2

from gitpatch.checkout.worktree import WorkingTree
from gitpatch.core.model import Proposal
from gitpatch.core.text import Document
from gitpatch.errors import (
    InvalidArguments,
    ResourceNotFound,
)
from gitpatch.formats import apply_patch, detect, patch_resource, search_replace, unified_diff
from gitpatch.review import (
    amend,
    checkpoints,
    checks,
    commands,
    feedback,
    lifecycle,
    partial,
    queue,
    series,
    workbench,
    worktrees,
)
from gitpatch.review import sessions as session_admin
from gitpatch.store import Store
from gitpatch.workspace import (
    REPLAYED,
    Attempt,
    Context,
    Dirty,
    Plumbing,
    Preview,
    guards,
    land,
    preview,
    versions,
)
from gitpatch.workspace.config import settings
from gitpatch.workspace.results import (
    CheckReport,
    Landing,
    Mode,
    ProposalResult,
    ProposalStatus,
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

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _serialized(
    method: Callable[Concatenate[Workspace, _P], _R],
) -> Callable[Concatenate[Workspace, _P], _R]:
    """One call of a Workspace at a time (its pygit2 objects are not thread-safe), each
    starting by finishing whatever a killed process left half done (``Plumbing.call``: once
    per call, when a door runs several verbs as one)."""

    def run(self: Workspace, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._calls:
            self._attach()
            with self._plumbing.call():
                return method(self, *args, **kwargs)

    functools.update_wrapper(run, method)
    return run


class Workspace:
    """One repository, one target branch, one mode; its calls run one at a time."""

    def __init__(self, context: Context) -> None:
        self._ctx = context
        self._calls = threading.RLock()
        self._plumbing = Plumbing(context, self._calls, workbench.aliases(context))
        self._told_at: pygit2.Oid | None = None  # the notes tip the last notices were read at
        self._told_overlaps = True  # a record of told overlaps may exist (unknown at first)

    # -- state (read-only) -------------------------------------------------------------------

    @property
    def context(self) -> Context:
        """Everything this Workspace works on, as one immutable value (what review takes)."""
        return self._ctx

    @property
    def store(self) -> Store:
        """The repository's object store and refs."""
        return self._ctx.store

    @property
    def worktree(self) -> WorkingTree | None:
        """The working tree, None for a bare repository."""
        return self._ctx.worktree

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

    @property
    def dirty(self) -> Dirty:
        """What happens to uncommitted changes of touched files: ``record`` or ``refuse``."""
        return self._ctx.dirty

    @property
    def protected(self) -> frozenset[str]:
        """Full refs of the branches agents never commit to."""
        return self._ctx.protected

    @property
    def allow_ignored(self) -> bool:
        """Whether proposals may touch files git ignores."""
        return self._ctx.allow_ignored

    @property
    def author(self) -> str:
        """``Name <email>`` recorded in notes as the proposals' author."""
        return self._ctx.author

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
            ws._ctx = dataclasses.replace(ws._ctx, agent=agent)
        if max_file_bytes is not None:
            ws._ctx = dataclasses.replace(ws._ctx, max_file_bytes=max_file_bytes)
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

    # -- the tool methods --------------------------------------------------------------------

    def patch(
        self,
        path: str,
        edits: str,
        *,
        expected_version: str | None = None,
        revision: bool = False,
    ) -> ProposalResult:
        """Apply SEARCH/REPLACE blocks to one file (the ``patch`` tool); see ``propose`` for
        ``expected_version`` and ``revision``."""
        proposal = search_replace.parse(edits, path)
        return self._propose_as("patch", proposal, expected_version, revision)

    def apply_patch(
        self, patch: str, *, expected_version: str | None = None, revision: bool = False
    ) -> ProposalResult:
        """Apply a ``*** Begin Patch`` text: updates, adds, deletes and moves, all or none."""
        proposal = apply_patch.parse(patch)
        return self._propose_as("apply_patch", proposal, expected_version, revision)

    def patch_resource(
        self,
        path: str,
        edits: Sequence[Mapping[str, Any]],
        *,
        expected_version: str | None = None,
        revision: bool = False,
    ) -> ProposalResult:
        """Apply patch_resource edit objects to one file, optionally against a version read."""
        proposal = patch_resource.parse(path, edits)
        return self._propose_as("patch_resource", proposal, expected_version, revision)

    def apply_diff(
        self, diff: str, *, expected_version: str | None = None, revision: bool = False
    ) -> ProposalResult:
        """Apply a unified diff (``git diff`` or ``diff -u`` output), all files or none."""
        proposal = unified_diff.parse(diff)
        return self._propose_as("apply_diff", proposal, expected_version, revision)

    def apply(
        self, text: str, *, expected_version: str | None = None, revision: bool = False
    ) -> ProposalResult:
        """Apply an edit text in whichever language it is written (``formats.detect``):
        apply_patch, SEARCH/REPLACE blocks each after its path line, or a unified diff."""
        fmt = detect(text)
        if fmt == "apply_patch":
            return self.apply_patch(text, expected_version=expected_version, revision=revision)
        if fmt == "unified_diff":
            return self.apply_diff(text, expected_version=expected_version, revision=revision)
        proposal = search_replace.parse(text)
        return self._propose_as("patch", proposal, expected_version, revision)

    def _propose_as(
        self, tool: str, proposal: Proposal, expected_version: str | None, revision: bool
    ) -> ProposalResult:
        proposal = dataclasses.replace(proposal, tool=tool)
        return self.propose(proposal, expected_version=expected_version, revision=revision)

    @_serialized
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

    @_serialized
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
        read_as = guards.resolve_version(self.store, expected_version)
        expected = None if read_as is None else versions.unpin(self.store, read_as)
        pid = secrets.token_hex(6)
        while True:
            ctx = self._ctx
            one = Attempt(ctx, proposal, pid, revision, read_as, expected)
            one.call = proposal.call

            def attempt(ctx: Context = ctx, one: Attempt = one) -> ProposalResult:
                land(ctx, [one], proposal.tool, revised=revised)
                return one.result()

            try:
                return checkpoints.around_edit(ctx, attempt)
            except workbench.MadeMeanwhile:
                self._attach()  # made by another process: land there instead
                if self.worktree is not None:
                    self.worktree.recover()

    @_serialized
    def preview(self, proposal: Proposal) -> Preview:
        """What ``proposal`` would change (a dry run): applied to the disk when it shows the
        branch, else to the branch head; nothing is built, moved or written."""
        return preview(self._ctx, self._plumbing.normalize_proposal(proposal))

    # -- the plumbing under the verbs -----------------------------------------------------------

    @property
    def plumbing(self) -> Plumbing:
        """The steps under these verbs, for the tool storages and the hosted service (holding
        calls off, reading head and disk together, checking and normalizing paths)."""
        return self._plumbing

    def version(self) -> str:
        """The version the next call reads and builds on (the head of ``Plumbing.view``)."""
        head = self._plumbing.view().head
        return str(head) if head is not None else ""

    # -- review (written in gitpatch.review.lifecycle) --------------------------------------------

    @_serialized
    def approve(
        self,
        proposal_id: str,
        by: str,
        *,
        squash: bool = False,
        skip_checks: str | None = None,
        hunks: str | Sequence[str] | None = None,
        told: Callable[[str], None] | None = None,
    ) -> ProposalResult:
        """Merge a proposal (or a session, by name) into its target once the project's checks
        pass on the result (``skip_checks``: the person's reason to skip them), in its turn
        in the approval queue; see ``review.lifecycle`` and ``review.queue``. ``told`` hears,
        before anything moves, which other open proposals it lands. ``hunks`` (``1,3``,
        ``a.py:2``) lands only those, as one commit; the rest stays open
        (``gitpatch.review.partial``)."""
        if hunks is not None:
            with queue.turn(self._ctx):
                done = partial.approve(self._ctx, proposal_id, by, hunks)
        else:
            done = queue.approve(
                self._ctx, proposal_id, by, squash=squash, skip_checks=skip_checks, told=told
            )
        session_admin.follow_all(self._ctx)
        return done

    @_serialized
    def approve_all(
        self,
        proposal_ids: Sequence[str],
        by: str,
        *,
        squash: bool = False,
        skip_checks: str | None = None,
        batch: bool = False,
        progress: Callable[[Landing], None] | None = None,
    ) -> list[Landing]:
        """Approve several proposals or sessions in order, each landing on the one before and
        checked on that result; those whose checks fail or that no longer merge are marked
        (``checks_failed``, ``needs_revision``) and skipped. ``batch``: check them together
        first, splitting the batch on a failure (for slow checks). See ``review.queue``."""
        landed = queue.land(
            self._ctx,
            list(proposal_ids),
            by,
            squash=squash,
            skip_checks=skip_checks,
            batch=batch,
            progress=progress,
        )
        session_admin.follow_all(self._ctx)
        return landed

    @_serialized
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

    @_serialized
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

    @_serialized
    def proposal_files(self, proposal_id: str) -> dict[str, bytes]:
        """The files an open proposal adds or changes, as its version has them (to edit)."""
        return amend.files_of(self._ctx, proposal_id)

    @_serialized
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

    @_serialized
    def replayed(self, call: str) -> ProposalResult | None:
        """The proposal the tool call with digest ``call`` made, when nothing moved since (it
        is still the head of ``view``): a harness retrying that call. None otherwise. Its
        files, edits, worktree and message are the original result's (kept in the note)."""
        head = self._plumbing.view().head
        note = self.store.read_note(head) if head is not None and call else None
        if note is None or note.get("call") != call:
            return None
        pid = str(note.get("id") or "")
        status: ProposalStatus = "proposed" if self.mode == "review" else "applied"
        branch = self.branch if self.mode == "auto" else PROPOSAL_PREFIX + pid
        kept = note.get("result") if isinstance(note.get("result"), dict) else {}
        found = {
            "message": f"Already applied as proposal {pid} (version {head}).",
            **{k: v for k, v in (kept or {}).items() if k in REPLAYED},
        }
        return ProposalResult.model_validate(
            {
                **found,
                "proposal_id": pid,
                "version": str(head),
                "branch": branch,
                "target": self.target,
                "mode": self.mode,
                "status": status,
                "base": str(note.get("base") or ""),
            }
        )

    @_serialized
    def overlaps(self, session: str | None = None) -> list[str]:
        """Where this session's (or ``session``'s) open work meets another session's open
        work, or lines its target changed since its base, one sentence each with the file
        and the lines of both sides (``review.clashes``)."""
        return series.overlaps(self._ctx, session)

    @_serialized
    def new_overlaps(self) -> list[str]:
        """The ``overlaps()`` this session was not told of yet; each is told once, also across
        restarts (``feedback.new_overlaps``)."""
        current = series.overlaps(self._ctx)
        if not current and not self._told_overlaps:
            return []  # nothing now, nothing recorded: the common case touches no file
        self._told_overlaps = bool(current)
        return feedback.new_overlaps(self._ctx, current)

    @_serialized
    def notices(self) -> list[str]:
        """One line per change to this session's proposals since it was last told (verdicts,
        re-bases, comments); each is told once. Empty without a session."""
        lines, self._told_at = feedback.notices(self._ctx, self._told_at)
        return lines

    @_serialized
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

    @_serialized
    def proposals(self) -> list[ProposalInfo]:
        """Every proposal with its status; see ``gitpatch.review.lifecycle``."""
        return lifecycle.proposals(self._ctx)

    @_serialized
    def show(self, proposal_id: str) -> ProposalDetail:
        """One proposal's diff, stats and info; see ``gitpatch.review.lifecycle``."""
        return lifecycle.show(self._ctx, proposal_id)

    @_serialized
    def undo(self, proposal_id: str | None = None) -> ProposalResult:
        """Revert the last gitpatch commit (or proposal ``proposal_id``'s) with a new commit;
        see ``gitpatch.review.lifecycle``."""
        done = lifecycle.undo(self._ctx, proposal_id)
        session_admin.follow_all(self._ctx)
        return done

    # -- the workbench (written in gitpatch.review.workbench, checkpoints, sessions) ------------

    @_serialized
    def session_worktree(self) -> workbench.Bench:
        """The session's own worktree, made now when it has none (``Bench.made`` then says
        so and what it cost); in review mode it shows the target plus the open stack's top."""
        bench = self._made()
        workbench.follow(self._ctx)
        return bench

    def checkpoint(self, command: str | None = None) -> CheckpointResult:
        """Record what commands changed in the session's worktree as one proposal of the
        session (``command``: what ran, for the ``Gitpatch-Command`` trailer). The worktree
        is made first when the session has none (``made`` says so)."""
        checkpoints.check(self._ctx, command)  # bad input makes no worktree
        bench = self.session_worktree()
        done = self._checkpoint(command)
        return done.model_copy(update={"made": bench.made}) if bench.made else done

    @_serialized
    def _checkpoint(self, command: str | None) -> CheckpointResult:
        return checkpoints.checkpoint(self._ctx, command)

    def _made(self) -> workbench.Bench:
        """``workbench.ensure``; a lazy session then works in the worktree it made."""
        bench = workbench.ensure(self._ctx)
        if workbench.lazy(self._ctx):
            self._work_in(bench.path)
        return bench

    def _attach(self) -> None:
        """A lazy session whose worktree another process made since: work there now."""
        where = workbench.made_meanwhile(self._ctx)
        if where is not None:
            self._work_in(where)

    def _work_in(self, where: Path) -> None:
        """Work in the session's worktree at ``where`` from now on (its store and files)."""
        linked = Store.open(where)
        self._ctx = dataclasses.replace(self._ctx, store=linked, worktree=WorkingTree.of(linked))
        self._plumbing.context = self._ctx

    def run(self, argv: Sequence[str]) -> commands.Ran:
        """Run ``argv`` in the session's worktree (its output and exit status pass through;
        the Workspace's other calls are not held off meanwhile), then checkpoint."""
        return commands.run(self.session_worktree, self.checkpoint, argv)

    def run_command(self, command: str, timeout: float) -> commands.Ran:
        """Run a shell command line in the session's worktree for at most ``timeout``
        seconds, its output capped to head and tail, then checkpoint."""
        return commands.run_captured(self.session_worktree, self.checkpoint, command, timeout)

    @_serialized
    def sessions(self) -> list[SessionInfo]:
        """Every session of the repository: name, mode, target, worktree, open proposals,
        last activity."""
        return session_admin.listing(self._ctx)

    @_serialized
    def end_session(self, name: str, *, force: bool = False) -> str:
        """Remove session ``name``'s worktree and branch once nothing of it is open; refuses
        (changing nothing) while proposals are open or its worktree has unrecorded changes,
        and while it holds ignored files unless ``force`` (they are then removed, named)."""
        return session_admin.end(self._ctx, name, force=force)

    @_serialized
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
        return store, None
    linked = Store.open(found)
    tree = WorkingTree.of(linked)
    if tree is not None:
        tree.recover()
    return linked, tree


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
