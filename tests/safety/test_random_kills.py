"""40 random SIGKILLs of a process landing auto edits and approving proposals (whole, hunk by
hunk, and two in one queued landing): none needs a person.

The trial machinery is ``bench.killtrials`` (the bench runs 200 of the same trials). The delay
before each kill is drawn from a seeded generator; it only moves the kill around, and every
moment must pass the same checks, so the test does not depend on timing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.killtrials import run_trials

#: random SIGKILLs: `make test-fast` leaves these out (`-m "not slow"`).
pytestmark = pytest.mark.slow

TRIALS = 40
SEED = 20261201


def test_random_kills_never_need_a_person(tmp_path: Path) -> None:
    tally = run_trials(tmp_path, TRIALS, SEED)
    assert tally.trials == TRIALS
    assert tally.needed_person == [], "\n".join(tally.needed_person)
