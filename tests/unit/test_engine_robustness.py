"""A sample of the robustness corpus through every edit language: never a wrong application."""

from __future__ import annotations

import pytest

from bench.bench_formats import RUNNERS
from bench.robustness.corpus import RECOVERABLE, generate
from bench.robustness.runner import tally

CASES = generate(6)


@pytest.mark.parametrize("fmt", list(RUNNERS))
def test_no_wrong_application(fmt: str) -> None:
    result = tally(CASES, RUNNERS[fmt])
    assert result.total_wrong() == 0, result.wrong


def test_search_replace_recovers_what_the_matcher_recovers() -> None:
    result = tally(CASES, RUNNERS["search_replace"])
    assert result.recoverable_rate() >= 0.95, result.table()
    assert all(result.counts[k]["correct"] >= 5 for k in RECOVERABLE), result.table()


def test_unified_diff_applies_the_cases_its_levels_cover() -> None:
    exact = [c for c in CASES if c.kind in ("exact", "crlf", "bom", "trailing_spaces")]
    result = tally(exact, RUNNERS["unified_diff"])
    assert sum(c["correct"] for c in result.counts.values()) == len(exact), result.table()
