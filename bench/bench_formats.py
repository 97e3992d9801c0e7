"""`python -m bench.bench_formats [PER_KIND]`: the robustness corpus through every edit language.

Each corpus case (see ``bench/robustness``) is written the way a model would write it in each
language, parsed by that language's parser and applied by the engine to a one-file snapshot:

- search_replace: one SEARCH/REPLACE block (profile ``patch``);
- apply_patch: one hunk whose lines shared by old and new text are context (profile
  ``apply_patch``);
- unified_diff: the same hunk under ``@@ -L,N +L,M @@`` with the block's real line number;
- edits: one ``old_string``/``new_string`` edit (patch_resource: exact, line endings aside).

Prints, per language, how many cases per damage kind were applied correctly, refused, or applied
WRONGLY (wrong place or wrong bytes); exits 1 if any was wrong. Refusals are expected for the
damage a language does not tolerate (apply_patch has no fuzzy level, patch_resource is exact).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from difflib import SequenceMatcher

from bench.robustness.corpus import Case, generate
from bench.robustness.runner import Tally, tally
from gitpatch.engine import apply
from gitpatch.formats import apply_patch, edits, search_replace, unified_diff
from gitpatch.model import Proposal

PATH = "module.py"


def _hunk_lines(case: Case) -> list[str]:
    """Old and new text as hunk lines: lines they share are context, the rest -/+."""
    old, new = case.old.split("\n"), case.new.split("\n")
    out: list[str] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, False).get_opcodes():
        if tag == "equal":
            out.extend(" " + x for x in old[i1:i2])
            continue
        out.extend("-" + x for x in old[i1:i2])
        out.extend("+" + x for x in new[j1:j2])
    return out


def as_search_replace(case: Case) -> Proposal:
    """One SEARCH/REPLACE block for the case."""
    text = f"<<<<<<< SEARCH\n{case.old}\n=======\n{case.new}\n>>>>>>> REPLACE\n"
    return search_replace.parse(text, path=PATH)


def as_apply_patch(case: Case) -> Proposal:
    """One apply_patch hunk for the case."""
    body = "\n".join(_hunk_lines(case))
    return apply_patch.parse(f"*** Begin Patch\n*** Update File: {PATH}\n@@\n{body}\n*** End Patch")


def as_unified_diff(case: Case) -> Proposal:
    """One unified-diff hunk for the case, with the block's line number as the hint."""
    lines = _hunk_lines(case)
    old_n = sum(1 for x in lines if x[0] != "+")
    new_n = sum(1 for x in lines if x[0] != "-")
    # Refusal cases have no true position; a made-up number would (rightly) pick a candidate.
    numbers = f" -{case.line},{old_n} +{case.line},{new_n} @@" if case.line else ""
    head = f"--- a/{PATH}\n+++ b/{PATH}\n@@{numbers}\n"
    return unified_diff.parse(head + "\n".join(lines) + "\n")


def as_edits(case: Case) -> Proposal:
    """One patch_resource anchored replace for the case."""
    return edits.parse(PATH, [{"old_string": case.old, "new_string": case.new}])


FORMATS: dict[str, Callable[[Case], Proposal]] = {
    "search_replace": as_search_replace,
    "apply_patch": as_apply_patch,
    "unified_diff": as_unified_diff,
    "edits": as_edits,
}


def runner(make: Callable[[Case], Proposal]) -> Callable[[Case], bytes]:
    """Parse and apply a case in one language; return the new bytes of the file."""

    def run(case: Case) -> bytes:
        changes = apply(make(case), {PATH: case.data}).changes
        content = changes[0].content
        assert len(changes) == 1 and content is not None
        return content

    return run


def run_all(cases: list[Case]) -> dict[str, Tally]:
    """Tally the cases in every language."""
    return {name: tally(cases, runner(make)) for name, make in FORMATS.items()}


def main(argv: list[str]) -> int:
    """Print one table per language; 1 if any case was applied wrongly."""
    per_kind = int(argv[0]) if argv else 100
    cases = generate(per_kind)
    wrong = 0
    for name, make in FORMATS.items():
        t0 = time.perf_counter()
        result = tally(cases, runner(make))
        ms = 1000 * (time.perf_counter() - t0) / len(cases)
        print(f"\n{name}: {len(cases)} cases, {ms:.2f} ms per case (parse + apply)")
        print(result.table())
        for case_name in result.wrong[:10]:
            print(f"  WRONG: {case_name}")
        wrong += result.total_wrong()
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
