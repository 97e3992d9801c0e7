"""What a tool call returns: the text the model reads, plus a code and structured data; and
the success texts, what a model reads after a change landed (or was kept for review)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitpatch.tools.storage.base import Applied

__all__ = ["ToolResult", "change_lines", "done", "plural", "where_data"]


@dataclasses.dataclass(frozen=True)
class ToolResult:
    """One tool call's outcome; tools return it and never raise.

    The one result type from the tools to the doors: a door shapes it once for its medium.
    ``str(result)`` is the text the model reads; ``ok`` says whether the change (or read) was
    done; ``code`` is the stable error code (None on success); ``data`` is the structured result
    (on success the tool's fields, on failure ``code``, ``message``, ``hint`` and ``details``).
    """

    text: str
    ok: bool
    code: str | None = None
    data: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: A refusal's hint on its own (the text already ends with it), for a door that shows it
    #: apart; None where the text says it all.
    hint: str | None = None
    #: Lines a door puts before the text (what happened to the session's work since its last
    #: call); the tools leave it empty.
    notices: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view: ``text``, ``ok``, ``code`` and ``data``."""
        return {"text": self.text, "ok": self.ok, "code": self.code, "data": dict(self.data)}

    @property
    def is_error(self) -> bool:
        """True for a failed call (MCP's ``isError``)."""
        return not self.ok


# -- success texts -------------------------------------------------------------------------------


def done(applied: Applied) -> str:
    """The first word of a success text: ``Applied``, or ``Proposed`` when the change waits
    for a person's review (nothing was applied yet)."""
    return "Proposed" if applied.review else "Applied"


def plural(count: int, word: str) -> str:
    """``1 edit``, ``2 edits``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def where_data(applied: Applied, show: Callable[[str], str]) -> dict[str, object]:
    """The structured twins of the lines about where the change is on disk and what became
    of the person's uncommitted work, and ``already_applied`` for a retried call's original
    change; empty when there is nothing to say."""
    data: dict[str, object] = {"already_applied": True} if applied.replayed else {}
    if applied.worktree:
        data["worktree"] = applied.worktree
    if applied.recorded:
        data["recorded"] = [show(p) for p in applied.recorded]
    if applied.carried:
        data["carried"] = [show(p) for p in applied.carried]
    if applied.hidden:
        data["hidden"] = [show(p) for p in applied.hidden]
    return data


def change_lines(applied: Applied, show: Callable[[str], str]) -> list[str]:
    """The optional lines after the first: version, lenient matches, where the change is."""
    lines = [f"Version: {applied.version}"]
    for edit in applied.edits:
        if edit.level != "exact":
            lines.append(
                f"Edit {edit.index + 1} in {show(edit.path)} matched at level {edit.level} "
                f"(lines {edit.start_line}-{edit.end_line}); check the result."
            )
    branch = (applied.branch or "").removeprefix("refs/heads/")
    target = (applied.target or "").removeprefix("refs/heads/")
    if applied.review:
        lines.append(
            f"Proposal {applied.proposal_id} is on branch {branch} for {target} and awaits a "
            "person's approval; nothing on disk changes until it is approved."
        )
    elif branch and target and branch != target:
        lines.append(f"It landed on session branch {branch} ({target} is protected).")
    if applied.worktree:
        lines.append(f"The session's files are in {applied.worktree}: run your tests there.")
    if applied.recorded:
        lines.append(
            f"The person's uncommitted changes to {', '.join(map(show, applied.recorded))} "
            "were recorded in a commit of their own first."
        )
    if applied.carried:
        lines.append(
            f"{', '.join(map(show, applied.carried))} had the person's uncommitted changes: "
            "they stay uncommitted, with this change merged in."
            if not applied.review
            else f"{', '.join(map(show, applied.carried))} has the person's uncommitted "
            "changes: the proposal holds only yours; approval merges it into their work."
        )
    if applied.hidden:
        # here, not at the top: the MCP server's start imports the result type, not the
        # write path (tests/doors/mcp/test_mcp_imports.py)
        from gitpatch.workspace.results import HIDDEN_NOTE

        lines.append(HIDDEN_NOTE.format(files=", ".join(map(show, applied.hidden))))
    return lines
