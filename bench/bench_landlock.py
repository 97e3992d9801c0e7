"""What holding ``index.lock`` across a land costs: this checkout against a base, in one run.

Since issue 26 an auto-mode land takes git's ``index.lock`` before its branch moves and keeps it
until the index is written (``checkout.index``), stages its temp files in the git dir and
checks each file once more right before its rename. This runs the same auto-mode lands on the
code of this checkout and on the code of ``--base`` (default ``main``, unpacked with ``git
archive``), each in processes of its own, alternating A and B over ``--rounds`` rounds so the
machine's load falls on both alike, and prints the median milliseconds per land and the ratio:

- edit: a one-line ``Workspace.propose`` on a 1,000-file repository (the common land);
- add: a new file (its index entry goes through ``git update-index`` on the held index now,
  through libgit2's whole-index write before).

Options: ``--base REF``, ``--rounds N``, ``--lands N`` (per round and kind).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}
KINDS = ("edit", "add")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env={**os.environ, **ENV}, check=True)


def _make(where: Path, files: int = 1000) -> Path:
    repo = where / "repo"
    for n in range(files):
        path = repo / f"d{n // 100}" / f"f{n}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"line {k} of {n}\n" for k in range(20)))
    _git(repo, "init", "-q", "-b", "work")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "start")
    return repo


def worker(kind: str, lands: int) -> None:
    """Land ``lands`` changes of ``kind`` on a new repository; print the milliseconds of each
    as JSON (run with the code under test first on ``sys.path``)."""
    from gitpatch import Workspace
    from gitpatch.core.model import AddFile, Proposal, Replace, UpdateFile

    with tempfile.TemporaryDirectory() as tmp:
        repo = _make(Path(tmp))
        ws = Workspace.open(repo, branch="work")
        times = []
        for k in range(lands):
            if kind == "edit":
                n = (k * 37) % 1000
                change = UpdateFile(f"d{n // 100}/f{n}.txt", (Replace("line 7 ", "LINE 7 "),))
            else:
                change = AddFile(f"new/n{k}.txt", f"new {k}\n")
            start = time.perf_counter()
            ws.propose(Proposal((change,), "patch_resource", tool="bench"))
            times.append((time.perf_counter() - start) * 1000)
        print(json.dumps(times))


def _run(code: Path, kind: str, lands: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", kind, str(lands)],
        cwd=code,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    times: list[float] = json.loads(out.stdout.strip().splitlines()[-1])
    return times


def main() -> None:
    """Parse the options; run the workers A/B; print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--lands", type=int, default=40)
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "LANDS"))
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]))
        return
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        archive = subprocess.run(["git", "archive", args.base], cwd=ROOT, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        results: dict[tuple[str, str], list[float]] = {}
        for _round in range(args.rounds):
            for kind in KINDS:
                for name, code in (("base", base), ("this", ROOT)):
                    results.setdefault((name, kind), []).extend(_run(code, kind, args.lands))
    print(f"auto-mode land, median ms ({args.rounds} rounds x {args.lands} lands, A/B alternated)")
    print(f"{'kind':<6} {args.base:>10} {head:>10}  ratio")
    for kind in KINDS:
        a = statistics.median(results[("base", kind)])
        b = statistics.median(results[("this", kind)])
        print(f"{kind:<6} {a:>10.2f} {b:>10.2f}  x{b / a:.2f}")


if __name__ == "__main__":
    main()
