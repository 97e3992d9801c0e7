"""Noticing that an edit which does not apply is already in the file.

Models often send an edit again after it landed (a lost tool result, a retry loop). Its old
text is then gone, and the plain "not found" error sends them hunting for it. When the NEW text
is in the file, the hint says so first. Only substantial new text counts (``MIN_CHARS``
non-blank characters), so a short line found by coincidence does not make the claim, and it
is put as a question: the file decides, and the agent re-reads it.
"""

from __future__ import annotations

from collections.abc import Sequence

from gitpatch.errors import GitpatchError, MatchAmbiguous, MatchNotFound
from gitpatch.match import seek

__all__ = ["MIN_CHARS", "lines_applied_at", "note_applied", "substantial"]

#: The fewest non-blank characters the new text needs before its presence is worth a remark.
MIN_CHARS = 16


def substantial(lines: Sequence[str]) -> bool:
    """True when ``lines`` hold at least ``MIN_CHARS`` characters other than whitespace."""
    return sum(len(line.strip()) for line in lines) >= MIN_CHARS


def lines_applied_at(doc: Sequence[str], old: Sequence[str], new: Sequence[str]) -> list[int]:
    """1-based lines where the block ``new`` (replacing ``old``) already is in ``doc``.

    Compared up to the ``indentation`` level (no blank-line or fuzzy tolerance: the claim must
    be sure). Empty when ``new`` is not there, is not substantial, or equals ``old``.
    """
    if list(new) == list(old) or not substantial(new):
        return []
    try:
        return [seek(doc, list(new), profile="apply_patch").start + 1]
    except MatchAmbiguous as exc:
        return list(exc.details.get("candidates", []))
    except GitpatchError:
        return []


def note_applied(exc: MatchNotFound, where: list[int], what: str) -> MatchNotFound:
    """``exc`` with, first in its hint, the remark that ``what`` is already at lines ``where``."""
    if not where:
        return exc
    at = f"line {where[0]}" if len(where) == 1 else f"lines {', '.join(map(str, where[:5]))}"
    note = (
        f"{what} is already in the file, at {at}: was this edit applied already? Re-read the "
        "file; if the change is there, do not send it again."
    )
    hint = f"{note}\n{exc.hint}" if exc.hint else note
    return MatchNotFound(exc.message, hint=hint, details={**exc.details, "applied_at": where})
