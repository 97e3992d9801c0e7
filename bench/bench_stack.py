"""What a review-mode session's stack costs per call: `python -m bench.bench_stack`.

In one repository (default 1,000 files, its branch checked out) and one run it measures, as
medians of interleaved calls (each a one-line edit of its own file, so nothing conflicts):

- plain: a review proposal without a session (built on the branch head, as before stacks);
- stacked at depth N: the same proposal by a session that already has N open proposals (it
  finds its stack from the open proposal refs and notes, and builds on the top; the stack
  grows by one per run, so N is its depth at the first run);
- notices: ``ws.plumbing.notices()`` with nothing new to tell, over every note made so far;
- overlaps: ``Workspace.overlaps()`` with the session's and another session's open work.

It prints each figure with its ratio to plain; a ratio, not an absolute time, is the figure to
compare across machines.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from bench._common import make_repo, median_ms, one_line, path_of, timed_ms
from gitpatch.porcelain.workspace import Workspace


def _edit(ws: Workspace, i: int) -> None:
    ws.propose(one_line(path_of(i), "rev 0\n", f"rev {i + 1}\n"))


def bench(root: Path, files: int, depths: list[int], runs: int) -> dict[str, float]:
    """The figures (milliseconds) for one repository."""
    repo, _made = make_repo(root, files)
    plain = Workspace.open(str(repo), mode="review")
    figures: dict[str, float] = {}
    used = iter(range(files))
    times: dict[str, list[float]] = {"plain": []}
    sessions: dict[int, Workspace] = {}
    for depth in depths:
        ws = Workspace.open(str(repo), mode="review", session=f"s{depth}")
        for _ in range(depth):
            _edit(ws, next(used))
        sessions[depth] = ws
        times[f"stacked {depth}"] = []
    for _ in range(runs):  # interleaved: machine noise hits every figure alike
        times["plain"].append(timed_ms(lambda: _edit(plain, next(used))))
        for depth, ws in sessions.items():
            times[f"stacked {depth}"].append(timed_ms(lambda ws=ws: _edit(ws, next(used))))
    for name, values in times.items():
        figures[name] = statistics.median(values)
    deepest = sessions[max(depths)]
    deepest.plumbing.notices()  # the first call tells what there is; measure the steady state
    figures["notices"] = median_ms(deepest.plumbing.notices, runs)
    figures["overlaps"] = median_ms(deepest.plumbing.overlaps, runs)
    figures["notes"] = float(sum(1 for _ in plain.plumbing.store.iter_notes()))
    return figures


def main(argv: list[str] | None = None) -> int:
    """Build the repository, measure, print figures with their ratios to plain."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--depths", default="0,10,50")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(argv)
    depths = [int(d) for d in args.depths.split(",")]
    with tempfile.TemporaryDirectory(prefix="gitpatch-bench-stack-") as tmp:
        fig = bench(Path(tmp), args.files, depths, args.runs)
    base = fig["plain"]
    print(f"{args.files:,} files, medians of {args.runs} interleaved runs")
    for name, ms in fig.items():
        if name == "notes":
            continue
        print(f"  {name:<12} {ms:8.2f} ms   x{ms / base:5.2f} of plain")
    print(f"  ({fig['notes']:.0f} notes in the repository at the end)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
