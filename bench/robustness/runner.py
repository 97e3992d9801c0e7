"""Running corpus cases and scoring them: correct, refused or WRONG."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from bench.robustness.corpus import RECOVERABLE, Case
from gitpatch.errors import GitpatchError
from gitpatch.match import reindent, seek
from gitpatch.text import Document

__all__ = ["Tally", "outcome", "run_matcher", "tally"]

#: How a case fared: "correct", "refused" or "wrong".
Outcome = str


def run_matcher(case: Case, profile: str = "patch") -> bytes:
    """Apply ``case`` with the matcher alone: seek, re-indent the new text, splice."""
    doc = Document.from_bytes(case.data)
    found = seek(doc.lines, case.old.split("\n"), profile=profile)
    new_lines = reindent(case.new.split("\n"), found)
    return doc.splice(found.start, found.end, new_lines).to_bytes()


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

    def recoverable_rate(self) -> float:
        """Share of recoverable cases applied correctly."""
        got = sum(c["correct"] for k, c in self.counts.items() if k in RECOVERABLE)
        total = sum(sum(c.values()) for k, c in self.counts.items() if k in RECOVERABLE)
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
