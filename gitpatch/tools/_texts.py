"""Success texts: what a model reads after a change landed (or was kept for review)."""

from __future__ import annotations

from collections.abc import Callable

from gitpatch.tools.storage.base import Applied
from gitpatch.workspace.results import HIDDEN_NOTE

__all__ = ["change_lines", "done", "plural", "where_data"]


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
        lines.append(HIDDEN_NOTE.format(files=", ".join(map(show, applied.hidden))))
    return lines
