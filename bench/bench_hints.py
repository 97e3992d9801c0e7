"""Whether a refusal shows a model the whole region it must copy: `python -m bench.bench_hints`.

Runs the damaged-edit corpus (``bench.robustness``) through every edit language and reads each
not-found refusal's hint: the closest region it names (lines A-B) and the numbered lines it
shows (``N | text``, the one form every door uses). A hint is *whole* when it shows every line
of that region, or says which ones it leaves out; a hint that shows fewer lines without saying
so is *cut*, the form that made models send a shorter old text and duplicate the lines they
did not see. Also prints how many regions are longer than 8 lines (what patch_resource's hint
used to cut at) and the longest one.

Options: ``PER_KIND`` (default 60).
"""

from __future__ import annotations

import re
import sys

from bench.robustness.corpus import generate
from bench.robustness.runner import FORMATS
from gitpatch.errors import MatchNotFound

_REGION = re.compile(r"(?:similar text at|closest region is) lines (\d+)-(\d+)")
_ROW = re.compile(r"^\s*(\d+) \| ", re.MULTILINE)
_LEFT_OUT = re.compile(r"lines left out here: lines (\d+)-(\d+)")


def judge(hint: str) -> tuple[str, int] | None:
    """(``whole`` or ``cut``, region length) for a hint that names a region, else None."""
    found = _REGION.search(hint)
    if found is None:
        return None
    start, end = int(found[1]), int(found[2])
    shown = {int(n) for n in _ROW.findall(hint)}
    for gap in _LEFT_OUT.finditer(hint):
        shown |= set(range(int(gap[1]), int(gap[2]) + 1))
    whole = set(range(start, end + 1)) <= shown
    return ("whole" if whole else "cut"), end - start + 1


def main(argv: list[str]) -> int:
    """Print, per edit language, not-found refusals with a region: whole, cut, > 8 lines."""
    per_kind = int(argv[0]) if argv else 60
    cases = generate(per_kind)
    print(f"{len(cases)} cases; not-found refusals that name a closest region:")
    print(f"{'language':<16}{'refusals':>9}{'whole':>7}{'cut':>5}{'>8 lines':>10}{'longest':>9}")
    cut_total = 0
    for name, (run, _fmt) in FORMATS.items():
        if name == "matcher":
            continue
        counts = {"whole": 0, "cut": 0}
        long_regions = longest = 0
        for case in cases:
            try:
                run(case)
            except MatchNotFound as exc:
                verdict = judge(exc.hint or "")
                if verdict is None:
                    continue
                counts[verdict[0]] += 1
                long_regions += verdict[1] > 8
                longest = max(longest, verdict[1])
            except Exception:  # other refusals (ambiguity, parse errors) are not this question
                continue
        total = counts["whole"] + counts["cut"]
        cut_total += counts["cut"]
        print(
            f"{name:<16}{total:>9}{counts['whole']:>7}{counts['cut']:>5}{long_regions:>10}"
            f"{longest:>9}"
        )
    return 1 if cut_total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
