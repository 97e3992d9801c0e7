"""Workspace speed in repositories of 1,000 and 100,000 files: `python -m bench.bench_workspace`.

Each repository has a real working tree and index (files written, ``git add`` in bulk, one
commit, packed as a cloned repository would be). In the same run and the same repository it
measures, as medians of many runs:

- auto: a full auto-apply of a one-line change (commit, fast-forward, working-tree write with
  fsync, index update), through ``Workspace.propose``;
- git: the same one-line change done with git's own commands: write the file,
  ``git update-index <path>``, ``git commit`` (automatic gc and maintenance switched off);
- review: building a review-mode proposal (commit on ``refs/heads/gitpatch/<id>`` and its note;
  no working tree, no index);
- history: the same review build in the smallest repository once ``--history`` earlier
  proposals exist (their notes and refs are what grows with use, whatever the repository size).

Options: ``--sizes 1000,100000``, ``--runs N``, ``--dir PATH`` (where the repositories are made;
default the system temp dir, i.e. a real disk; ``/dev/shm`` measures without disk latency).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench._common import git, make_repo, median_ms_of_calls, one_line, path_of
from gitpatch.porcelain.workspace import Workspace


def bench_size(root: Path, files: int, runs: int) -> dict[str, float]:
    """All three figures for one repository size."""
    repo, made_in = make_repo(root, files)
    target = path_of(files // 2)
    full = repo / target
    auto_ws = Workspace.open(str(repo), mode="auto")
    rev = {"n": 0}

    def auto(_k: int) -> None:
        auto_ws.propose(one_line(target, f"rev {rev['n']}\n", f"rev {rev['n'] + 1}\n"))
        rev["n"] += 1

    def git_cmds(_k: int) -> None:
        text = full.read_text()
        full.write_text(text.replace(f"rev {rev['n']}\n", f"rev {rev['n'] + 1}\n", 1))
        git(repo, "update-index", "--", target)
        git(repo, "commit", "-q", "--no-verify", "-m", f"rev {rev['n'] + 1}")
        rev["n"] += 1

    figures = {"made_s": made_in}
    figures["auto_ms"] = median_ms_of_calls(auto, runs)
    figures["git_ms"] = median_ms_of_calls(git_cmds, runs)
    # The two must agree on what they did: git's commits continue gitpatch's.
    git(repo, "diff", "--quiet", "HEAD")
    review_ws = Workspace.open(str(repo), mode="review")
    current = f"rev {rev['n']}\n"
    figures["review_ms"] = median_ms_of_calls(
        lambda k: review_ws.propose(one_line(target, current, f"review {k}\n")), runs * 2
    )
    return figures


def bench_history(root: Path, files: int, earlier: int, runs: int) -> tuple[float, float]:
    """Review build medians before and after ``earlier`` proposals, in a fresh repository."""
    (root / "history").mkdir()
    repo, _ = make_repo(root / "history", files)
    target = path_of(files // 2)
    ws = Workspace.open(str(repo), mode="review")

    def build(k: int) -> None:
        ws.propose(one_line(target, "rev 0\n", f"history {k}\n"))

    fresh = median_ms_of_calls(build, runs)
    for k in range(earlier):
        build(runs + 3 + k)
    return fresh, median_ms_of_calls(lambda k: build(earlier + 2 * runs + 6 + k), runs)


def main(argv: list[str] | None = None) -> int:
    """Build the repositories, run the three measurements, print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--dir", default=None, help="parent directory for the repositories")
    parser.add_argument("--history", type=int, default=1000, help="earlier proposals (0: skip)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="gitpatch-bench-", dir=args.dir) as tmp:
        print(f"repositories in {tmp}", flush=True)
        for files in sizes:
            results[files] = bench_size(Path(tmp), files, args.runs)
            print(
                f"  {files:,} files: repository made in {results[files]['made_s']:.1f} s",
                flush=True,
            )
        history = (
            bench_history(Path(tmp), min(sizes), args.history, args.runs) if args.history else None
        )
    print(f"\nmedians of {args.runs} runs (review: {args.runs * 2}), milliseconds")
    print(
        f"{'files':>9}  {'auto-apply':>10}  {'git update-index+commit':>23}  "
        f"{'ratio':>5}  {'review build':>12}"
    )
    for files, fig in results.items():
        ratio = fig["auto_ms"] / fig["git_ms"]
        print(
            f"{files:>9,}  {fig['auto_ms']:>10.2f}  {fig['git_ms']:>23.2f}  {ratio:>5.2f}  "
            f"{fig['review_ms']:>12.2f}"
        )
    if len(sizes) >= 2:
        small, large = results[min(sizes)], results[max(sizes)]
        print(
            f"review build ratio {max(sizes):,}/{min(sizes):,} files: "
            f"{large['review_ms'] / small['review_ms']:.2f}"
        )
        print(
            f"auto-apply ratio {max(sizes):,}/{min(sizes):,} files: "
            f"{large['auto_ms'] / small['auto_ms']:.2f}"
        )
    if history:
        print(
            f"review build, {min(sizes):,} files: {history[0]:.2f} ms fresh, "
            f"{history[1]:.2f} ms after {args.history:,} earlier proposals"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
