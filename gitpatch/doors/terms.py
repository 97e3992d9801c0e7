"""Hints in each door's own terms: the ONE mapping from the library's words to the others'.

The library writes its messages and hints for its own callers, in Python (``proposals()``,
``approve('agent')``, ``Workspace.open``). A person at the CLI and a model behind the MCP
server cannot call those: each door passes every message and hint through ``in_terms`` with
its name, which rewrites the Python phrases this table knows into that door's commands or
tools. A phrase with no equivalent there is dropped with the clause that names it.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["Door", "in_terms"]

Door = Literal["cli", "mcp"]

#: (Python phrase, CLI words, MCP words); ``\1`` is the name a phrase carries.
_TERMS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(r", or pass branch='name' to Workspace\.open"),
        " (`git switch NAME`)",
        " (the person runs `git switch NAME`)",
    ),
    (
        re.compile(r"approve\('([^']*)'\)"),
        r"`gitpatch approve \1`",
        r"`gitpatch approve \1` (a person runs it)",
    ),
    (re.compile(r"\bproposals\(\)"), "`gitpatch proposals`", "list_proposals"),
    (re.compile(r"\bshow\(\)"), "`gitpatch show ID`", "show_proposal"),
    (re.compile(r"\bUse undo\(\)"), "Use `gitpatch undo`", "Ask the person to run `gitpatch undo`"),
    (
        re.compile(
            r", or open the Workspace with dirty='record' to have them recorded in a "
            r"commit of their own"
        ),
        "",
        "",
    ),
    (
        re.compile(
            r"; change your approach, or pass revision=True if the reviewer asked for "
            r"this revision"
        ),
        "; change your approach",
        "; change your approach",
    ),
    (
        re.compile(r"a plain comment \(kind='comment'\)"),
        "a plain comment (without --request-changes)",
        "a plain comment",
    ),
    (
        re.compile(r"Use mode='auto' or mode='review'"),
        "Use --mode auto or --mode review",
        "Start the server with --mode auto or --mode review",
    ),
)


def in_terms(text: str, door: Door) -> str:
    """``text`` (a message or a hint) with the library's Python phrases in ``door``'s terms."""
    column = 1 if door == "cli" else 2
    for row in _TERMS:
        pattern, replacement = row[0], row[column]
        assert isinstance(pattern, re.Pattern) and isinstance(replacement, str)
        text = pattern.sub(replacement, text)
    return text
