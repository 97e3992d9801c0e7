"""The approval queue's own cost, checks excluded, and a cached result: `make bench`.

In a repository of 20,000 files (real working tree and index, its branch checked out) with
``[checks] run = ["true"]``, it measures, as medians:

- approve (no checks): a one-file proposal approved with no ``[checks]`` configured: the
  landing itself, the floor every queue entry pays;
- queue entry: one entry of ``Workspace.approve`` (a list) over five proposals made on the same
  base (the first fast-forwards, the others merge onto the one before), with the checks'
  own process time (``CheckRun.seconds``: ``sh -c true``) taken out; the rest is the queue's
  cost: its lock, the merge, the scratch checkout brought to the tree (``git reset --hard``
  and ``git clean`` over 20,000 files), the cache written, the landing;
- scratch update: that ``reset --hard`` + ``clean`` alone, between two trees one file apart;
- cached check: ``Workspace.check()`` on a tree that already passed (nothing runs);
- first scratch: making the scratch checkout the first time (once per repository).

Run alone: ``python -m bench.bench_queue``; options ``--files N`` and ``--runs N``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench._common import make_repo, one_line, path_of, timed_ms
from gitpatch.porcelain.workspace import Workspace
from gitpatch.review import checks

QUEUE = 5


def _proposals(ws: Workspace, files: int, round_: int) -> list[str]:
    """``QUEUE`` one-line proposals on different files, all on the branch head."""
    out = []
    for n in range(QUEUE):
        path = path_of((files // (QUEUE + 1)) * (n + 1) + round_)
        out.append(ws.propose(one_line(path, "rev 0\n", f"rev {round_ + 1}\n")).proposal_id)
    return out


def bench(root: Path, files: int, runs: int) -> dict[str, float]:
    """Every figure, in milliseconds (medians of ``runs``)."""
    repo, made_in = make_repo(root, files)
    ws = Workspace.open(str(repo), mode="review")
    plain = []
    for r in range(runs):
        change = one_line(path_of(files - 1 - r), "rev 0\n", "rev 1\n")
        pid = ws.propose(change).proposal_id
        plain.append(timed_ms(lambda: ws.approve(pid, by="B")))  # noqa: B023
    (repo / ".gitpatch.toml").write_text('[checks]\nrun = ["true"]\n')
    start = time.perf_counter()
    first = ws.check()
    first_ms = (time.perf_counter() - start) * 1000
    entries: list[float] = []
    scratch: list[float] = []
    for r in range(runs):
        ids = _proposals(ws, files, r)
        start = time.perf_counter()
        done = ws.approve(ids, by="B")
        total = (time.perf_counter() - start) * 1000
        assert all(d.status == "approved" for d in done), [d.message for d in done]
        runs_s = sum(
            float(run["seconds"])
            for d in done
            if d.result is not None
            for run in _runs(ws, d.result.version)
        )
        entries.append((total - runs_s * 1000) / QUEUE)
        head = ws.plumbing.store.ref_target(ws.target)
        assert head is not None
        before = ws.plumbing.store.info(head).parents[0]
        scratch.append(_scratch_ms(ws, before, head))
    cached = [timed_ms(ws.check) for _ in range(runs)]
    assert first.passed
    return {
        "approve_plain": statistics.median(plain),
        "queue_entry": statistics.median(entries),
        "scratch_update": statistics.median(scratch),
        "cached": statistics.median(cached),
        "first_scratch": first_ms,
        "made_s": made_in,
    }


def _runs(ws: Workspace, version: str) -> list[dict[str, object]]:
    """The check runs the approval of ``version`` paid for (from the cached report)."""
    from pygit2 import Oid

    report = checks.run(ws.plumbing.context, Oid(hex=version))  # cached: reads the stored runs
    return [r.model_dump() for r in report.runs] if not report.batch else []


def _scratch_ms(ws: Workspace, one: object, two: object) -> float:
    """Bringing the scratch checkout from ``one``'s tree to ``two``'s, alone."""
    gitdir = checks.checks_dir(ws.plumbing.store) / "scratch-0"
    checks.prepared(gitdir, one)  # type: ignore[arg-type]
    return timed_ms(lambda: checks.prepared(gitdir, two))  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    """Build the repository, run the measurements, print them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gitpatch-bench-queue-") as tmp:
        fig = bench(Path(tmp), args.files, args.runs)
    print(f"  {args.files:,} files: repository made in {fig['made_s']:.1f} s")
    print(f"medians of {args.runs} runs, milliseconds")
    print(
        f"  approve, no checks configured        {fig['approve_plain']:8.1f}  (the landing floor)"
    )
    print(f"  queue entry, check time taken out    {fig['queue_entry']:8.1f}  (target <= 1000)")
    print(f"  of it: scratch checkout update       {fig['scratch_update']:8.1f}")
    print(f"  cached check (Workspace.check)       {fig['cached']:8.1f}  (target <= 50)")
    print(f"  first scratch checkout (once)        {fig['first_scratch']:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
