"""``Context``: what one Workspace call works on (repository, working tree, mode, branches)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pygit2

from gitpatch.checkout.worktree import WorkingTree
from gitpatch.errors import GitpatchError
from gitpatch.store import Store, git_errors
from gitpatch.workspace.results import Mode

__all__ = ["Context"]

#: What a call does with uncommitted changes to the files it edits: ``carry`` (the default)
#: merges the change into them and leaves them uncommitted, ``record`` commits them first,
#: ``refuse`` refuses.
Dirty = Literal["carry", "record", "refuse"]


@dataclass(frozen=True)
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
