"""What the Workspace hands back: pydantic models, so tools, CLI and MCP serialise them as is.

These sit at the boundary (the ``Workspace`` API and everything built on it); inside, gitpatch
works with frozen dataclasses. Every model is frozen and refuses unknown fields, so a typo in a
producer fails loudly instead of silently dropping data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gitpatch.core.model import Changeset
from gitpatch.match import Level

__all__ = [
    "HIDDEN_NOTE",
    "Amendment",
    "ApprovalOutcome",
    "CheckReport",
    "CheckRun",
    "Comment",
    "EditResult",
    "FileAction",
    "FileResult",
    "HunkInfo",
    "Landing",
    "LogEntry",
    "Mode",
    "ProposalDetail",
    "ProposalInfo",
    "ProposalResult",
    "ProposalStatus",
    "ReadResult",
    "RecordedWork",
    "edit_results",
    "file_results",
    "iso",
    "now_iso",
    "summary",
]

#: How a Workspace lands proposals: on the target branch at once, or on a branch for review.
Mode = Literal["auto", "review"]

#: The life of a proposal, as kept in its note on ``refs/notes/gitpatch``; ``needs_revision``:
#: a proposal stacked on one a person rejected, and changing the same files (or one that no
#: longer merges with its target); ``checks_failed``: open, but the project's checks failed on
#: what approving it would have landed.
ProposalStatus = Literal[
    "applied", "proposed", "approved", "rejected", "undone", "needs_revision", "checks_failed"
]

#: What a proposal did to one path.
FileAction = Literal["update", "add", "delete", "move"]


class _Result(BaseModel):
    # Built on first use: a process uses a few of these, and each schema costs its start.
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class FileResult(_Result):
    """One path a proposal changed; for a move ``path`` is the destination."""

    path: str
    action: FileAction
    moved_from: str | None = None


class EditResult(_Result):
    """Where one edit landed: 1-based inclusive lines of the file before the edit, and the
    matching level (``exact`` unless the matcher had to tolerate a difference)."""

    path: str
    index: int
    start_line: int
    end_line: int
    level: Level = Level.EXACT


#: What a result says of files ``_hidden`` finds (``{files}``: their names).
HIDDEN_NOTE = (
    "{files}: git's skip-worktree bit is set (by hand: `git update-index --skip-worktree`), so "
    "the change is committed and in the index but the file on disk stays the person's own "
    "copy, without this change: what runs in the checkout (tests too) reads that copy. Tell "
    "the person; `git update-index --no-skip-worktree <file>` then shows their copy as a "
    "local change against it."
)


class ProposalResult(_Result):
    """The outcome of one proposal (or of approving, rejecting or undoing one).

    ``version`` is the full hex id of the commit that holds the change; ``branch`` is the full
    ref name of the branch that holds it (the target in auto mode, ``refs/heads/gitpatch/<id>``
    in review mode, a session branch when the target is protected); ``message`` says so in one
    sentence a person or a model can read.
    """

    proposal_id: str
    version: str
    branch: str
    target: str
    mode: Mode
    status: ProposalStatus
    base: str
    files: list[FileResult] = Field(default_factory=list)
    edits: list[EditResult] = Field(default_factory=list)
    message: str = ""
    #: The session's own linked worktree, where its commits are on disk (auto mode sessions).
    worktree: str = ""
    #: Files whose uncommitted disk content was committed ahead of the change (``record``).
    recorded: list[str] = Field(default_factory=list)
    #: Files the person had changed: the change was carried onto their uncommitted work,
    #: which stays uncommitted on disk (``carry``, the default).
    carried: list[str] = Field(default_factory=list)
    #: Files with git's skip-worktree bit and a copy of their own on disk (set by hand, to
    #: keep a local override): the change is committed and in the index, the disk copy is
    #: left as it is, so what runs there does not see the change.
    hidden: list[str] = Field(default_factory=list)


class ReadResult(_Result):
    """A file's text and its version: the commit id holding that content on the branch."""

    path: str
    content: str
    version: str


class Comment(_Result):
    """A person's words on a proposal: ``kind`` is ``comment`` or ``request_changes``; a line
    comment also has ``path``, ``line`` (1-based, in the proposal's version of the file) and
    ``line_text``, that line as it read when the comment was made."""

    by: str
    at: str
    text: str
    kind: str = "comment"
    path: str = ""
    line: int = 0
    line_text: str = ""


class HunkInfo(_Result):
    """One hunk of a proposal, the grain of a verdict (see ``gitpatch.review.hunks``).

    ``id`` is ``PATH:N`` (the N-th hunk of that file) and ``number`` the hunk's number across
    the proposal; both stay the same across show, the page, MCP and the CLI, and through
    partial verdicts and a person's edits. ``kind`` is ``change`` (lines of a text file) or,
    for a file taken whole, ``add``, ``delete``, ``move`` or ``file`` (a mode change, binary
    content). ``lines`` are the hunk's diff lines (`` ``, ``-``, ``+`` then the text);
    ``verdict`` is ``open``, ``approved`` or ``rejected`` (with ``by``, ``at``, ``reason``).
    """

    id: str
    number: int
    path: str
    old_path: str = ""
    kind: Literal["change", "add", "delete", "move", "file"] = "change"
    header: str = ""
    old_start: int = 0
    old_lines: int = 0
    new_start: int = 0
    new_lines: int = 0
    lines: list[str] = Field(default_factory=list)
    verdict: str = "open"
    by: str = ""
    at: str = ""
    reason: str = ""


class Amendment(_Result):
    """A person's own edit of a proposal before approving it: who, when, the version it
    replaced (``from_version``), the files and line ranges changed (``where``: ``PATH lines
    A-B``) and the edit itself as a unified diff from the agent's version."""

    by: str
    at: str
    from_version: str
    files: list[str] = Field(default_factory=list)
    where: list[str] = Field(default_factory=list)
    diff: str = ""


class ProposalInfo(_Result):
    """One proposal as listed by ``Workspace.proposals()``.

    ``files`` are the paths it changes; ``created_at`` is ISO 8601 UTC. The review loop adds:
    ``session`` (whose work it is), ``decided_by`` / ``decided_at`` / ``reason`` (the verdict),
    ``comments``, ``revises`` / ``revised_by`` (revision links), ``lands`` (open proposals
    beneath it that approving it also lands, bottom first) and ``overlaps`` (other sessions'
    open work on the same files, as ``path: session NAME (proposal ID)``).
    """

    id: str
    status: ProposalStatus
    target: str
    base: str
    files: list[str] = Field(default_factory=list)
    author: str = ""
    created_at: str = ""
    age_seconds: float = 0.0
    tool: str = ""
    branch: str = ""
    commit: str = ""
    session: str = ""
    decided_by: str = ""
    decided_at: str = ""
    reason: str = ""
    comments: list[Comment] = Field(default_factory=list)
    revises: str = ""
    revised_by: str = ""
    lands: list[str] = Field(default_factory=list)
    overlaps: list[str] = Field(default_factory=list)
    #: The last checks run on what approving it would land (``CheckReport``).
    checks: dict[str, Any] = Field(default_factory=dict)
    #: Where it no longer merges with its target: per file, the lines of both sides.
    conflicts: list[dict[str, Any]] = Field(default_factory=list)


class RecordedWork(_Result):
    """One commit of a person's uncommitted work, recorded before an agent's edit: its id,
    when it was recorded (ISO 8601 UTC), its own unified diff and the files it touches."""

    commit: str
    time: str
    diff: str
    files: list[str] = Field(default_factory=list)


class ProposalDetail(_Result):
    """One proposal with its diff text and stats (``files``, ``insertions``, ``deletions``).

    ``recorded`` is the part approval would also commit that is NOT the agent's: the person's
    own uncommitted changes to the touched files, recorded before the agent's edit (a unified
    diff, with ``recorded_files``); ``records`` is the same, one entry per record commit,
    oldest first; ``diff`` shows the agent's change on top of them. ``message`` is the commit
    message of the proposal's tip and ``note`` its note on ``refs/notes/gitpatch``.
    """

    info: ProposalInfo
    diff: str
    stats: dict[str, int] = Field(default_factory=dict)
    recorded: str = ""
    recorded_files: list[str] = Field(default_factory=list)
    records: list[RecordedWork] = Field(default_factory=list)
    message: str = ""
    note: dict[str, Any] = Field(default_factory=dict)
    #: The proposal's hunks with stable ids, decided ones included (``HunkInfo``).
    hunks: list[HunkInfo] = Field(default_factory=list)
    #: The person's own edits of it, oldest first.
    amendments: list[Amendment] = Field(default_factory=list)


class ApprovalOutcome(_Result):
    """What approving a proposal would do to its target, found without writing anything:
    ``fast-forward``, ``merge`` (the target moved on), ``conflict`` (with the conflicting
    ``paths``) or ``nothing`` (the target already holds all of it); ``text`` says it in one
    sentence (for a conflict, with each file's lines on both sides)."""

    kind: Literal["fast-forward", "merge", "conflict", "nothing"]
    paths: list[str] = Field(default_factory=list)
    text: str = ""


class CheckRun(_Result):
    """One check's run: ``exit_code`` None when it ran out of time; ``output`` is the tail of
    what it printed (stdout and stderr together)."""

    name: str
    command: str
    exit_code: int | None
    seconds: float
    output: str = ""
    timed_out: bool = False

    @property
    def passed(self) -> bool:
        """True when the check exited 0 in time."""
        return self.exit_code == 0


class CheckReport(_Result):
    """The checks on one tree: ``cached`` when a earlier run's result was reused (nothing
    ran), ``skipped`` the person's reason when they were skipped; ``runs`` stop at the first
    failure."""

    tree: str
    commit: str
    passed: bool
    cached: bool = False
    skipped: str = ""
    runs: list[CheckRun] = Field(default_factory=list)
    #: In a batch: the tree of the whole batch, whose checks passed (this one is a step).
    batch: str = ""

    def failure(self) -> CheckRun | None:
        """The check that failed, None when all passed."""
        return next((r for r in self.runs if not r.passed), None)

    def summary(self) -> str:
        """One sentence: passed (cached or not), skipped, or which check failed and how."""
        if self.skipped:
            return f"checks skipped: {self.skipped}"
        failed = self.failure()
        if failed is None and self.batch:
            return f"checks passed on the batch this lands in (tree {self.batch[:12]})"
        if failed is None:
            names = ", ".join(r.name for r in self.runs) or "none configured"
            how = " (cached: this tree passed before)" if self.cached else ""
            return f"checks passed on tree {self.tree[:12]}{how}: {names}"
        why = (
            f"ran out of its {failed.seconds:.0f} s"
            if failed.timed_out
            else f"exited {failed.exit_code}"
        )
        what = failed.name if failed.name == failed.command else f"{failed.name} ({failed.command})"
        return f"check {what!r} {why} on tree {self.tree[:12]}"


class Landing(_Result):
    """What the queue did with one entry: ``approved`` (``result``), ``checks_failed``
    (``checks``: the report), ``needs_revision`` (``conflicts``: per file, both sides'
    lines) or ``refused`` (``code``: why, e.g. already approved)."""

    id: str
    status: Literal["approved", "checks_failed", "needs_revision", "refused"]
    message: str
    code: str = ""
    result: ProposalResult | None = None
    checks: dict[str, Any] = Field(default_factory=dict)
    conflicts: list[dict[str, Any]] = Field(default_factory=list)


class LogEntry(_Result):
    """One gitpatch commit on the target branch: ``time`` is ISO 8601 UTC."""

    commit: str
    proposal_id: str
    tool: str
    summary: str
    time: str


def file_results(changeset: Changeset, existed: Callable[[str], bool]) -> list[FileResult]:
    """One ``FileResult`` per change; ``existed(path)`` tells an update from an add."""
    out: list[FileResult] = []
    for change in changeset.changes:
        if change.source is not None:
            out.append(FileResult(path=change.path, action="move", moved_from=change.source))
        elif change.content is None:
            out.append(FileResult(path=change.path, action="delete"))
        else:
            action: FileAction = "update" if existed(change.path) else "add"
            out.append(FileResult(path=change.path, action=action))
    return out


def edit_results(changeset: Changeset) -> list[EditResult]:
    """The engine's report of where each edit landed, as result models."""
    return [
        EditResult(
            path=r.path,
            index=r.index,
            start_line=r.start_line,
            end_line=r.end_line,
            level=Level(r.level),
        )
        for r in changeset.report
    ]


def summary(tool: str, files: Sequence[FileResult]) -> str:
    """A commit subject such as ``patch: update a.py, add b.py (+2 more)``."""
    words = [
        f"move {f.moved_from} to {f.path}" if f.action == "move" else f"{f.action} {f.path}"
        for f in files
    ]
    more = f" (+{len(words) - 3} more)" if len(words) > 3 else ""
    return f"{tool}: {', '.join(words[:3])}{more}"


#: How results and notes write a time: ISO 8601, UTC, to the second.
_ISO = "%Y-%m-%dT%H:%M:%SZ"


def iso(timestamp: float) -> str:
    """A unix time, ISO 8601 UTC to the second."""
    return datetime.fromtimestamp(timestamp, UTC).strftime(_ISO)


def now_iso() -> str:
    """The current time, ISO 8601 UTC to the second, as notes store it."""
    return datetime.now(UTC).strftime(_ISO)
