"""Random-kill trials: how many of 200 SIGKILLed runs needed a person to repair the repository.

Each trial forks a process that lands auto edits (one file, then several with an add, a delete
and a move) and approves review proposals (fast-forward or merge, hunk by hunk, two in one
queued landing) in a loop on a checked-out branch, kills it with SIGKILL after a random delay,
and opens the repository again as the next call would (``bench.killtrials``). The figure that
matters is the last line: it must be 0.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from bench.killtrials import run_trials

TRIALS = 200
SEED = 13


def main() -> int:
    """Run the trials and print how many needed a person (exit 1 unless none did)."""
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        tally = run_trials(Path(folder), TRIALS, SEED)
        took = time.perf_counter() - start
    for problem in tally.needed_person:
        print(f"  {problem[:400]}")
    print(f"random kills: {tally.trials} trials in {took:.0f} s")
    print(f"needed a person: {len(tally.needed_person)}")
    return 1 if tally.needed_person else 0


if __name__ == "__main__":
    sys.exit(main())
