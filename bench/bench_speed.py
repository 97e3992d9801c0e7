"""The issue-7 speed targets, each measured against its reference in the same run, as ratios.

`python -m bench.bench_speed` (also part of `make bench`). In a 20,000-file repository (and a
500-file one, for the growth check), with a 2,000-line file edited one line at a time:

- review: a review-mode proposal (``Workspace.propose``) against the raw pygit2 floor for the
  same objects: the blob, one ``TreeBuilder`` per directory, the commit, the note's blob, tree
  and commit, and one ref transaction moving the proposal ref and the notes ref. The two run
  alternately, so load on the machine hits both alike. Target: ratio <= 1.3.
- auto-apply: ``Workspace.propose`` in auto mode (commit, fast-forward, working-tree write,
  index update) against git's own commands for the same change: write the file,
  ``git update-index``, ``git commit``. Alternating too. Target: ratio <= 0.15.
- growth: both gitpatch figures at 20,000 files over those at 500 files. Target: <= 1.5.
- large file: a one-line auto-apply edit of a ~50 MB text file, in a child process: wall
  time, the peak of Python allocations (tracemalloc, a separate run) and the growth of the
  process's peak resident set (ru_maxrss) over its size before the edit. Targets: <= 1 s and
  peak <= 3x the file.

Options: ``--runs N`` (default 40), ``--mb M`` (default 50), ``--dir PATH`` (where the
repositories go; default the system temp dir).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from bench._common import git, make_repo, one_line, path_of
from gitpatch.porcelain.workspace import Workspace

LINES = 2000
LARGE, SMALL = 20_000, 500
TARGETS = {"review": 1.3, "auto": 0.15, "growth": 1.5}


def _prepare(root: Path, files: int) -> tuple[Path, str]:
    """A repository of ``files`` files whose middle file has ``LINES`` lines, committed."""
    repo, _ = make_repo(root, files)
    target = path_of(files // 2)
    body = "".join(f"line {n} of the file\n" for n in range(1, LINES))
    (repo / target).write_text("rev 0\n" + body)
    git(repo, "commit", "-q", "-a", "-m", "a long file")
    return repo, target


class Floor:
    """The raw pygit2 floor of a review proposal, in the same repository."""

    def __init__(self, repo: Path, branch: str, target: str) -> None:
        self.repo = pygit2.Repository(str(repo))
        self.branch = branch
        self.parts = target.split("/")
        self.sig = pygit2.Signature("Bench", "bench@example.com")

    def propose(self, k: int) -> None:
        """One proposal: blob, trees, commit, note blob/tree/commit, one transaction."""
        repo, parts = self.repo, self.parts
        tip = repo.references[self.branch].target
        trees = [repo[tip].peel(pygit2.Tree)]
        for name in parts[:-1]:
            trees.append(repo[trees[-1][name].id])
        old = repo[trees[-1][parts[-1]].id].data
        oid = repo.create_blob(old.replace(b"line 1000 ", f"floor {k} ".encode(), 1))
        for depth in range(len(parts) - 1, -1, -1):
            builder = repo.TreeBuilder(trees[depth])
            mode = FileMode.BLOB if depth == len(parts) - 1 else FileMode.TREE
            builder.insert(parts[depth], oid, mode)
            oid = builder.write()
        commit = repo.create_commit(None, self.sig, self.sig, f"floor {k}\n", oid, [tip])
        notes = repo.references.get("refs/notes/floor")
        note = repo.create_blob(json.dumps({"id": k, "status": "proposed"}).encode())
        builder = repo.TreeBuilder(repo[notes.target].peel(pygit2.Tree)) if notes else None
        builder = builder or repo.TreeBuilder()
        builder.insert(str(commit), note, FileMode.BLOB)
        parents = [notes.target] if notes else []
        notes_commit = repo.create_commit(None, self.sig, self.sig, "n\n", builder.write(), parents)
        with repo.transaction() as txn:
            moves = ((f"refs/heads/floor/{k}", commit), ("refs/notes/floor", notes_commit))
            for name, new in moves:
                txn.lock_ref(name)
                txn.set_target(name, new, message="floor")


Figures = dict[str, float]


def _cpu() -> float:
    """CPU seconds of this process and its finished children (git's commands run there)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def alternate(
    first: Callable[[int], object], second: Callable[[int], object], runs: int, warmup: int = 3
) -> tuple[Figures, Figures]:
    """Wall and CPU medians (ms) of ``first(k)`` and ``second(k)`` called alternately.

    CPU time counts git's child processes too; on a machine shared with other work it moves
    less than wall time, so both are printed.
    """
    times: list[list[tuple[float, float]]] = [[], []]
    for k in range(warmup + runs):
        for side, fn in enumerate((first, second)):
            wall, cpu = time.perf_counter(), _cpu()
            fn(k)
            if k >= warmup:
                times[side].append(((time.perf_counter() - wall) * 1e3, (_cpu() - cpu) * 1e3))
    a, b = (
        {
            "wall": statistics.median(t[0] for t in side),
            "cpu": statistics.median(t[1] for t in side),
        }
        for side in times
    )
    return a, b


def review_vs_floor(repo: Path, target: str, runs: int) -> tuple[Figures, Figures]:
    """(gitpatch, floor) medians of a review proposal."""
    ws = Workspace.open(str(repo), mode="review")
    floor = Floor(repo, "refs/heads/bench", target)

    def ours(k: int) -> None:
        ws.propose(one_line(target, "line 1000 of", f"review {k} of"))

    return alternate(ours, floor.propose, runs)


def auto_vs_git(repo: Path, target: str, runs: int) -> tuple[Figures, Figures]:
    """(gitpatch, git) medians of landing a one-line change on the checked-out branch."""
    ws = Workspace.open(str(repo), mode="auto")
    full = repo / target
    state = {"n": 0}

    def ours(_k: int) -> None:
        n = state["n"]
        ws.propose(one_line(target, f"rev {n}\n", f"rev {n + 1}\n"))
        state["n"] = n + 1

    def theirs(_k: int) -> None:
        n = state["n"]
        full.write_text(full.read_text().replace(f"rev {n}\n", f"rev {n + 1}\n", 1))
        git(repo, "update-index", "--", target)
        git(repo, "commit", "-q", "--no-verify", "-m", f"edit {n + 1}")
        state["n"] = n + 1

    result = alternate(ours, theirs, runs)
    git(repo, "diff", "--quiet", "HEAD")  # both left the tree as committed
    return result


def large_file(root: Path, mb: int) -> dict[str, float]:
    """Run ``--child`` in a fresh process twice (timing + rss, then tracemalloc)."""
    out: dict[str, float] = {}
    for mode in ("rss", "tracemalloc"):
        done = subprocess.run(
            [sys.executable, "-m", "bench.bench_speed", "--child", mode, "--mb", str(mb)],
            cwd=Path(__file__).resolve().parent.parent,
            env={**os.environ, "TMPDIR": str(root)},
            check=True,
            capture_output=True,
            text=True,
        )
        out.update(json.loads(done.stdout.strip().splitlines()[-1]))
    return out


def child(mode: str, mb: int) -> None:
    """The large-file measurement itself (one process, one repository); prints JSON."""
    import tracemalloc

    root = Path(tempfile.mkdtemp(prefix="gitpatch-bench-large-"))
    repo = root / "large"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "bench")
    line = "x = compute(value, other_value) + 12345  # a line of about sixty bytes\n"
    count = mb * 1024 * 1024 // len(line)
    big = repo / "big.py"
    big.write_text(f"line 0 {line}" + line * count)
    # an existing file, not one written this very second (whose stat data git and gitpatch
    # cannot trust yet, so they hash it again every time they look)
    past = time.time() - 60
    os.utime(big, (past, past))
    git(repo, "add", "big.py")
    git(repo, "commit", "-q", "-m", "big")
    size = big.stat().st_size
    ws = Workspace.open(str(repo), mode="auto")
    proposal = one_line("big.py", "line 0 x", "line 0 y")
    figures: dict[str, float] = {"file_mb": size / 2**20}
    if mode == "tracemalloc":
        tracemalloc.start()
        ws.propose(proposal)
        figures["tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    else:
        before = _rss_kb()
        start, cpu = time.perf_counter(), time.process_time()
        ws.propose(proposal)
        figures["edit_s"] = time.perf_counter() - start
        figures["edit_cpu_s"] = time.process_time() - cpu
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        figures["rss_growth_mb"] = max(0, peak - before) / 1024
    git(repo, "diff", "--quiet", "HEAD")
    print(json.dumps(figures))


def _rss_kb() -> int:
    """The current resident set size in KB (Linux), to compare with the peak afterwards."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for row in fh:
            if row.startswith("VmRSS:"):
                return int(row.split()[1])
    return 0


def main(argv: list[str] | None = None) -> int:
    """Measure everything, print the ratios and whether each target is met."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--child", choices=["rss", "tracemalloc"], default=None)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.mb)
        return 0
    rows: dict[int, dict[str, Figures]] = {}
    with tempfile.TemporaryDirectory(prefix="gitpatch-bench-speed-", dir=args.dir) as tmp:
        for files in (LARGE, SMALL):
            where = Path(tmp) / str(files)
            where.mkdir()
            repo, target = _prepare(where, files)
            review, floor = review_vs_floor(repo, target, args.runs)
            auto, git_ms = auto_vs_git(repo, target, args.runs)
            rows[files] = {"review": review, "floor": floor, "auto": auto, "git": git_ms}
        large = large_file(Path(tmp), args.mb) if args.mb else {}
    return report(rows, large, args.runs)


def _verdict(value: float, limit: float) -> str:
    return "met" if value <= limit else "MISSED"


def report(rows: dict[int, dict[str, Figures]], large: Figures, runs: int) -> int:
    """Print the table and the verdicts."""
    print(f"medians of {runs} alternating runs, ms (cpu ms); {LINES}-line file, one-line edit")
    names = ("review", "floor", "auto", "git")
    print(f"{'files':>7}  " + "  ".join(f"{n:>15}" for n in names))
    for files, r in rows.items():
        cells = "  ".join(f"{r[n]['wall']:>7.2f} ({r[n]['cpu']:>5.2f})" for n in names)
        print(f"{files:>7,}  {cells}")
    big, small = rows[LARGE], rows[SMALL]
    checks = [
        ("review / raw pygit2 floor", big["review"], big["floor"], TARGETS["review"]),
        ("auto-apply / git update-index + commit", big["auto"], big["git"], TARGETS["auto"]),
        (f"review {LARGE:,} / {SMALL} files", big["review"], small["review"], TARGETS["growth"]),
        (f"auto-apply {LARGE:,} / {SMALL} files", big["auto"], small["auto"], TARGETS["growth"]),
    ]
    print(f"  {'ratio':<40} {'wall':>6}  {'cpu':>6}")
    for name, num, den, limit in checks:
        wall, cpu = num["wall"] / den["wall"], num["cpu"] / den["cpu"]
        verdict = _verdict(wall, limit)
        print(f"  {name:<40} {wall:>6.3f}  {cpu:>6.3f}  (target <= {limit})  {verdict}")
    if large:
        mb = large["file_mb"]
        peak = max(large["rss_growth_mb"], large["tracemalloc_peak_mb"])
        print(
            f"  large file, {mb:.1f} MB: one-line edit {large['edit_s']:.2f} s "
            f"(cpu {large['edit_cpu_s']:.2f} s; target <= 1)  {_verdict(large['edit_s'], 1.0)}"
        )
        print(
            f"  large file: peak RSS growth {large['rss_growth_mb']:.0f} MB, tracemalloc peak "
            f"{large['tracemalloc_peak_mb']:.0f} MB = {peak / mb:.2f}x the file (target <= 3)  "
            f"{_verdict(peak / mb, 3.0)}"
        )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"  load average after the run: {load} on {os.cpu_count()} cpus")
    return 0


if __name__ == "__main__":
    sys.exit(main())
