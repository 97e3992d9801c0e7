"""Parsers: one module per edit language, each turning text (or JSON) into a ``Proposal``.

``detect`` tells which text language an edit is written in. Parsers never read files and never
decide whether an edit applies; that is the engine's job.
"""

from __future__ import annotations

import re

from gitpatch.core.model import Format
from gitpatch.errors import InvalidPatch
from gitpatch.formats import apply_patch, patch_resource, search_replace, unified_diff
from gitpatch.formats._common import require_text

__all__ = ["apply_patch", "detect", "patch_resource", "search_replace", "unified_diff"]

_SEARCH = re.compile(r"^<{5,9}\s*SEARCH\s*$", re.IGNORECASE)
_HUNK = re.compile(r"^@@ -\d")


def detect(text: str) -> Format:
    """The language of an edit text, from its first line that only one language starts with.

    ``*** Begin Patch`` is apply_patch; a ``<<<<<<< SEARCH`` line is SEARCH/REPLACE (with a
    path line before each block); ``diff --git``, a ``---`` line followed by ``+++``, or a
    ``@@ -N`` hunk header is a unified diff. Raises ``InvalidPatch`` when none is found.
    """
    lines = require_text(text, "text").splitlines()
    for number, line in enumerate(lines):
        bare = line.strip()
        if bare == "*** Begin Patch":
            return "apply_patch"
        if _SEARCH.match(bare):
            return "search_replace"
        following = lines[number + 1] if number + 1 < len(lines) else ""
        if (
            line.startswith("diff --git ")
            or (line.startswith("--- ") and following.startswith("+++ "))
            or _HUNK.match(line)
        ):
            return "unified_diff"
    raise InvalidPatch(
        "cannot tell which edit format this text is in",
        hint="Send an apply_patch text ('*** Begin Patch' ... '*** End Patch'), SEARCH/REPLACE "
        "blocks each after a line naming its file, or a unified diff ('--- a/f', '+++ b/f', "
        "'@@ ... @@').",
    )
