"""Where an auto-apply's time goes, by repository size: `python -m bench.bench_worktree`.

For repositories of 1,000 and 100,000 files (working tree and index, as a clone has them), the
medians of many runs of each step of landing a one-line change, measured in one process:

- build: the new tree and commit objects for the change (``Store.build_tree`` + ``commit``);
- modified: ``WorkingTree.modified`` on the touched path (the dirty check), and recover (the
  journal and stale-lock check every Workspace call starts with);
- land: ``WorkingTree.land`` of that commit: journal, ref CAS, temp file + fsync + rename,
  index entry, index write; and the index write alone, the only step that grows with the
  number of files (git's index format is rewritten whole). ``land-index`` is the rest.

Options: ``--sizes 1000,100000`` and ``--runs N``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import pygit2

from bench._common import make_repo, median_ms_of_calls, path_of, timed_ms
from gitpatch.checkout.worktree import WorkingTree
from gitpatch.core.model import FileChange
from gitpatch.store import Store

BRANCH = "refs/heads/bench"


def bench_size(root: Path, files: int, runs: int) -> dict[str, float]:
    """Each step's median, in milliseconds, for one repository size."""
    repo_path, _made = make_repo(root, files)
    store = Store.open(repo_path)
    tree = WorkingTree(store)
    target = path_of(files // 2)
    state = {"head": store.ref_target(BRANCH)}

    def build(k: int) -> pygit2.Oid:
        head = state["head"]
        data = (repo_path / target).read_bytes() + f"line {k}\n".encode()
        new_tree = store.build_tree(head, [FileChange(target, data)])
        return store.commit(new_tree, [head] if head else [], f"bench {k}")

    def land_once(k: int) -> float:
        old, new = state["head"], build(k)
        ms = timed_ms(
            lambda: tree.land(
                str(old),
                str(new),
                [target],
                lambda: store.update_ref(BRANCH, new, old, "bench"),
                ref=BRANCH,
            )
        )
        state["head"] = new
        return ms

    figures = {
        "build": median_ms_of_calls(build, runs),
        "modified": median_ms_of_calls(
            lambda _k: tree.modified(str(state["head"]), [target]), runs
        ),
        "recover": median_ms_of_calls(lambda _k: tree.recover((BRANCH,)), runs),
        "land": statistics.median(land_once(k) for k in range(runs)),
        "index_write": median_ms_of_calls(lambda _k: tree.index.write(), runs),
    }
    return figures


def main(argv: list[str] | None = None) -> int:
    """Build the repositories, time each step, print a table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--runs", type=int, default=25)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="gitpatch-bench-wt-") as tmp:
        for files in sizes:
            results[files] = bench_size(Path(tmp), files, args.runs)
    names = ["build", "modified", "recover", "land", "index_write"]
    print(f"medians of {args.runs} runs, milliseconds")
    print(f"{'files':>9}  " + "  ".join(f"{n:>11}" for n in names) + "  land-index")
    for files, fig in results.items():
        cells = "  ".join(f"{fig[n]:>11.2f}" for n in names)
        print(f"{files:>9,}  {cells}  {fig['land'] - fig['index_write']:>10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
