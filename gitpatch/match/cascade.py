"""Finding where a block of lines belongs in a document, or refusing when that is not certain.

``seek`` walks a cascade of levels, each more lenient than the one before:

=====================  ===================================================================
level                  a pattern line equals a document line when...
=====================  ===================================================================
exact                  they are equal (line terminators are never part of a line)
trailing_whitespace    they are equal after ``rstrip``
whitespace             they are equal after ``strip``
punctuation            equal after ``strip`` and mapping typographic dashes, quotes, odd
                       spaces and the ellipsis to ASCII
indentation            equal after ``strip``, and the whole block differs from the document
                       by ONE uniform indentation change (a prefix, or tabs <-> spaces)
blank_lines            equal at ``punctuation``, blank lines inside the block ignored on both
                       sides (the matched range may then be longer or shorter than the pattern)
fuzzy                  a line-aligned similarity over the block is high, every line is close,
                       and no other window comes near it (see below)
=====================  ===================================================================

At each level ALL candidate positions at or after ``start`` are collected. One is returned; several
are resolved only by an anchor (the first candidate below each anchor line) or by a line hint that
is strictly nearest to one of them, otherwise ``MatchAmbiguous``; the cascade never falls through
to a more lenient level after a level found several. A hint never makes content match.

Whenever the matched block differs from the pattern by one uniform indentation change,
``Match.indent`` (and ``Match.unit`` for tabs <-> spaces) records it, so ``reindent`` can move the
replacement into the file's indentation. The ``whitespace`` level absorbs such differences too,
so the difference is recorded there as well; without it a replacement written in the agent's
indentation would land in the wrong column.

Fuzzy matching compares a window of exactly ``len(pattern)`` lines line by line (normalised as at
``punctuation``). Its score is ``100 * (1 - indel_distance / total_length)`` summed over lines, so
a shifted window, which pairs every line with a different one, scores low. A window is plausible
only when every line is at least ``FUZZY_LINE_MIN`` similar and at most a third of the lines
differ; the best plausible window wins only when it scores at least ``FUZZY_THRESHOLD`` AND beats
every other plausible window by ``FUZZY_MARGIN``. Blocks under ``FUZZY_MIN_LINES`` non-blank lines
or ``FUZZY_MIN_CHARS`` characters are never matched fuzzily: a typo in a short block is as likely
to be a different line.

Tuning (``bench/robustness``, 300 one-character-typo cases and 300 foreign-line cases): the
intended window scored 99.2-99.9 (a typo costs about ``100/length`` points); no window with a
foreign line inserted was even plausible (the shift breaks the line alignment, even with the line
minimum lowered to 50); other plausible windows, where the file has a near-twin block, scored
90.8-99.8. Hence a threshold of 95 (room for a few wrong characters, not for a stale block) and a
margin of 5 (near-twins are refused, never guessed). The line minimum of 70 admits a one-character
typo in a 4-character line.

Speed: each level works on the document normalised once (cached per ``lines`` tuple, so several
edits to one document pay once). Candidates come from C-level ``list.index`` scans for the
pattern's longest line; the block is compared only there. When that line is absent even under
punctuation normalisation, every level up to ``blank_lines`` is skipped. Fuzzy windows come from
a rapidfuzz scan with ``score_cutoff`` for the longest line (and the second longest when the
first is common); the closest region of a miss costs two ``extractOne`` scans.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from gitpatch.core.budget import checkpoint
from gitpatch.core.model import Format
from gitpatch.errors import InvalidPatch
from gitpatch.match.indentation import indent_change, shift_lines
from gitpatch.match.messages import ambiguous, anchor_not_found, not_found

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


class Level(StrEnum):
    """A matching level; the value is the name used in results and docs."""

    EXACT = "exact"
    TRAILING_WHITESPACE = "trailing_whitespace"
    WHITESPACE = "whitespace"
    PUNCTUATION = "punctuation"
    INDENTATION = "indentation"
    BLANK_LINES = "blank_lines"
    FUZZY = "fuzzy"


_HUNK_LEVELS = (
    Level.EXACT,
    Level.TRAILING_WHITESPACE,
    Level.WHITESPACE,
    Level.PUNCTUATION,
    Level.INDENTATION,
)

#: Which levels each edit language may use, in cascade order: the one table the engine and the
#: tools take profiles from. apply_patch (and unified diffs, whose hunks work the same way) stop
#: before blank_lines: their hunks pair each context/removed line with one file line, which a
#: blank-line-tolerant match (a range of another length) would break; indentation is a strict
#: subset of whitespace. patch_resource's old_string is exact by contract.
PROFILES: dict[Format, tuple[Level, ...]] = {
    "search_replace": tuple(Level),
    "apply_patch": _HUNK_LEVELS,
    "unified_diff": _HUNK_LEVELS,
    "patch_resource": (Level.EXACT,),
}

FUZZY_THRESHOLD = 95.0
FUZZY_MARGIN = 5.0
FUZZY_LINE_MIN = 70.0
FUZZY_MIN_LINES = 3
FUZZY_MIN_CHARS = 60


@dataclass(frozen=True)
class Match:
    """Where a pattern matched: document lines ``[start, end)`` (0-based) and at which level.

    ``indent`` is ``(pattern_prefix, file_prefix)`` when the block differs from the pattern by one
    uniform indentation change; ``unit`` is ``(pattern_unit, file_unit)`` (e.g. ``("\\t", "    ")``)
    when that change also swaps tabs and spaces. ``score`` is set for fuzzy matches only.
    """

    start: int
    end: int
    level: Level
    indent: tuple[str, str] | None = None
    score: float | None = None
    unit: tuple[str, str] | None = None


_PUNCT = str.maketrans(
    {
        **{chr(c): "-" for c in range(0x2010, 0x2016)},
        "\u2212": "-",
        **{chr(c): "'" for c in range(0x2018, 0x201C)},
        **{chr(c): '"' for c in range(0x201C, 0x2020)},
        **{chr(c): " " for c in (0x00A0, *range(0x2002, 0x200B), 0x202F, 0x205F, 0x3000)},
        "\u2026": "...",
    }
)


def normalize_punctuation(line: str) -> str:
    """``line`` stripped, with typographic and look-alike characters mapped to ASCII."""
    return line.strip() if line.isascii() else line.translate(_PUNCT).strip()


# The normalisation each level compares with; indentation compares stripped lines and then checks
# the indentation itself.
_KEY = {
    Level.EXACT: "exact",
    Level.TRAILING_WHITESPACE: "rstrip",
    Level.WHITESPACE: "strip",
    Level.PUNCTUATION: "punct",
    Level.INDENTATION: "strip",
    Level.BLANK_LINES: "punct",
    Level.FUZZY: "punct",
}


def _normalize(lines: Sequence[str], key: str) -> list[str]:
    if key == "exact":
        return list(lines)
    if key == "rstrip":
        return list(map(str.rstrip, lines))
    if key == "strip":
        return list(map(str.strip, lines))
    table = _PUNCT
    return [s.strip() if s.isascii() else s.translate(table).strip() for s in lines]


class _View:
    """One document's lines, normalised lazily once per key."""

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = lines
        self._norm: dict[str, list[str]] = {}
        self._nonblank: tuple[list[int], list[str]] | None = None

    def norm(self, key: str) -> list[str]:
        """The document's lines under normalisation ``key``."""
        got = self._norm.get(key)
        if got is None:
            got = self._norm[key] = _normalize(self.lines, key)
        return got

    def nonblank(self) -> tuple[list[int], list[str]]:
        """Positions and punctuation-normalised text of the non-blank lines."""
        if self._nonblank is None:
            punct = self.norm("punct")
            pos = [i for i, s in enumerate(punct) if s]
            self._nonblank = (pos, [punct[i] for i in pos])
        return self._nonblank


_CACHE: OrderedDict[int, _View] = OrderedDict()
_CACHE_SIZE = 8
_CACHE_LOCK = threading.Lock()


def _view(lines: Sequence[str]) -> _View:
    # Only tuples are cached: they cannot change under us, and the view keeps the tuple alive so
    # its id cannot be reused while cached.
    if not isinstance(lines, tuple):
        return _View(lines)
    with _CACHE_LOCK:
        got = _CACHE.get(id(lines))
        if got is not None and got.lines is lines:
            _CACHE.move_to_end(id(lines))
            return got
        got = _CACHE[id(lines)] = _View(lines)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
        return got


def _positions(seq: list[str], value: str) -> list[int]:
    """Every index of ``value`` in ``seq`` (C-level scans, no per-position Python compare)."""
    out: list[int] = []
    i = -1
    try:
        while True:
            i = seq.index(value, i + 1)
            out.append(i)
            if not len(out) & 4095:
                checkpoint()
    except ValueError:
        return out


def _find_runs(seq: list[str], pat: list[str], start: int) -> list[int]:
    """Start indices ``>= start`` where ``pat`` occurs as a contiguous run in ``seq``."""
    n = len(pat)
    if n == 0 or n > len(seq):
        return []
    probe = max(range(n), key=lambda j: len(pat[j]))
    out = []
    for k, i in enumerate(_positions(seq, pat[probe])):
        if not k & 1023:
            checkpoint()
        s = i - probe
        if s >= start and s + n <= len(seq) and seq[s : s + n] == pat:
            out.append(s)
    return out


def reindent(lines: Sequence[str], match: Match) -> list[str]:
    """Move replacement lines written in the pattern's indentation into the file's style."""
    if match.indent is None:
        return list(lines)
    return shift_lines(lines, match.indent, match.unit)


def find_substring(text: str, needle: str) -> list[int]:
    """All non-overlapping start offsets of ``needle`` in ``text``.

    ``needle`` is never empty: ``Replace`` refuses an empty ``old_string`` when it is built.
    """
    if not needle:
        raise ValueError("find_substring needs a non-empty needle")
    out: list[int] = []
    i = text.find(needle)
    while i >= 0:
        out.append(i)
        if not len(out) & 4095:
            checkpoint()
        i = text.find(needle, i + len(needle))
    return out


def _line_candidates(view: _View, pattern: list[str], level: Level, start: int) -> list[Match]:
    key = _KEY[level]
    n = len(pattern)
    starts = _find_runs(view.norm(key), _normalize(pattern, key), start)
    if level in (Level.EXACT, Level.TRAILING_WHITESPACE):
        return [Match(s, s + n, level) for s in starts]
    out = []
    for s in starts:
        uniform, indent, unit = indent_change(pattern, view.lines[s : s + n])
        if level is Level.INDENTATION and not uniform:
            continue
        out.append(Match(s, s + n, level, indent=indent, unit=unit))
    return out


def _blank_candidates(view: _View, pattern: list[str], start: int) -> list[Match]:
    pnorm = _normalize(pattern, "punct")
    core = [j for j, p in enumerate(pnorm) if p]
    if not core:
        return []
    pos, vals = view.nonblank()
    k0 = next((k for k, i in enumerate(pos) if i >= start), len(pos))
    lead, trail = core[0], len(pattern) - 1 - core[-1]
    out = []
    for k in _find_runs(vals, [pnorm[j] for j in core], k0):
        checkpoint()
        first, last = pos[k], pos[k + len(core) - 1]
        s, e = first, last + 1
        # Take in the pattern's own leading/trailing blank lines when the file has them there.
        while s > max(start, first - lead) and not view.norm("punct")[s - 1]:
            s -= 1
        while e < min(len(view.lines), last + 1 + trail) and not view.norm("punct")[e]:
            e += 1
        block = [view.lines[pos[k + c]] for c in range(len(core))]
        _, indent, unit = indent_change([pattern[j] for j in core], block)
        out.append(Match(s, e, Level.BLANK_LINES, indent=indent, unit=unit))
    return out


def _window_score(pat: list[str], doc: list[str], s: int, max_changed: int) -> float | None:
    from rapidfuzz import fuzz
    from rapidfuzz.distance import Indel

    dist = total = changed = 0
    for j, p in enumerate(pat):
        w = doc[s + j]
        total += len(p) + len(w)
        if p == w:
            continue
        changed += 1
        if changed > max_changed or fuzz.ratio(p, w) < FUZZY_LINE_MIN:
            return None
        dist += Indel.distance(p, w)
    return 100.0 if not total else 100.0 * (1 - dist / total)


def _fuzzy_candidates(view: _View, pattern: list[str], start: int) -> list[Match]:
    # rapidfuzz is imported here, when a fuzzy level runs, not when gitpatch starts.
    from rapidfuzz import fuzz, process

    pnorm = _normalize(pattern, "punct")
    nonblank = [p for p in pnorm if p]
    if len(nonblank) < FUZZY_MIN_LINES or sum(map(len, nonblank)) < FUZZY_MIN_CHARS:
        return []
    doc = view.norm("punct")
    n = len(pnorm)
    starts: set[int] | None = None
    # Every plausible window has each line >= FUZZY_LINE_MIN similar, so scanning for the longest
    # line finds all of them; a second scan narrows the windows when that line is common.
    for j in sorted(range(n), key=lambda j: -len(pnorm[j]))[:2]:
        checkpoint()
        hits = process.extract(
            pnorm[j], doc, scorer=fuzz.ratio, score_cutoff=FUZZY_LINE_MIN, limit=None
        )
        found = {idx - j for _, _, idx in hits}
        starts = found if starts is None else starts & found
        if len(starts) <= 64:
            break
    out = []
    for k, s in enumerate(sorted(starts or ())):
        if not k & 15:
            checkpoint()
        if s < start or s + n > len(doc):
            continue
        score = _window_score(pnorm, doc, s, max(1, len(nonblank) // 3))
        if score is not None:
            _, indent, unit = indent_change(pattern, view.lines[s : s + n])
            out.append(Match(s, s + n, Level.FUZZY, indent=indent, score=score, unit=unit))
    return out


def _candidates(view: _View, pattern: list[str], level: Level, start: int) -> list[Match]:
    if level is Level.BLANK_LINES:
        return _blank_candidates(view, pattern, start)
    if level is Level.FUZZY:
        return _fuzzy_candidates(view, pattern, start)
    return _line_candidates(view, pattern, level, start)


def _levels(profile: Format | Sequence[Level]) -> tuple[Level, ...]:
    if isinstance(profile, str):
        if profile not in PROFILES:
            raise InvalidPatch(
                f"unknown matching profile {profile!r}",
                hint=f"Use one of: {', '.join(PROFILES)}.",
            )
        return PROFILES[profile]
    return tuple(Level(level) for level in profile)


def anchor_lines(lines: Sequence[str], anchor: str, start: int = 0) -> list[int]:
    """The 0-based lines at or after ``start`` that an anchor (``@@ def f():``) names.

    Lines equal to it, compared stripped with typographic punctuation as ASCII; failing those,
    lines that start with it. The one anchor finder: ``seek`` and the engine's insertions use it.
    """
    return _anchor_lines(_view(lines), anchor, start)


def _anchor_lines(view: _View, anchor: str, start: int = 0) -> list[int]:
    want = normalize_punctuation(anchor)
    punct = view.norm("punct")
    equal = [i for i in _positions(punct, want) if i >= start]
    if equal or not want:
        return equal
    return [i for i in range(start, len(punct)) if punct[i].startswith(want)]


def _longest_absent(view: _View, pat: list[str]) -> bool:
    longest = max(_normalize(pat, "punct"), key=len)
    return bool(longest) and longest not in view.norm("punct")


def _at_end_ok(view: _View, m: Match) -> bool:
    # Blank lines after the block do not count: agents rarely show a file's trailing blank lines.
    return not any(view.norm("strip")[m.end :])


def _narrow(found: list[Match], anchors: list[int] | None, hint: int | None) -> Match | None:
    """Pick one of several candidates by anchor, then by a strictly nearest line hint."""
    if anchors is not None and found[0].level is not Level.FUZZY:
        firsts = {
            min(m.start for m in found if m.start > a) for a in anchors if a < found[-1].start
        }
        found = [m for m in found if m.start in firsts]
        if len(found) == 1:
            return found[0]
    if hint is not None:
        dist = sorted((abs(m.start + 1 - hint), m.start) for m in found)
        if dist[0][0] < dist[1][0]:
            best = next(m for m in found if m.start == dist[0][1])
            if best.score is None or best.score >= FUZZY_THRESHOLD:
                return best
    return None


def _fuzzy_contenders(found: list[Match]) -> list[Match]:
    best = max(m.score or 0.0 for m in found)
    if best < FUZZY_THRESHOLD:
        return []
    return [m for m in found if (m.score or 0.0) > best - FUZZY_MARGIN]


def seek(
    lines: Sequence[str],
    pattern: Sequence[str],
    *,
    start: int = 0,
    line_hint: int | None = None,
    anchor: str | None = None,
    at_end: bool = False,
    profile: Format | Sequence[Level] = "search_replace",
) -> Match:
    """Find the one place where ``pattern`` (lines without terminators) sits in ``lines``.

    ``start``: 0-based first line a match may begin at. ``line_hint``: 1-based line the caller
    believes the block starts at; it only chooses among content matches. ``anchor``: a line, or
    the start of a line, somewhere above the block. ``at_end``: the block must end the document
    (trailing blank lines aside). Raises ``MatchNotFound``, ``MatchAmbiguous`` or, for an empty
    pattern, ``InvalidPatch``.
    """
    levels = _levels(profile)
    pat = list(pattern)
    if not pat:
        raise InvalidPatch(
            "the text to find is empty",
            hint="Include at least one line of the existing file to locate the edit.",
        )
    view = _view(lines)
    start = max(0, start)
    anchors = None
    if anchor is not None and normalize_punctuation(anchor):
        anchors = _anchor_lines(view, anchor)
        if not anchors:
            raise anchor_not_found(anchor)
    absent: bool | None = None
    for level in levels:
        checkpoint()
        if level not in (Level.EXACT, Level.FUZZY):
            # Every level from trailing_whitespace to blank_lines is a refinement of equality
            # under punctuation normalisation: if the pattern's longest line is nowhere in the
            # file under it, none of them can match, and their normalisations can be skipped.
            if absent is None:
                absent = _longest_absent(view, pat)
            if absent:
                continue
        found = _candidates(view, pat, level, start)
        if at_end:
            found = [m for m in found if _at_end_ok(view, m)]
        if anchors is not None:
            found = [m for m in found if m.start > anchors[0]]
        if level is Level.FUZZY and found:
            found = _fuzzy_contenders(found)
        if not found:
            continue
        if len(found) == 1:
            return found[0]
        chosen = _narrow(found, anchors, line_hint)
        if chosen is None:
            raise ambiguous([m.start + 1 for m in found], level.value, pat)
        return chosen
    normalized = (view.norm("punct"), _normalize(pat, "punct"))
    below = start if anchors is None else max(start, anchors[0] + 1)
    raise not_found(view.lines, pat, normalized, [lv.value for lv in levels], below)
