"""Where a file's blank lines go when the old text left them out (the ``blank_lines`` level).

At ``blank_lines`` the matched lines may include blank lines the agent did not quote. They stay
where they are, and usually that is the whole story. The hard case is a spot where the agent
ADDS lines right at such a blank line: its new text says nothing about whether they go above or
below it. ``placed_gap`` places them only when the new text or the indentation makes that clear
(the file's blank run is never doubled by the agent's own), and otherwise refuses with
``MatchAmbiguous`` rather than guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from gitpatch.core.model import HunkLine
from gitpatch.errors import MatchAmbiguous

__all__ = [
    "NewLine",
    "Out",
    "Spot",
    "blank_context_ahead",
    "blank_tail",
    "dedupe_blank_runs",
    "kept_above",
    "placed_gap",
]

#: A new line and its terminator; ``None`` means "the file's dominant line ending".
NewLine = tuple[str, str | None]
#: A rendered line: text, terminator, and its origin (" " context, "+" added, "extra" a file line
#: the pattern did not mention).
Out = tuple[str, str | None, str]


def dedupe_blank_runs(out: list[Out]) -> tuple[NewLine, ...]:
    """Drop added blank lines that a kept, unmentioned blank line of the file already provides.

    An agent that left a blank line out of its old text but kept it in its new text means the
    blank line the file has, not a second one. Within each run of blank lines, every file blank
    line the pattern did not mention cancels one added blank line.
    """
    drop: set[int] = set()
    k = 0
    while k < len(out):
        if out[k][0].strip():
            k += 1
            continue
        run_end = k
        while run_end < len(out) and not out[run_end][0].strip():
            run_end += 1
        added = [n for n in range(k, run_end) if out[n][2] == "+"]
        spare = sum(1 for n in range(k, run_end) if out[n][2] == "extra")
        drop.update(added[:spare])
        k = run_end
    return tuple((t, e) for n, (t, e, _) in enumerate(out) if n not in drop)


def _blank_runs(lines: Sequence[str]) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of blank lines in ``lines``."""
    runs: list[tuple[int, int]] = []
    for k, text in enumerate(lines):
        if text.strip():
            continue
        if runs and runs[-1][1] == k:
            runs[-1] = (runs[-1][0], k + 1)
        else:
            runs.append((k, k + 1))
    return runs


class Spot(NamedTuple):
    """What surrounds the spot where lines are added: blank lines already kept just above it
    and blank context lines just below it, the old lines removed just above it, and the file
    lines kept on either side (None unless both are non-blank context)."""

    blanks_above: int
    blanks_below: int
    removed: int
    above: str | None
    below: str | None


def _gap(spare: list[Out], added: list[Out], spot: Spot) -> list[Out]:
    """Where the file's unmentioned blank lines ``spare`` go among lines ``added`` at one spot.

    The pattern left the file's blank line(s) out right where lines are added, so the agent's
    new text says nothing about where they belong; a guess could put them on the wrong side.
    With the blank lines around the spot, ``added`` makes up the new text there. Clear cases:

    - that text has ONE run of blank lines: it stands for the file's run, which joins it (and
      ``dedupe_blank_runs`` keeps the longer of the two);
    - it has several runs, each at least as long as the file's: every reading gives the same;
    - ``added`` has no blank line and replaces, line for line or fewer, the lines removed just
      above: the blank line(s) stay below it, as they were below the removed lines;
    - the indentation says which neighbour the added lines belong to (``_side``).

    Anything else raises ``_UnclearBlank``, which the caller turns into a refusal.
    """
    if not spare or not added:
        return added + spare
    texts = [""] * spot.blanks_above + [t for t, _, _ in added] + [""] * spot.blanks_below
    runs = _blank_runs(texts)
    if len(runs) == 1:
        at = min(max(0, runs[0][0] - spot.blanks_above), len(added))
        return added[:at] + spare + added[at:]
    if runs and all(e - s >= len(spare) for s, e in runs):
        return added
    if not runs and len(added) <= spot.removed:
        return added + spare
    side = None if runs else _side(added, spot.above, spot.below)
    if side == "above":
        return added + spare
    if side == "below":
        return spare + added
    raise _UnclearBlank


def _width(line: str) -> int:
    wide = line.expandtabs(8)
    return len(wide) - len(wide.lstrip())


def _side(added: list[Out], above: str | None, below: str | None) -> str | None:
    """The neighbour that text lines added between ``above`` and ``below`` belong to, when the
    indentation says so: the file dedents from ``above`` to ``below``, and the added lines are
    deeper than ``below`` (they end the block above) or at its level (they open what follows).
    """
    if above is None or below is None or _width(above) <= _width(below):
        return None
    least = min(_width(t) for t, _, _ in added)
    if least > _width(below):
        return "above"
    return "below" if least == _width(below) else None


class _UnclearBlank(Exception):
    """Lines are added where the file has blank lines the pattern left out (see ``_gap``)."""


def blank_tail(out: Sequence[Out]) -> int:
    """How many blank lines ``out`` ends with."""
    k = len(out)
    while k and not out[k - 1][0].strip():
        k -= 1
    return len(out) - k


def kept_above(out: Sequence[Out]) -> str | None:
    """The last line of ``out`` when it is a non-blank line kept from the file."""
    return out[-1][0] if out and out[-1][2] == " " and out[-1][0].strip() else None


def blank_context_ahead(ops: Sequence[HunkLine]) -> list[int]:
    """For each old line: how many blank context lines start there (0 if it is not one)."""
    old = [h for h in ops if h.op != "+"]
    ahead = [0] * (len(old) + 1)
    for k in range(len(old) - 1, -1, -1):
        if old[k].op == " " and not old[k].text.strip():
            ahead[k] = ahead[k + 1] + 1
    return ahead


def placed_gap(spare: list[Out], added: list[Out], spot: Spot, at: int) -> list[Out]:
    """``_gap``, with its refusal as the error the agent reads (``at``: 0-based file line)."""
    try:
        return _gap(spare, added, spot)
    except _UnclearBlank:
        lines = list(range(at + 1, at + 1 + len(spare)))
        shown = f"line {at + 1}" if len(spare) == 1 else f"lines {at + 1}-{at + len(spare)}"
        raise MatchAmbiguous(
            f"the file has {len(spare)} blank line{'s' if len(spare) > 1 else ''} at {shown} "
            "that the old text leaves out, and the new text adds lines right there: it is "
            "unclear whether they go above or below the blank line"
            + ("s" if len(spare) > 1 else ""),
            hint="Include the file's blank line(s) in the old text exactly as the file has "
            "them, and put them in the new text where they belong.",
            details={"blank_lines": lines, "level": "blank_lines"},
        ) from None
