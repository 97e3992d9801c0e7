"""`python -m bench.bench_formats [PER_KIND]`: the robustness corpus in every edit language.

One summary line per language: cases applied correctly, refused, and applied WRONGLY (wrong place
or wrong bytes), plus the share of recoverable kinds applied correctly. The per-kind tables for
the matcher, search_replace, apply_patch and edits are printed by ``python -m bench.robustness``,
whose runners this reuses; this adds unified_diff: the same hunk as apply_patch under
``@@ -L,N +L,M @@`` with the block's real line number (a bare ``@@`` for refusal cases, which
have no true position). Exits 1 if any case was applied wrongly.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from difflib import SequenceMatcher

from bench.robustness.corpus import Case, generate
from bench.robustness.runner import FORMATS, PATH, tally
from gitpatch import engine
from gitpatch.formats import unified_diff


def _hunk_body(case: Case) -> list[str]:
    """Old and new text as hunk lines: lines they share are context, the rest -/+."""
    old, new = case.old.split("\n"), case.new.split("\n")
    body: list[str] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, False).get_opcodes():
        if tag == "equal":
            body.extend(" " + x for x in old[i1:i2])
            continue
        body.extend("-" + x for x in old[i1:i2])
        body.extend("+" + x for x in new[j1:j2])
    return body


def unified_diff_text(case: Case) -> str:
    """The case as a one-hunk unified diff, with its line number when it has one."""
    body = _hunk_body(case)
    old_n = sum(1 for x in body if x[:1] != "+")
    new_n = sum(1 for x in body if x[:1] != "-")
    numbers = f" -{case.line},{old_n} +{case.line},{new_n} @@" if case.line else ""
    return f"--- a/{PATH}\n+++ b/{PATH}\n@@{numbers}\n" + "\n".join(body) + "\n"


def run_unified_diff(case: Case) -> bytes:
    """The case through the unified-diff parser and the engine."""
    changes = engine.apply(unified_diff.parse(unified_diff_text(case)), {PATH: case.data}).changes
    content = changes[0].content
    if content is None:
        raise AssertionError("the file was deleted")
    return content


#: Each language the engine speaks, as a runner over corpus cases.
RUNNERS: dict[str, Callable[[Case], bytes]] = {
    **{name: run for name, (run, _) in FORMATS.items() if name != "matcher"},
    "unified_diff": run_unified_diff,
}


def main(argv: list[str]) -> int:
    """Print one summary line per language; 1 if any case was applied wrongly."""
    per_kind = int(argv[0]) if argv else 100
    cases = generate(per_kind)
    print(f"robustness corpus, {len(cases)} cases ({per_kind} per kind), parse + engine.apply")
    head = ("language", "correct", "refused", "WRONG", "recoverable ok", "ms/case")
    print(f"{head[0]:<16}{head[1]:>9}{head[2]:>9}{head[3]:>7}{head[4]:>16}{head[5]:>9}")
    wrong = 0
    for name, run in RUNNERS.items():
        t0 = time.perf_counter()
        result = tally(cases, run)
        ms = 1000 * (time.perf_counter() - t0) / len(cases)
        total = {k: sum(c[k] for c in result.counts.values()) for k in ("correct", "refused")}
        rate = f"{100 * result.recoverable_rate():.1f}%"
        print(
            f"{name:<16}{total['correct']:>9}{total['refused']:>9}{result.total_wrong():>7}"
            f"{rate:>16}{ms:>9.2f}"
        )
        for case_name in result.wrong[:10]:
            print(f"  WRONG: {case_name}")
        wrong += result.total_wrong()
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
