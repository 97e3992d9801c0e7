"""Review at the grain of hunks, timed in a repository of 10,000 files: `make bench`.

One proposal changes three places of a 3,000-line file (three hunks). In the same run and
repository, medians of ``--runs`` rounds of CPU time (this process; a shared machine's wall
clock says more about its neighbours), each round proposing afresh outside the timing:

- show: ``Workspace.show`` with its numbered hunks, and the diff alone (``Store.diff``), so the
  ratio is what numbering hunks adds to showing a proposal;
- approve 1 hunk: the chosen hunk landed as one commit on the checked-out branch (disk and
  index follow), the rest re-based as the proposal's new version, vs approving the whole;
- reject 1 hunk, amend (a person's one-line edit), each a new version of the proposal.

Run alone: ``python -m bench.bench_hunks``; options ``--files N`` and ``--runs N``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._common import git, make_repo, timed_ms
from gitpatch.core.model import Proposal, Replace, UpdateFile
from gitpatch.porcelain.workspace import Workspace

BIG = "src/big.py"
LINES = 3000


def three(k: int) -> Proposal:
    """Three hunks; each ``k`` changes lines no other ``k`` touches."""
    places = (10 + k, 1500 + k, 2990 - k)
    edits = tuple(Replace(f"value_{n} = {n}\n", f"value_{n} = {n}  # k {k}\n") for n in places)
    return Proposal((UpdateFile(BIG, edits),), "patch_resource", tool="bench")


def bench(root: Path, files: int, runs: int) -> dict[str, float]:
    """Every figure, in milliseconds (medians of ``runs``)."""
    repo, _made = make_repo(root, files)
    (repo / BIG).write_text("".join(f"value_{n} = {n}\n" for n in range(LINES)))
    git(repo, "add", BIG)
    git(repo, "commit", "-q", "-m", "big")
    agent = Workspace.open(str(repo), mode="review", session="bench")
    person = Workspace.open(str(repo), mode="review")
    times: dict[str, list[float]] = {}

    def note(key: str, ms: float) -> None:
        times.setdefault(key, []).append(ms)

    def cpu_ms(fn: Callable[[], object]) -> float:
        return timed_ms(fn, time.process_time)

    for rev in range(runs + 1):
        pid = agent.propose(three(2 * rev)).proposal_id
        if rev:  # the first round warms caches
            tip = person.plumbing.store.ref_target(f"refs/heads/gitpatch/{pid}")
            base = person.plumbing.store.info(tip).parents[0] if tip else None
            assert tip is not None
            note("diff", cpu_ms(lambda: person.plumbing.store.diff(base, tip)))  # noqa: B023
            note("show", cpu_ms(lambda: person.show(pid)))  # noqa: B023
            note("approve_hunk", cpu_ms(lambda: person.approve(pid, "B", hunks="1")))  # noqa: B023
            note("reject_hunk", cpu_ms(lambda: person.reject(pid, "B", "no", hunks="2")))  # noqa: B023
            text = person.plumbing.proposal_files(pid)[BIG].replace(b"# k", b"# person's k")
            note("amend", cpu_ms(lambda: person.amend(pid, "B", files={BIG: text})))  # noqa: B023
            person.reject(pid, "B", "done")
            whole = agent.propose(three(2 * rev + 1)).proposal_id
            note("approve_whole", cpu_ms(lambda: person.approve(whole, "B")))  # noqa: B023
        else:
            person.reject(pid, "B", "warm-up")
    return {key: statistics.median(values) for key, values in times.items()}


def main() -> int:
    """Print the figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        f = bench(Path(tmp), args.files, args.runs)
    print(f"hunks, {args.files} files, a {LINES}-line file with 3 hunks (CPU ms, medians)")
    print(f"  diff alone      {f['diff']:8.2f}")
    print(f"  show + hunks    {f['show']:8.2f}  (x{f['show'] / f['diff']:.1f} of the diff)")
    print(f"  approve 1 hunk  {f['approve_hunk']:8.2f}")
    print(f"  approve whole   {f['approve_whole']:8.2f}")
    print(f"  reject 1 hunk   {f['reject_hunk']:8.2f}")
    print(f"  amend           {f['amend']:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
