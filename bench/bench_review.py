"""Review lifecycle speed in repositories of 1,000 and 100,000 files: `make bench`.

Each repository has a real working tree and index (built by ``bench.bench_workspace``), its
branch checked out, so approving and undoing write the changed file and its index entry. In
the same run and repository it measures, as medians (proposals are built outside the timing):

- approve ff: a fast-forward approval of a one-file proposal (refs + note in one transaction,
  the file landed on disk with fsync, the index entry updated), through ``Workspace.approve``;
- git ff: the same fast-forward done by ``git merge --ff-only <branch>`` (which also updates
  the working tree and the index), on an equivalent proposal branch;
- approve 3-way / git merge: the same after a person committed another file with git, so a
  merge commit is made (``Workspace.approve`` vs ``git merge --no-edit <branch>``);
- reject, undo (a revert commit landed on disk), and ``proposals()`` with every note made so
  far.

Run alone: ``python -m bench.bench_review``; options ``--sizes 1000,100000`` and ``--runs N``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from bench._common import git, make_repo, median_ms, one_line, path_of, timed_ms
from gitpatch.porcelain.workspace import Workspace

FIGURES = ("approve", "git_ff", "approve_3way", "git_3way", "reject", "undo")


def bench_size(root: Path, files: int, runs: int) -> dict[str, float]:
    """Every figure for one repository size (milliseconds, medians of ``runs``)."""
    repo, made_in = make_repo(root, files)
    path, other = path_of(files // 2), path_of(files // 3)
    ws = Workspace.open(str(repo), mode="review")
    state = {"rev": 0, "other": 0}

    def propose() -> str:
        old, new = f"rev {state['rev']}\n", f"rev {state['rev'] + 1}\n"
        state["rev"] += 1
        return ws.propose(one_line(path, old, new)).proposal_id

    def person_commits() -> None:
        # A person commits another file with git, so the next approval is a 3-way merge.
        full = repo / other
        full.write_text(full.read_text() + f"person {state['other']}\n")
        state["other"] += 1
        git(repo, "update-index", "--", other)
        git(repo, "commit", "-q", "--no-verify", "-m", "person")

    def git_merge(pid: str, *flags: str) -> float:
        ms = timed_ms(lambda: git(repo, "merge", "-q", *flags, f"gitpatch/{pid}"))
        git(repo, "branch", "-q", "-D", f"gitpatch/{pid}")
        return ms

    times: dict[str, list[float]] = {k: [] for k in FIGURES}
    for k in range(runs + 2):
        round_ms: dict[str, float] = {}
        pid = propose()
        round_ms["approve"] = timed_ms(lambda: ws.approve(pid, by="Bench"))  # noqa: B023
        round_ms["git_ff"] = git_merge(propose(), "--ff-only")
        pid = propose()
        person_commits()
        round_ms["approve_3way"] = timed_ms(lambda: ws.approve(pid, by="Bench"))  # noqa: B023
        pid = propose()
        person_commits()
        round_ms["git_3way"] = git_merge(pid, "--no-edit")
        doomed = ws.propose(one_line(path, f"rev {state['rev']}\n", f"doomed {k}\n"))
        round_ms["reject"] = timed_ms(lambda: ws.reject(doomed.proposal_id, by="B", reason="b"))  # noqa: B023
        round_ms["undo"] = timed_ms(ws.undo)  # reverts git's merge of the last proposal
        state["rev"] -= 1
        if k >= 2:  # the first rounds warm caches
            for key, ms in round_ms.items():
                times[key].append(ms)
    figures = {key: statistics.median(values) for key, values in times.items()}
    figures["proposals"] = median_ms(ws.proposals, 5)
    figures["notes"] = float(sum(1 for _ in ws.plumbing.store.iter_notes()))
    figures["made_s"] = made_in
    git(repo, "diff", "--quiet", "HEAD")  # what gitpatch landed is what git sees
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
    heads = ("approve ff", "git ff", "approve 3-way", "git merge", "reject", "undo")
    print(f"{'files':>9}  " + "  ".join(f"{h:>13}" for h in heads) + "  proposals()  notes")
    for files, fig in results.items():
        cells = "  ".join(f"{fig[key]:>13.2f}" for key in FIGURES)
        print(f"{files:>9,}  {cells}  {fig['proposals']:>11.2f}  {fig['notes']:>5.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
