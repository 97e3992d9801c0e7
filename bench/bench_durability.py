"""What honouring ``core.fsync`` costs: `python -m bench.bench_durability`.

Two repositories of 1,000 files made alike, one with git's default durability (``core.fsync``
unset: loose objects, refs and the index are not fsynced, by git or by gitpatch; working-tree
files always are) and one with ``core.fsync=committed`` (loose objects and refs fsynced: libgit2's
fsync of the git directory turned on, and the land journal and its directory fsynced). Medians,
variants interleaved, in fresh directories on the same disk: an auto-apply of a one-line change
and a review proposal (commit, note, two refs), each with fsync off and on.

Options: ``--runs N``, ``--dir PATH`` (default the system temp dir, i.e. a real disk).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench._common import git, make_repo, one_line, path_of
from gitpatch.porcelain.workspace import Workspace

FILES = 1_000


def _workspaces(root: Path, durable: bool) -> tuple[Workspace, Workspace, str]:
    folder = root / ("on" if durable else "off")
    folder.mkdir()
    repo, _made = make_repo(folder, FILES)
    git(repo, "config", "gc.auto", "0")
    if durable:
        git(repo, "config", "core.fsync", "committed")
    auto = Workspace.open(str(repo))
    review = Workspace.open(str(repo), mode="review")
    assert auto.plumbing.store.durable() is durable
    return auto, review, path_of(FILES // 2)


def measure(root: Path, runs: int) -> dict[str, float]:
    """Median milliseconds of auto-apply and review proposal with fsync off and on."""
    spaces = {d: _workspaces(root, d) for d in (False, True)}
    times: dict[str, list[float]] = {}
    rev = {False: 0, True: 0}
    for k in range(runs + 3):
        for durable in (False, True):  # interleaved: both see the same disk weather
            auto, review, target = spaces[durable]
            n = rev[durable]
            start = time.perf_counter()
            auto.propose(one_line(target, f"rev {n}\n", f"rev {n + 1}\n"))
            mid = time.perf_counter()
            review.propose(one_line(target, f"rev {n + 1}\n", f"review {k}\n"))
            end = time.perf_counter()
            rev[durable] = n + 1
            if k >= 3:
                tag = "on" if durable else "off"
                times.setdefault(f"auto_{tag}", []).append((mid - start) * 1000)
                times.setdefault(f"review_{tag}", []).append((end - mid) * 1000)
    return {key: statistics.median(values) for key, values in times.items()}


def main() -> int:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        figures = measure(Path(folder), args.runs)
    print(f"durability ({FILES:,} files, {args.runs} runs, medians)")
    for what in ("auto", "review"):
        off, on = figures[f"{what}_off"], figures[f"{what}_on"]
        print(
            f"  {what:6} fsync off {off:6.2f} ms   core.fsync=committed {on:6.2f} ms   "
            f"cost {on - off:+.2f} ms ({on / off:.1f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
