"""Success texts: what a model reads after a change landed (or was kept for review)."""

from __future__ import annotations

from collections.abc import Callable

from gitpatch.tools.storage.base import Applied

__all__ = ["change_lines", "plural"]


def plural(count: int, word: str) -> str:
    """``1 edit``, ``2 edits``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


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
    return lines
