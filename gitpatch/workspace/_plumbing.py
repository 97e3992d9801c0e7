"""The plumbing view of one Workspace: what the tool storages and the hosted service build on.

The porcelain ``Workspace`` offers the verbs a person or an agent uses (read, propose, show,
approve ...); the steps under them that a storage composes into its own calls live here:
one call with its recovery (``call``), holding the Workspace's calls off (``exclusive``),
reading head and disk together (``consistent_view``, ``view``, ``read_in``), checking and
normalizing paths as ``propose`` does. A ``Plumbing`` shares its Workspace's context and
call lock, so a storage's steps and the Workspace's own calls run one at a time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import pygit2

from gitpatch.checkout.roots import through_root, through_root_all
from gitpatch.checkout.worktree import WorkingTree
from gitpatch.core.model import Proposal
from gitpatch.core.paths import normalize, normalize_proposal
from gitpatch.store import Store
from gitpatch.workspace import _propose as propose
from gitpatch.workspace import _stack as stack
from gitpatch.workspace import _versions as versions
from gitpatch.workspace._context import Context

__all__ = ["Plumbing"]


class Plumbing:
    """The steps under one Workspace's verbs (module docstring)."""

    def __init__(
        self,
        context: Context,
        calls: contextlib.AbstractContextManager[object],
        aliases: tuple[str, ...] = (),
    ) -> None:
        self.context = context
        self._calls = calls
        #: Folders whose absolute paths name the same files as the working tree's (a
        #: review-mode session's own worktree, where its agent runs).
        self.aliases = aliases
        self._depth = 0  # calls (``call``) this thread is inside of, while it holds the lock

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
        """One path as ``normalize_proposal`` makes it."""
        return normalize(through_root(path, self._root(), self.aliases), self._root())

    def _root(self) -> str | None:
        """The working tree's absolute path: absolute paths below it are accepted."""
        tree = self.worktree
        return str(tree.root).rstrip("/") if tree is not None else None
