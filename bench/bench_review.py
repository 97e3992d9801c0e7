"""Review lifecycle speed in repositories of 1,000 and 100,000 files: `make bench`.

Each repository has a real working tree and index (built by ``bench.bench_workspace``), its
branch checked out, so approving and undoing write the changed file and its index entry. In
the same run and repository it measures, as medians (proposals are built outside the timing):

- approve: a fast-forward approval of a one-file proposal (refs + note in one transaction,
  the file landed on disk with fsync, the index entry updated), through ``Workspace.approve``;
- git merge: the same fast-forward done by ``git merge --ff-only <branch>`` (which also
  updates the working tree and the index), on an equivalent proposal branch;
- reject, undo (a revert commit landed on disk), and ``proposals()`` with every note made so
  far.

Run alone: ``python -m bench.bench_review``; options ``--sizes 1000,100000`` and ``--runs N``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.bench_workspace import _git, _one_line, _path_of, make_repo
from gitpatch.workspace import Workspace


def _timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def bench_size(root: Path, files: int, runs: int) -> dict[str, float]:
    """Every figure for one repository size (milliseconds, medians of ``runs``)."""
    repo, made_in = make_repo(root, files)
    path = _path_of(files // 2)
    ws = Workspace.open(str(repo), mode="review")
    rev = {"n": 0}

    def next_proposal() -> str:
        old, new = f"rev {rev['n']}\n", f"rev {rev['n'] + 1}\n"
        rev["n"] += 1
        return ws.propose(_one_line(path, old, new)).proposal_id

    times: dict[str, list[float]] = {k: [] for k in ("approve", "git", "reject", "undo")}
    for k in range(runs + 2):
        pid = next_proposal()
        approve_ms = _timed(lambda: ws.approve(pid, by="Bench"))  # noqa: B023
        pid = next_proposal()
        # git needs the branch under a name it merges; the proposal branch is one already.
        git_ms = _timed(lambda: _git(repo, "merge", "-q", "--ff-only", f"gitpatch/{pid}"))  # noqa: B023
        _git(repo, "branch", "-q", "-D", f"gitpatch/{pid}")
        doomed = ws.propose(_one_line(path, f"rev {rev['n']}\n", f"doomed {k}\n")).proposal_id
        reject_ms = _timed(lambda: ws.reject(doomed, by="Bench", reason="bench"))  # noqa: B023
        undo_ms = _timed(ws.undo)
        rev["n"] -= 1  # the undo took the last approved change back
        if k >= 2:  # the first rounds warm caches
            for key, ms in zip(times, (approve_ms, git_ms, reject_ms, undo_ms), strict=True):
                times[key].append(ms)
    figures = {key: statistics.median(values) for key, values in times.items()}
    figures["proposals"] = statistics.median(_timed(ws.proposals) for _ in range(5))
    figures["notes"] = float(sum(1 for _ in ws.store.iter_notes()))
    figures["made_s"] = made_in
    _git(repo, "diff", "--quiet", "HEAD")  # what gitpatch landed is what git sees
    return figures


def main(argv: list[str] | None = None) -> int:
    """Build the repositories, run the measurements, print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="gitpatch-bench-review-") as tmp:
        for files in sizes:
            results[files] = bench_size(Path(tmp), files, args.runs)
            print(f"  {files:,} files: repository made in {results[files]['made_s']:.1f} s")
    print(f"\nmedians of {args.runs} runs, milliseconds")
    print(
        f"{'files':>9}  {'approve (ff)':>12}  {'git merge --ff-only':>19}  {'reject':>7}  "
        f"{'undo':>7}  {'proposals()':>11}  {'notes':>5}"
    )
    for files, fig in results.items():
        print(
            f"{files:>9,}  {fig['approve']:>12.2f}  {fig['git']:>19.2f}  {fig['reject']:>7.2f}  "
            f"{fig['undo']:>7.2f}  {fig['proposals']:>11.2f}  {fig['notes']:>5.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
