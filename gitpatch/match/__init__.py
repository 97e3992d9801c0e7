"""The matcher: where a block of lines belongs in a document, or a refusal saying why not.

``seek`` runs the cascade of levels (``Level``) a tool's profile allows (``PROFILES``) and
returns a ``Match``; ``reindent`` moves a replacement into the indentation the match found.

- ``cascade``: the levels, candidate search, anchors and hints (``seek``);
- ``indentation``: detecting and applying one uniform indentation change;
- ``messages``: the ``MatchNotFound`` / ``MatchAmbiguous`` errors with hints for the model.

The matcher is a pure function over lines: it never reads files, never edits text and knows
nothing of formats or git.
"""

from __future__ import annotations

from gitpatch.match.cascade import (
    FUZZY_LINE_MIN,
    FUZZY_MARGIN,
    FUZZY_MIN_CHARS,
    FUZZY_MIN_LINES,
    FUZZY_THRESHOLD,
    PROFILES,
    Level,
    Match,
    anchor_lines,
    find_substring,
    normalize_punctuation,
    reindent,
    seek,
)

__all__ = [
    "FUZZY_LINE_MIN",
    "FUZZY_MARGIN",
    "FUZZY_MIN_CHARS",
    "FUZZY_MIN_LINES",
    "FUZZY_THRESHOLD",
    "PROFILES",
    "Level",
    "Match",
    "anchor_lines",
    "find_substring",
    "normalize_punctuation",
    "reindent",
    "seek",
]
