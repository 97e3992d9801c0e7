"""`python -m bench.robustness [PER_KIND]`: per damage kind, correct / refused / WRONG."""

from __future__ import annotations

import sys
import time

from bench.robustness.corpus import generate
from bench.robustness.runner import FORMATS, tally


def main(argv: list[str]) -> int:
    """Generate the corpus, run it through the matcher and each format; 1 if any was WRONG."""
    per_kind = int(argv[0]) if argv else 200
    t0 = time.perf_counter()
    cases = generate(per_kind)
    print(f"{len(cases)} cases ({per_kind} per kind) in {time.perf_counter() - t0:.1f} s")
    wrong = 0
    for name, (run, profile) in FORMATS.items():
        t0 = time.perf_counter()
        result = tally(cases, run)
        print(f"\n{name} (profile {profile!r}, {time.perf_counter() - t0:.1f} s)")
        print(result.table())
        for case_name in result.wrong[:20]:
            print(f"  WRONG: {case_name}")
        wrong += result.total_wrong()
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
