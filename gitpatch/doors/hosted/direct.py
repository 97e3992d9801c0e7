"""A change to an auto space as one commit on ``main``, with no note, committed in batches.

The Workspace publishes every change together with a status note on ``refs/notes/gitpatch``:
a notes commit, the notes trees it rewrites and a JSON blob per change. In a space that takes
thousands of small edits that is most of what history keeps (about 600 of 1,100 bytes per
40-byte edit after packing) and a good part of each call's work. Everything such a note says
of a change applied to ``main`` is in the change's own commit: its id and tool
(``Gitpatch-Proposal`` and ``Gitpatch-Tool`` trailers), its base (the first parent), branch
and target (``main``), who asked (the message's "Requested by" line) and when (the commit
time). So ``SpaceStorage`` commits the changes of an auto space here, and readers of history
(``gitpatch log``, ``git log``, undo, resource ids, versions) read the commits; notes written
before (older spaces, review spaces) stay where they are and are read as ever.

The rules of the Workspace's path hold: paths are checked as ``propose`` checks them
(``check_paths``), ``.gitmodules`` content is checked, a change a person rejected (its
fingerprint's ``refs/gitpatch/rejected/`` ref) is left to the Workspace so it is refused with
the reviewer's reasons, and ``main`` moves by a compare-and-swap in the ref transaction that
recovery settles after a kill.

``WriteQueue``: the changes of one space queue, and whoever finds no batch running commits
every change waiting (each its own commit, each built on the one before) and then moves
``main`` once for all of them, so a busy space pays one ref transaction (lock, fsync, owner
record) per batch instead of per change. A change is answered only once ``main`` holds it.
When another writer moved ``main`` meanwhile, the batch is built again on its new head; a
change whose paths that writer touched is then refused (``resource_conflict``). The loop that
does so is the Workspace's one attempt loop (``propose.land_batch``), with its one limit.
"""

from __future__ import annotations

import contextvars
import dataclasses
import secrets
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import pygit2

from gitpatch.core.budget import run_as
from gitpatch.core.model import Changeset, Proposal
from gitpatch.errors import ProposalRejected
from gitpatch.porcelain.workspace import Workspace
from gitpatch.store import Store
from gitpatch.tools.storage.base import Applied, applied
from gitpatch.workspace import Built, Moved, commit_changes, land_batch, preview, proposal_result

__all__ = ["Change", "Made", "WriteQueue", "build_change", "preview_on"]


def preview_on(ws: Workspace, head: pygit2.Oid | None, proposal: Proposal) -> Changeset:
    """What ``proposal`` does on ``head`` (which ``main`` may not point at yet), its paths
    checked as ``propose`` checks them; nothing is written (``propose.preview``)."""
    return preview(ws.plumbing.context, ws.plumbing.normalize_proposal(proposal), on=head).changeset


@dataclasses.dataclass(frozen=True)
class Made:
    """A change's commit, written but not yet on ``main``."""

    commit: pygit2.Oid
    head: pygit2.Oid | None
    changeset: Changeset
    pid: str
    fingerprint: str
    written: int

    def applied(self, ws: Workspace) -> Applied:
        """What the change is once ``main`` holds it (versions are commit ids here)."""
        built = Built(self.commit, self.head, self.changeset, self.fingerprint, ())
        return applied(
            [(ws.plumbing.store, proposal_result(ws.plumbing.context, built, self.pid), None)]
        )


def build_change(
    ws: Workspace, head: pygit2.Oid | None, changeset: Changeset, proposal: Proposal, written: int
) -> Made | None:
    """Write ``changeset``'s commit on ``head`` as the Workspace's ``build`` commits it (the
    one ``commit_changes``: checks, trailers, the agent as author); no ref moves. None when the
    Workspace must take the change (a person rejected exactly this change: it refuses it with
    their reasons, or lets a revision through)."""
    pid = secrets.token_hex(6)
    by = (ws.plumbing.context.agent_signature(), ws.plumbing.context.session_label())
    try:
        commit, print_ = commit_changes(
            ws.plumbing.store, proposal, head, changeset, pid, False, by
        )
    except ProposalRejected:
        return None
    return Made(commit, head, changeset, pid, print_, written)


#: Builds one change on a head: given the head and, on a rebuild, (the head the batch first
#: saw, the head another writer left), its commit, or None for the Workspace's path.
Build = Callable[[pygit2.Oid | None, Moved | None], Made | None]


class Change:
    """One queued change and, once its batch ran, what came of it."""

    def __init__(self, build: Build) -> None:
        self.build = build
        # built in whichever thread runs the batch, under the submitter's own context (its
        # budget, ``gitpatch.core.budget``), never under the batch runner's
        self.context = contextvars.copy_context()
        self.finished = False
        self.made: Made | None = None
        self.error: BaseException | None = None
        #: Set once the change's batch ran (``finished``), or to hand it the next batch.
        self.woken = threading.Event()

    def outcome(self) -> Made | None:
        """The change's commit (on ``main`` now), None for the Workspace's path, or its error."""
        if self.error is not None:
            raise self.error
        return self.made


class WriteQueue:
    """The direct writes of one space, committed in batches (module docstring). ``writing``
    is the space's lock (held while a batch runs, so packing and the Workspace's path wait)."""

    def __init__(
        self,
        store: Callable[[], Store],
        branch: str,
        writing: Callable[[], AbstractContextManager[None]],
    ) -> None:
        self.store = store
        self.branch = branch
        self.writing = writing
        self._lock = threading.Lock()
        self._waiting: list[Change] = []
        self._running = False

    def waiting(self) -> int:
        """How many changes wait for the batch after the running one."""
        with self._lock:
            return len(self._waiting)

    def submit(self, change: Change) -> Made | None:
        """Queue ``change`` and return once its batch ran (see ``Change.outcome``). A change
        that finds a batch running waits on its own event: it is woken once, when its batch
        ran or when it is to run the next one (the first change left waiting runs it), so a
        batch wakes only the threads it concerns, not every waiting one."""
        with self._lock:
            self._waiting.append(change)
            lead = not self._running
            self._running = True
        if not lead:
            change.woken.wait()
            if change.finished:
                return change.outcome()
        with self._lock:
            batch, self._waiting = self._waiting, []
        following: Change | None = None
        try:
            self._run(batch)
        except BaseException as exc:  # noqa: BLE001 - every change of the batch learns it
            for item in batch:
                if not item.finished:
                    item.error = exc
        finally:
            with self._lock:
                if self._waiting:
                    following = self._waiting[0]  # it runs the next batch: still running
                else:
                    self._running = False
            for item in batch:
                item.finished = True
                item.woken.set()
            if following is not None:
                following.woken.set()
        return change.outcome()

    def _run(self, batch: list[Change]) -> None:
        """The batch built and landed by the one attempt loop (``propose.land_batch``)."""
        made: list[Made] = []

        def build(head: pygit2.Oid | None, moved: Moved | None) -> pygit2.Oid | None:
            for item in batch:  # a rebuild starts over
                item.made, item.error = None, None
            made[:] = self._built(batch, head, moved)
            return next((m.commit for m in reversed(made)), None)

        store = self.store()
        # an operation from the first object on: another process opening the space sweeps
        # libgit2's half-written object files only while no live operation could own them
        with self.writing(), store.operation():
            land_batch(store, self.branch, build, lambda: f"gitpatch: {len(made)} changes")

    @staticmethod
    def _built(
        batch: list[Change],
        head: pygit2.Oid | None,
        moved: Moved | None,
    ) -> Iterator[Made]:
        """Each change built on the one before it (a refused one is skipped)."""
        for item in batch:
            try:
                found = run_as(item.context, item.build, head, moved)
            except Exception as exc:  # noqa: BLE001 - the change's own error, told to it
                item.error = exc
                continue
            item.made = found
            if found is not None:
                head = found.commit
                yield found
