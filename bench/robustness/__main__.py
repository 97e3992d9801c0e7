"""`python -m bench.robustness [PER_KIND]`: per damage kind, correct / refused / WRONG."""

from __future__ import annotations

import sys
import time

from bench.robustness.corpus import generate
from bench.robustness.runner import run_matcher, tally


def main(argv: list[str]) -> int:
    """Generate the corpus, run it through the matcher, print the table; 1 if any was WRONG."""
    per_kind = int(argv[0]) if argv else 200
    t0 = time.perf_counter()
    cases = generate(per_kind)
    print(f"{len(cases)} cases ({per_kind} per kind) in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    result = tally(cases, run_matcher)
    print(f"\nmatcher, profile 'patch' ({time.perf_counter() - t0:.1f} s)")
    print(result.table())
    for name in result.wrong[:20]:
        print(f"  WRONG: {name}")
    return 1 if result.total_wrong() else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
