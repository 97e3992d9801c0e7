"""The errors ``seek`` raises, written for the model that must retry.

A miss shows the closest region of the file with its line numbers and a short diff between what
was sent and what is there; an ambiguity lists every candidate line.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from gitpatch.core.budget import checkpoint
from gitpatch.errors import MatchAmbiguous, MatchNotFound

__all__ = ["REGION_LINES", "ambiguous", "anchor_not_found", "not_found", "region_text"]

#: The most lines of a closest region a hint shows; a longer one keeps its first and last
#: halves and names the lines it leaves out.
REGION_LINES = 60


def region_text(lines: Sequence[str], start: int, end: int) -> str:
    """Lines ``start`` to ``end`` (0-based, end exclusive) of a file, each ``N | text`` with
    its 1-based number: the one form every not-found hint shows a region in. A region longer
    than ``REGION_LINES`` says how many lines it leaves out, and which."""
    numbers = list(range(start, end))
    if len(numbers) > REGION_LINES:
        half = REGION_LINES // 2
        cut = numbers[half:-half]
        rows = [f"{n + 1:>6} | {lines[n]}" for n in numbers[:half]]
        rows.append(
            f"{'...':>6} | ({len(cut)} lines left out here: lines {cut[0] + 1}-{cut[-1] + 1})"
        )
        rows += [f"{n + 1:>6} | {lines[n]}" for n in numbers[-half:]]
        return "\n".join(rows)
    return "\n".join(f"{n + 1:>6} | {lines[n]}" for n in numbers)


def ambiguous(where: list[int], level: str, pat: Sequence[str]) -> MatchAmbiguous:
    """The error for a block found at the 1-based lines ``where`` at ``level``."""
    shown = ", ".join(map(str, where[:10])) + (", ..." if len(where) > 10 else "")
    return MatchAmbiguous(
        f"the old text ({len(pat)} line{'s' if len(pat) != 1 else ''}, first line "
        f"{_clip(pat[0])!r}) matches {len(where)} places in the file (at lines {shown}, "
        f"level {level}); it must match exactly one",
        hint="Add unchanged lines from around the intended place until the old text occurs only "
        "once; where the format allows, a line number or an anchor line above the block picks "
        "among these places.",
        details={"candidates": where, "level": level},
    )


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _closest(doc: Sequence[str], pnorm: Sequence[str]) -> tuple[int, int, float] | None:
    """The window of ``doc`` most like ``pnorm``: (start, end, percent similar)."""
    from rapidfuzz import fuzz, process  # only when a hint is written

    if not doc or not any(pnorm):
        return None
    best: tuple[float, int] | None = None
    joined = "\n".join(pnorm)
    # Two probes: the longest line (most distinctive) and the first non-blank one (often the
    # definition or statement that opens the block).
    longest = max(range(len(pnorm)), key=lambda j: len(pnorm[j]))
    first = next(j for j, p in enumerate(pnorm) if p)
    for j in dict.fromkeys((longest, first)):
        checkpoint()
        hit = process.extractOne(pnorm[j], doc, scorer=fuzz.ratio)
        if hit is None:
            continue
        s = min(max(0, hit[2] - j), max(0, len(doc) - len(pnorm)))
        score = fuzz.ratio(joined, "\n".join(doc[s : s + len(pnorm)]))
        if best is None or score > best[0]:
            best = (score, s)
    if best is None:
        return None
    return best[1], min(len(doc), best[1] + len(pnorm)), best[0]


def _region_diff(pat: Sequence[str], region: Sequence[str], first: int) -> list[str]:
    """A short line diff: ``-`` sent lines, ``+ N`` file lines, one line of context around."""
    out: list[str] = []
    ops = difflib.SequenceMatcher(None, pat, region, autojunk=False).get_opcodes()
    for k, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag == "equal":
            keep = list(range(j1, j2))
            if len(keep) > 3:
                # Context: the line next to each change only.
                keep = ([j1] if k > 0 else []) + ([j2 - 1] if k < len(ops) - 1 else [])
            out.extend(f"  {first + j:>5} | {region[j]}" for j in keep)
            continue
        out.extend(f"- {'':>5} | {pat[i]}" for i in range(i1, i2))
        out.extend(f"+ {first + j:>5} | {region[j]}" for j in range(j1, j2))
    if len(out) > 16:
        out = [*out[:16], f"  ... ({len(out) - 16} more diff lines; the region above has them)"]
    return out


def not_found(
    lines: Sequence[str],
    pat: Sequence[str],
    normalized: tuple[Sequence[str], Sequence[str]],
    levels: list[str],
    start: int,
) -> MatchNotFound:
    """The error for a block not found, with the closest region of the file and a short diff.

    ``normalized`` is (document, pattern) as the punctuation level compares them; ``levels``
    names the levels compared.
    """
    names = ", ".join(levels)
    message = (
        f"the old text ({len(pat)} line{'s' if len(pat) != 1 else ''}, first line "
        f"{_clip(pat[0])!r}) was not found in the file"
        + (f" at or after line {start + 1}" if start else "")
        + f" (compared: {names})"
    )
    details: dict[str, object] = {"levels": list(levels)}
    region = _closest(*normalized)
    if region is None:
        hint = "The file has no similar text. Re-read the file and copy the old text exactly."
        return MatchNotFound(message, hint=hint, details=details)
    s, e, score = region
    details["closest"] = {"start_line": s + 1, "end_line": e, "similarity": round(score, 1)}
    diff = _region_diff(pat, lines[s:e], s + 1)
    hint = (
        f"The closest region is lines {s + 1}-{e} ({score:.1f}% similar), as the file has it:\n"
        + region_text(lines, s, e)
        + "\nWhere it differs: '-' lines were sent, '+' lines are the file's:\n"
        + "\n".join(diff)
        + "\nCopy the old text exactly from the file (re-read it if it changed) and retry."
    )
    return MatchNotFound(message, hint=hint, details=details)


def anchor_not_found(anchor: str) -> MatchNotFound:
    """The error for an anchor line that no line of the file equals or starts with."""
    return MatchNotFound(
        f"the anchor line {_clip(anchor)!r} is not in the file",
        hint="An anchor must be the text (or the start of the text) of a line above the block; "
        "re-read the file and copy that line, or drop the anchor.",
        details={"anchor": anchor},
    )
