"""Running corpus cases and scoring them: correct, refused or WRONG."""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from bench.robustness.corpus import RECOVERABLE, Case
from gitpatch import engine
from gitpatch.core.model import Format, Proposal
from gitpatch.core.text import Document
from gitpatch.errors import GitpatchError, MatchAmbiguous
from gitpatch.formats import apply_patch, patch_resource, search_replace, unified_diff
from gitpatch.match import Match, normalize_punctuation, reindent, seek

__all__ = [
    "FORMATS",
    "Tally",
    "apply_patch_text",
    "outcome",
    "run_apply_patch",
    "run_patch_resource",
    "run_matcher",
    "run_search_replace",
    "run_unified_diff",
    "search_replace_text",
    "tally",
    "unified_diff_text",
]

#: How a case fared: "correct", "refused" or "wrong".
Outcome = str


def run_matcher(case: Case, profile: Format = "search_replace") -> bytes:
    """Apply ``case`` with the matcher alone: seek, then replace only what the agent changed.

    Lines the agent quoted unchanged keep the file's own text (so its misquotes do not land in
    the file); changed and added lines are re-indented into the file's style.
    """
    doc = Document.from_bytes(case.data)
    old, new = case.old.split("\n"), case.new.split("\n")
    found = seek(doc.lines, old, profile=profile)
    region = list(doc.lines[found.start : found.end])
    return doc.splice(found.start, found.end, _merge(old, new, region, found)).to_bytes()


def _pairs(old: list[str], region: list[str]) -> list[int | None]:
    """For each quoted line, the file line it stands for (None for a line the file lacks)."""
    if len(old) == len(region):
        return list(range(len(old)))
    pair: list[int | None] = [None] * len(old)
    keys = [normalize_punctuation(x) for x in old], [normalize_punctuation(x) for x in region]
    for tag, i1, i2, j1, _ in difflib.SequenceMatcher(None, *keys, autojunk=False).get_opcodes():
        if tag == "equal":
            for d in range(i2 - i1):
                pair[i1 + d] = j1 + d
    return pair


def _merge(old: list[str], new: list[str], region: list[str], found: Match) -> list[str]:
    """The region with the agent's change; lines it did not quote stay where they are.

    Where added lines (other than a line-for-line replacement) meet such a line, which side it
    goes is the engine's decision (see the search_replace route); this stand-in refuses.
    """
    pair = _pairs(old, region)
    out: list[str] = []
    nxt = 0  # the first file line of the region not yet kept or dropped
    added = False  # lines were added since the last quoted line
    for tag, i1, i2, j1, j2 in _opcodes(old, new):
        for i in range(i1, i2):
            j = pair[i]
            if j is None:
                continue
            if added and j > nxt:
                raise MatchAmbiguous("added lines meet a line the old text did not quote")
            out.extend(region[nxt:j])  # lines the agent did not quote stay
            nxt, added = j + 1, False
            if tag == "equal":
                out.append(region[j])
        if tag != "equal":
            out.extend(reindent(new[j1:j2], found))
            # a line-for-line replacement keeps what followed its old lines after it
            added = j2 > j1 and not (tag == "replace" and j2 - j1 <= i2 - i1)
    return out + region[nxt:]


def _opcodes(a: list[str], b: list[str]) -> Sequence[tuple[str, int, int, int, int]]:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()


PATH = "src/module.py"


def _engine(proposal: Proposal, case: Case) -> bytes:
    changes = engine.apply(proposal, {PATH: case.data}).changes
    content = next(ch.content for ch in changes if ch.path == PATH)
    if content is None:
        raise AssertionError("the file was deleted")
    return content


def search_replace_text(case: Case) -> str:
    """The case as one bare SEARCH/REPLACE block."""
    return f"<<<<<<< SEARCH\n{case.old}\n=======\n{case.new}\n>>>>>>> REPLACE\n"


def _hunk_body(case: Case) -> list[str]:
    """Old and new text as hunk lines: the lines they share are context, the rest -/+."""
    old, new = case.old.split("\n"), case.new.split("\n")
    body: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
        None, old, new, autojunk=False
    ).get_opcodes():
        if tag == "equal":
            body.extend(" " + x for x in old[i1:i2])
            continue
        body.extend("-" + x for x in old[i1:i2])
        body.extend("+" + x for x in new[j1:j2])
    return body


def apply_patch_text(case: Case) -> str:
    """The case as an apply_patch Update with one hunk: the line diff of old and new text."""
    lines = [
        "*** Begin Patch",
        f"*** Update File: {PATH}",
        "@@",
        *_hunk_body(case),
        "*** End Patch",
    ]
    return "\n".join(lines) + "\n"


def unified_diff_text(case: Case) -> str:
    """The case as a one-hunk unified diff, with its line number when it has one (refusal cases
    have no true position and get a bare ``@@``)."""
    body = _hunk_body(case)
    old_n = sum(1 for x in body if x[:1] != "+")
    new_n = sum(1 for x in body if x[:1] != "-")
    numbers = f" -{case.line},{old_n} +{case.line},{new_n} @@" if case.line else ""
    return f"--- a/{PATH}\n+++ b/{PATH}\n@@{numbers}\n" + "\n".join(body) + "\n"


def run_search_replace(case: Case) -> bytes:
    """The case through the SEARCH/REPLACE parser and the engine."""
    return _engine(search_replace.parse(search_replace_text(case), PATH), case)


def run_apply_patch(case: Case) -> bytes:
    """The case through the apply_patch parser and the engine."""
    return _engine(apply_patch.parse(apply_patch_text(case)), case)


def run_patch_resource(case: Case) -> bytes:
    """The case as one patch_resource old_string edit through the engine."""
    return _engine(
        patch_resource.parse(PATH, [{"old_string": case.old, "new_string": case.new}]), case
    )


def run_unified_diff(case: Case) -> bytes:
    """The case through the unified-diff parser and the engine."""
    return _engine(unified_diff.parse(unified_diff_text(case)), case)


#: Every way to run a case, with the matcher profile each one uses.
FORMATS: dict[str, tuple[Callable[[Case], bytes], Format]] = {
    "matcher": (run_matcher, "search_replace"),
    "search_replace": (run_search_replace, "search_replace"),
    "apply_patch": (run_apply_patch, "apply_patch"),
    "patch_resource": (run_patch_resource, "patch_resource"),
    "unified_diff": (run_unified_diff, "unified_diff"),
}


def outcome(case: Case, apply: Callable[[Case], bytes]) -> Outcome:
    """Score one case: a refusal is any GitpatchError; anything else must give the bytes."""
    try:
        got = apply(case)
    except GitpatchError:
        return "refused"
    return "correct" if got == case.expected else "wrong"


@dataclass(frozen=True)
class Tally:
    """Outcome counts per damage kind, and the cases that went wrong."""

    counts: dict[str, Counter[str]]
    wrong: tuple[str, ...]

    def recoverable_rate(self, kinds: Sequence[str] = RECOVERABLE) -> float:
        """Share of cases of the recoverable ``kinds`` applied correctly."""
        got = sum(c["correct"] for k, c in self.counts.items() if k in kinds)
        total = sum(sum(c.values()) for k, c in self.counts.items() if k in kinds)
        return got / total if total else 1.0

    def total_wrong(self) -> int:
        """Cases applied wrongly (wrong place or wrong bytes), over every kind."""
        return sum(c["wrong"] for c in self.counts.values())

    def table(self) -> str:
        """A plain-text table: kind, cases, correct, refused, WRONG."""
        rows = [f"{'kind':<16}{'cases':>7}{'correct':>9}{'refused':>9}{'WRONG':>7}"]
        for kind, c in self.counts.items():
            n = sum(c.values())
            rows.append(f"{kind:<16}{n:>7}{c['correct']:>9}{c['refused']:>9}{c['wrong']:>7}")
        rows.append(
            f"recoverable kinds correct: {100 * self.recoverable_rate():.1f}%, "
            f"WRONG: {self.total_wrong()}"
        )
        return "\n".join(rows)


def tally(cases: Iterable[Case], apply: Callable[[Case], bytes]) -> Tally:
    """Run every case through ``apply`` and count outcomes per kind."""
    counts: dict[str, Counter[str]] = {}
    wrong: list[str] = []
    for case in cases:
        result = outcome(case, apply)
        counts.setdefault(case.kind, Counter())[result] += 1
        if result == "wrong":
            wrong.append(case.name)
    return Tally(counts, tuple(wrong))
