"""A Workspace's plumbing view: the steps under its verbs, for the tool storages, the hosted
service and the doors' internals (``ws.plumbing``).

The porcelain ``Workspace`` keeps the verbs a person or an agent uses (open, read, propose,
show, approve ...). What a door or a storage composes into its own calls lives here, over the
write path (one call with its recovery, holding the Workspace's calls off, reading head and
disk together, checking and normalizing paths as ``propose`` does) and over the review
lifecycle (the replay check, overlaps with other sessions' work, notices, the dry run, the
files of a proposal, the session's own worktree). A storage's steps and the Workspace's own
calls share one call lock, so they run one at a time. It owns the Workspace's context: a lazy
session that moves into its worktree moves the view and the verbs together.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar

import pygit2

from gitpatch.checkout import saves as checkout_saves
from gitpatch.checkout.roots import through_root, through_root_all
from gitpatch.checkout.worktree import WorkingTree
from gitpatch.core.model import Proposal
from gitpatch.core.paths import normalize, normalize_proposal
from gitpatch.review import amend, feedback, series, workbench
from gitpatch.store import Store
from gitpatch.workspace import REPLAYED, Context, Preview, preview, propose, stack, versions
from gitpatch.workspace.results import ProposalResult, ProposalStatus
from gitpatch.workspace.sessions import PROPOSAL_PREFIX

__all__ = ["Plumbing", "serialized"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


class _Serial(Protocol):
    def _serial(self) -> contextlib.AbstractContextManager[None]: ...


_S = TypeVar("_S", bound=_Serial)


def serialized(
    method: Callable[Concatenate[_S, _P], _R],
) -> Callable[Concatenate[_S, _P], _R]:
    """One call at a time (pygit2 objects are not thread-safe), each starting by finishing
    whatever a killed process left half done (``Plumbing.call``: once per call, when a door
    runs several steps as one). For the methods of ``Plumbing`` and of ``Workspace``."""

    def run(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._serial():
            return method(self, *args, **kwargs)

    functools.update_wrapper(run, method)
    return run


class Plumbing:
    """The steps under one Workspace's verbs (module docstring)."""

    def __init__(self, context: Context) -> None:
        self.context = context
        self._calls = threading.RLock()
        #: Folders whose absolute paths name the same files as the working tree's (a
        #: review-mode session's own worktree, where its agent runs).
        self.aliases = workbench.aliases(context)
        self._depth = 0  # calls (``call``) this thread is inside of, while it holds the lock
        self._told_at: pygit2.Oid | None = None  # the notes tip the last notices were read at
        self._told_overlaps = True  # a record of told overlaps may exist (unknown at first)
        #: Saves set aside in a working tree not this Workspace's (a lazy session ending
        #: another, through the checkout's): told by ``set_aside`` all the same.
        self.aside_elsewhere: list[tuple[str, Path]] = []

    # -- the write path's steps --------------------------------------------------------------

    @property
    def store(self) -> Store:
        """The repository's object store and refs."""
        return self.context.store

    @property
    def worktree(self) -> WorkingTree | None:
        """The working tree this Workspace lands on (None: a bare view)."""
        return self.context.worktree

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        """One call: the Workspace's calls held off, inside the store's operation, starting by
        finishing whatever a killed process left half done (refs, then the working tree's
        land), once however many verbs run inside it (a door's whole tool call, or a verb
        that calls another)."""
        with self._calls, self.store.operation():
            if self._depth == 0:
                self.store.recover()
                if self.worktree is not None:
                    self.worktree.recover()
            self._depth += 1  # under the call lock: only its holder counts
            try:
                yield
            finally:
                self._depth -= 1

    def exclusive(self) -> contextlib.AbstractContextManager[object]:
        """Hold the Workspace's calls off while the caller runs several steps as one (its
        own calls may nest inside: the lock is re-entrant)."""
        return self._calls

    def tracks_disk(self) -> bool:
        """True when the working tree shows the branch (its content is then what is read)."""
        return self.context.tracks_disk()

    def consistent_view(self) -> contextlib.AbstractContextManager[None]:
        """Hold lands off while the caller reads the branch head and the disk together."""
        return propose.consistent_view(self.context)

    def view(self) -> stack.View:
        """What the next call reads and builds on: in review mode with a session, the target
        plus the session's open proposals (their top), else the branch head."""
        return propose.view(self.context)

    def read_in(self, seen: stack.View, path: str) -> tuple[bytes | None, pygit2.Oid | None]:
        """(bytes, version) of ``path`` in ``seen``: a path the session's open proposals
        change comes from their top, any other from disk when the branch is checked out."""
        tree = self.worktree
        filters = tree.filters if tree is not None else None
        shown = None if path in seen.stacked else propose.disk(self.context)
        return versions.read(self.store, shown, seen.head, path, filters)

    def check_paths(self, head: pygit2.Oid | None, paths: Sequence[str]) -> None:
        """Refuse unsafe or ignored ``paths`` on ``head`` as ``propose`` would (``guards``)."""
        propose.check_paths(self.context, head, paths)

    def normalize_proposal(self, proposal: Proposal) -> Proposal:
        """``proposal`` with its paths repository-relative (absolute paths below the working
        tree accepted, symlinked roots followed); unsafe paths are refused. A proposal
        normalised already (``Proposal.normalized``) is returned as it is."""
        if proposal.normalized:
            return proposal
        root = self._root()
        if any(p.startswith("/") for p in proposal.paths):  # only absolute paths go through
            proposal = through_root_all(proposal, root, self.aliases)
        return normalize_proposal(proposal, root)

    def normalize(self, path: str) -> str:
        """One path as ``normalize_proposal`` makes it: the normaliser the tool storages
        resolve their paths with (a proposal of such keys is marked, not normalised again)."""
        root = self._root()
        if path.startswith("/"):  # only absolute paths may go through a linked root
            path = through_root(path, root, self.aliases)
        return normalize(path, root)

    def _root(self) -> str | None:
        """The working tree's absolute path: absolute paths below it are accepted."""
        tree = self.worktree
        return str(tree.root).rstrip("/") if tree is not None else None

    @contextlib.contextmanager
    def _serial(self) -> Iterator[None]:
        with self._calls:
            self._attach()
            with self.call():
                yield

    # -- the session's own worktree ------------------------------------------------------------

    def _attach(self) -> None:
        """A lazy session whose worktree another process made since: work there now."""
        if self.context.session is None:
            return  # only a session has a worktree of its own
        where = workbench.made_meanwhile(self.context)
        if where is not None:
            self.work_in(where)

    def work_in(self, where: Path) -> None:
        """Work in the session's worktree at ``where`` from now on (its store and files)."""
        linked = Store.open(where)
        tree = WorkingTree.of(linked)
        self.context = dataclasses.replace(self.context, store=linked, worktree=tree)

    def made_meanwhile(self) -> None:
        """Another process made the session's worktree during this call: work there now,
        settling what a killed land left there first."""
        self._attach()
        if self.worktree is not None:
            self.worktree.recover()

    @serialized
    def session_worktree(self) -> workbench.Bench:
        """The session's own worktree, made now when it has none (``Bench.made`` then says
        so and what it cost); in review mode it shows the target plus the open stack's top."""
        bench = workbench.ensure(self.context)
        if workbench.lazy(self.context):
            self.work_in(bench.path)
        workbench.follow(self.context)
        return bench

    # -- what a door asks around an edit -------------------------------------------------------

    def version(self) -> str:
        """The version the next call reads and builds on (the head of ``view``)."""
        head = self.view().head
        return str(head) if head is not None else ""

    @serialized
    def preview(self, proposal: Proposal) -> Preview:
        """What ``proposal`` would change (a dry run): applied to the disk when it shows the
        branch, else to the branch head; nothing is built, moved or written."""
        return preview(self.context, self.normalize_proposal(proposal))

    @serialized
    def replayed(self, call: str) -> ProposalResult | None:
        """The proposal the tool call with digest ``call`` made, when nothing moved since (it
        is still the head of ``view``): a harness retrying that call. None otherwise. Its
        files, edits, worktree and message are the original result's (kept in the note)."""
        ctx = self.context
        head = self.view().head
        note = ctx.store.read_note(head) if head is not None and call else None
        if note is None or note.get("call") != call:
            return None
        pid = str(note.get("id") or "")
        status: ProposalStatus = "proposed" if ctx.mode == "review" else "applied"
        branch = ctx.branch if ctx.mode == "auto" else PROPOSAL_PREFIX + pid
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
                "target": ctx.target,
                "mode": ctx.mode,
                "status": status,
                "base": str(note.get("base") or ""),
            }
        )

    @serialized
    def overlaps(self, session: str | None = None) -> list[str]:
        """Where this session's (or ``session``'s) open work meets another session's open
        work, or lines its target changed since its base, one sentence each with the file
        and the lines of both sides (``review.clashes``). Empty without a session."""
        if (session or self.context.session) is None:
            return []
        return series.overlaps(self.context, session)

    @serialized
    def new_overlaps(self) -> list[str]:
        """The ``overlaps()`` this session was not told of yet; each is told once, also across
        restarts (``feedback.new_overlaps``). Empty without a session (no record either)."""
        if self.context.session is None:
            return []
        current = series.overlaps(self.context)
        if not current and not self._told_overlaps:
            return []  # nothing now, nothing recorded: the common case touches no file
        self._told_overlaps = bool(current)
        return feedback.new_overlaps(self.context, current)

    @serialized
    def notices(self) -> list[str]:
        """One line per change to this session's proposals since it was last told (verdicts,
        re-bases, comments); each is told once. Empty without a session."""
        if self.context.session is None:
            return []
        lines, self._told_at = feedback.notices(self.context, self._told_at)
        return lines

    def set_aside(self) -> list[str]:
        """One line per person's save that this Workspace's lands (or its recovery of a killed
        one) set aside in ``.git/gitpatch/saves/`` since it was last asked; each is told once,
        with or without a session (``feedback.set_aside``)."""
        # the verbs' lock, not a whole call (no recovery: a door asks after each call), so no
        # verb of another thread adds to the lists while they are taken
        with self._calls:
            saved, self.aside_elsewhere = self.aside_elsewhere, []
            tree = self.worktree
            if tree is not None:
                saved, tree.set_aside = [*tree.set_aside, *saved], []
        return feedback.set_aside(saved) if saved else []

    @serialized
    def saves(self) -> list[checkout_saves.Saved]:
        """Every person's save set aside in the repository, oldest first (``checkout.saves``)."""
        return checkout_saves.listing(self.store)

    @serialized
    def proposal_files(self, proposal_id: str) -> dict[str, bytes]:
        """The files an open proposal adds or changes, as its version has them (to edit)."""
        return amend.files_of(self.context, proposal_id)
