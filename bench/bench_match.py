"""Matcher speed: medians for 10,000- and 100,000-line files, `python -m bench.bench_match`.

The files are Python standard library sources laid end to end (real text, real repetition).
"exact hit" finds a unique 5-line block near the end; "full miss" sends 5 lines that are nowhere,
so every level of the `patch` profile runs, fuzzy included, plus the closest-region hint.
"cold" uses a fresh lines tuple each time (per-level normalisation included); "warm" reuses one
(the engine applying several edits to one file sees this).
Targets: exact hit <= 2 ms at 10k lines; full miss <= 30 ms at 10k and <= 300 ms at 100k.
"""

from __future__ import annotations

import sysconfig
from collections.abc import Callable
from pathlib import Path

from bench._common import median_ms
from gitpatch.errors import MatchNotFound
from gitpatch.match import seek


def corpus_lines(count: int) -> list[str]:
    """``count`` lines of real Python source, deterministic for this machine."""
    out: list[str] = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        out.extend(path.read_text(encoding="utf-8", errors="replace").splitlines())
        if len(out) >= count:
            break
    return out[:count]


def unique_block(lines: list[str], near: int, size: int = 5) -> list[str]:
    """A block of ``size`` lines starting at or before ``near`` that occurs once."""
    text = "\n".join(lines)
    for s in range(near, 0, -1):
        block = lines[s : s + size]
        if all(x.strip() for x in block) and text.count("\n".join(block)) == 1:
            return block
    raise RuntimeError("no unique block")


def bench(size: int, runs: int) -> None:
    """Print the figures for one file size."""
    base = corpus_lines(size)
    hit = unique_block(base, size - 50)
    miss = [f"    zz_missing_{i} = qq_nowhere_{i}(alpha, beta, gamma_{i})" for i in range(5)]
    warm = tuple(base)
    fresh = [tuple(base) for _ in range(runs)]

    def cold(pattern: list[str]) -> Callable[[], object]:
        it = iter(fresh)
        return lambda: _seek(next(it), pattern)

    rows = [
        ("exact hit, cold", median_ms(cold(hit), runs)),
        ("exact hit, warm", median_ms(lambda: _seek(warm, hit), runs)),
    ]
    it_miss = iter([tuple(base) for _ in range(runs)])
    rows.append(("full miss, cold", median_ms(lambda: _seek(next(it_miss), miss), runs)))
    rows.append(("full miss, warm", median_ms(lambda: _seek(warm, miss), runs)))
    for name, ms in rows:
        print(f"{size:>7} lines  {name:<18} {ms:8.2f} ms (median of {runs})")


def _seek(lines: tuple[str, ...], pattern: list[str]) -> object:
    try:
        return seek(lines, pattern)
    except MatchNotFound as exc:
        return exc


def main() -> None:
    """Run the benchmark at both sizes."""
    bench(10_000, 41)
    bench(100_000, 11)


if __name__ == "__main__":
    main()
