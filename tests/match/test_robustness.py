"""A sample of the robustness corpus through the matcher and every edit language: never a
wrong application, >= 95% correct where the profile allows every level."""

from __future__ import annotations

import pytest

from bench.robustness.corpus import BOM, KINDS, RECOVERABLE, REFUSALS, Case, generate
from bench.robustness.runner import FORMATS, outcome, run_matcher, tally

PER_KIND = 25


@pytest.fixture(scope="module")
def sample() -> list[Case]:
    return generate(PER_KIND)


#: Kinds only the engine's SEARCH/REPLACE route recovers: elision is part of that format, and
#: where added lines meet a blank line the old text left out is the engine's renderer's call.
ENGINE_ONLY = ("blank_gap", "indented_elision")


def test_matcher_never_applies_wrongly_and_recovers_95_percent(sample: list[Case]) -> None:
    result = tally(sample, run_matcher)
    assert result.total_wrong() == 0, result.wrong
    kinds = [k for k in RECOVERABLE if k not in ENGINE_ONLY]
    assert result.recoverable_rate(kinds) >= 0.95, result.table()
    for kind in (*REFUSALS, *ENGINE_ONLY):
        assert result.counts[kind]["refused"] == PER_KIND


def test_search_replace_recovers_the_engine_only_kinds(sample: list[Case]) -> None:
    result = tally([c for c in sample if c.kind in ENGINE_ONLY], FORMATS["search_replace"][0])
    assert result.total_wrong() == 0, result.wrong
    assert result.counts["blank_gap"]["correct"] == PER_KIND, result.table()
    assert result.recoverable_rate(["indented_elision"]) >= 0.8, result.table()


def test_every_kind_is_drawn_with_its_outcome(sample: list[Case]) -> None:
    assert {c.kind for c in sample} == set(KINDS)
    for case in sample:
        assert (case.expected is None) == (case.kind in REFUSALS)
        if case.expected is not None:
            assert case.expected != case.data
    crlf = next(c for c in sample if c.kind == "crlf")
    assert b"\r\n" in crlf.data and crlf.expected is not None and b"\r\n" in crlf.expected
    bom = next(c for c in sample if c.kind == "bom")
    assert bom.data.startswith(BOM) and bom.expected is not None and bom.expected.startswith(BOM)


def test_generation_is_deterministic_and_prefix_stable() -> None:
    small = generate(2, seed=7, kinds=RECOVERABLE[:1])
    assert generate(3, seed=7, kinds=RECOVERABLE[:1])[:2] == small
    assert generate(2, seed=7, kinds=RECOVERABLE[:1]) == small
    assert generate(2, seed=8, kinds=RECOVERABLE[:1]) != small


def test_a_refusal_applied_counts_as_wrong(sample: list[Case]) -> None:
    case = next(c for c in sample if c.kind == "not_unique")
    assert outcome(case, lambda c: c.data) == "wrong"
    assert outcome(case, run_matcher) == "refused"


FORMAT_SAMPLE = 12


@pytest.fixture(scope="module")
def format_sample() -> list[Case]:
    return generate(FORMAT_SAMPLE)


@pytest.mark.parametrize("fmt", ["search_replace", "apply_patch", "patch_resource", "unified_diff"])
def test_formats_never_apply_wrongly(fmt: str, format_sample: list[Case]) -> None:
    run, profile = FORMATS[fmt]
    result = tally(format_sample, run)
    assert result.total_wrong() == 0, result.wrong
    for kind in ("exact", "crlf", "bom", *REFUSALS):
        expected = "refused" if kind in REFUSALS else "correct"
        assert result.counts[kind][expected] == FORMAT_SAMPLE, (kind, result.table())
    if profile == "search_replace":
        assert result.recoverable_rate() >= 0.95, result.table()


def test_unified_diff_places_what_apply_patch_places(format_sample: list[Case]) -> None:
    """A unified diff is an apply_patch hunk with a line hint: it fares the same."""
    diff = tally(format_sample, FORMATS["unified_diff"][0])
    patch = tally(format_sample, FORMATS["apply_patch"][0])
    assert diff.counts == patch.counts, (diff.table(), patch.table())
