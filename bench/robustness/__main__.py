"""`python -m bench.robustness [PER_KIND]`: the damaged-edit corpus through the matcher and
every edit language: per damage kind correct / refused / WRONG, then one summary line each.

unified_diff runs the same hunk as apply_patch under ``@@ -L,N +L,M @@`` with the block's real
line number. Exits 1 if any case was applied wrongly (wrong place or wrong bytes).
"""

from __future__ import annotations

import sys
import time

from bench.robustness.corpus import generate
from bench.robustness.runner import FORMATS, Tally, tally


def _summary(name: str, result: Tally, ms: float) -> str:
    correct = sum(c["correct"] for c in result.counts.values())
    refused = sum(c["refused"] for c in result.counts.values())
    rate = f"{100 * result.recoverable_rate():.1f}%"
    return f"{name:<16}{correct:>9}{refused:>9}{result.total_wrong():>7}{rate:>16}{ms:>9.2f}"


def main(argv: list[str]) -> int:
    """Generate the corpus, run it through the matcher and each format; 1 if any was WRONG."""
    per_kind = int(argv[0]) if argv else 200
    t0 = time.perf_counter()
    cases = generate(per_kind)
    print(f"{len(cases)} cases ({per_kind} per kind) in {time.perf_counter() - t0:.1f} s")
    wrong = 0
    lines = []
    for name, (run, profile) in FORMATS.items():
        t0 = time.perf_counter()
        result = tally(cases, run)
        seconds = time.perf_counter() - t0
        print(f"\n{name} (profile {profile!r}, {seconds:.1f} s)")
        print(result.table())
        for case_name in result.wrong[:20]:
            print(f"  WRONG: {case_name}")
        wrong += result.total_wrong()
        lines.append(_summary(name, result, 1000 * seconds / len(cases)))
    head = ("route", "correct", "refused", "WRONG", "recoverable ok", "ms/case")
    print(f"\n{head[0]:<16}{head[1]:>9}{head[2]:>9}{head[3]:>7}{head[4]:>16}{head[5]:>9}")
    print("\n".join(lines))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
