"""Building a proposal in review mode, in a 1,000-file and a 100,000-file repository.

One proposal = read the file at the branch tip, write the new blob, one tree per directory on
its path, the commit (with trailers), and create ``refs/heads/gitpatch/<id>`` by CAS: no
working tree, no index. Both repositories are built once per run with pygit2 (TreeBuilders over
nested directories), then the two are measured alternately, so load on the machine hits both
alike. Targets: median <= 2 ms at 100,000 files, ratio 100k / 1k <= 1.3.

It then prints, for the 100,000-file repository, the other store steps of a proposal's life:
a CAS branch move, a note update, changed_paths + diff, and a 3-way merge commit.

Repositories go on tmpfs (``/dev/shm``) when present, as the figures in FACTS.md were taken,
and also on the disk temp dir: creating files there depends on what else the disk is doing.

    python -m bench.bench_store [--runs 400] [--where tmpfs|disk|both]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from gitpatch.core.model import FileChange
from gitpatch.store import Store

MAIN = "refs/heads/main"
SIZES = {"1k": (10, 10, 10), "100k": (100, 100, 10)}  # dirs x subdirs x files: depth 3


def make_repo(root: Path, shape: tuple[int, int, int]) -> tuple[Store, list[str]]:
    """A repository with ``a*b*c`` files at ``dNN/sNN/fN.txt`` in one commit on main."""
    top, sub, files = shape
    pygit2.init_repository(str(root), bare=True, initial_head="main")
    store = Store.open(root)
    repo = store.repo
    # A few hundred distinct blobs are enough: the hot path never reads blobs it does not edit.
    blobs = [repo.create_blob(f"line {i}\n" * 20) for i in range(257)]
    root_builder = repo.TreeBuilder()
    paths: list[str] = []
    for d in range(top):
        dir_builder = repo.TreeBuilder()
        for s in range(sub):
            leaf = repo.TreeBuilder()
            for f in range(files):
                leaf.insert(f"f{f}.txt", blobs[(d * 7 + s * 3 + f) % len(blobs)], FileMode.BLOB)
                paths.append(f"d{d:03}/s{s:03}/f{f}.txt")
            dir_builder.insert(f"s{s:03}", leaf.write(), FileMode.TREE)
        root_builder.insert(f"d{d:03}", dir_builder.write(), FileMode.TREE)
    commit = store.commit(root_builder.write(), [], f"{len(paths)} files")
    store.update_ref(MAIN, commit, None, "bench: create")
    return store, paths


def propose(store: Store, path: str, serial: int) -> str:
    """One review-mode proposal editing ``path``; returns the proposal ref it created."""
    tip = store.ref_target(MAIN)
    assert tip is not None
    old = store.read(tip, path) or b""
    tree = store.build_tree(tip, [FileChange(path, old + f"edit {serial}\n".encode())])
    trailers = {"Gitpatch-Proposal": f"b{serial}", "Gitpatch-Tool": "bench"}
    commit = store.commit(tree, [tip], f"Edit {path}", trailers)
    ref = f"refs/heads/gitpatch/b{serial}"
    store.update_ref(ref, commit, None, "gitpatch: propose")
    return ref


Repos = dict[str, tuple[Store, list[str]]]


def measure(where: Path, runs: int) -> tuple[dict[str, list[float]], Repos]:
    """Build both repositories under ``where`` and time ``runs`` proposals in each, alternately."""
    repos: Repos = {}
    for name, shape in SIZES.items():
        start = time.perf_counter()
        repos[name] = make_repo(where / name, shape)
        print(
            f"  made {name} repo ({len(repos[name][1])} files)"
            f" in {time.perf_counter() - start:.1f} s"
        )
    rng = random.Random(7)
    times: dict[str, list[float]] = {key: [] for name in repos for key in (name, f"{name} cpu")}
    for serial in range(runs):
        for name, (store, paths) in repos.items():
            path = rng.choice(paths)
            start, cpu = time.perf_counter(), time.process_time()
            ref = propose(store, path, serial)
            times[name].append(time.perf_counter() - start)
            times[f"{name} cpu"].append(time.process_time() - cpu)
            # Not timed: keep the ref namespace the same size across runs.
            store.update_ref(ref, None, store.ref_target(ref), "bench: cleanup")
    return times, repos


def side_costs(store: Store, paths: list[str], runs: int) -> None:
    """Medians of the other store steps a proposal's life uses, in the given repository."""
    moves: list[float] = []
    notes: list[float] = []
    compares: list[float] = []
    merges: list[float] = []
    for serial in range(runs):
        tip = store.ref_target(MAIN)
        assert tip is not None
        change = [FileChange(paths[serial % len(paths)], f"side {serial}\n".encode())]
        commit = store.commit(store.build_tree(tip, change), [tip], "side")
        start = time.perf_counter()
        store.update_ref(MAIN, commit, tip, "bench: fast-forward")
        moves.append(time.perf_counter() - start)
        start = time.perf_counter()
        store.update_note(commit, lambda old: {"status": "approved", "by": "bench"})
        notes.append(time.perf_counter() - start)
        start = time.perf_counter()
        store.changed_paths(tip, commit)
        store.diff(tip, commit)
        compares.append(time.perf_counter() - start)
        other = [FileChange(paths[-1 - serial % len(paths)], f"other {serial}\n".encode())]
        theirs = store.commit(store.build_tree(tip, other), [tip], "theirs")
        start = time.perf_counter()
        store.merge(commit, theirs, "bench: 3-way merge")
        merges.append(time.perf_counter() - start)
    print(
        f"    in the 100k repo: CAS branch move median {statistics.median(moves) * 1e3:.3f} ms,"
        f" note update median {statistics.median(notes) * 1e3:.3f} ms,"
        f" changed_paths + diff median {statistics.median(compares) * 1e3:.3f} ms,"
        f" 3-way merge commit median {statistics.median(merges) * 1e3:.3f} ms"
    )


def report(label: str, times: dict[str, list[float]]) -> bool:
    """Print medians, p90 and the ratio; True when both targets are met."""
    med = {name: statistics.median(t) * 1e3 for name, t in times.items()}
    p90 = {name: statistics.quantiles(t, n=10)[-1] * 1e3 for name, t in times.items()}
    ratio = med["100k"] / med["1k"]
    ok = med["100k"] <= 2.0 and ratio <= 1.3
    print(f"  {label}: build a proposal (review mode), {len(times['1k'])} runs each")
    for name in ("1k", "100k"):
        print(
            f"    {name:>4} files: median {med[name]:.3f} ms   p90 {p90[name]:.3f} ms"
            f"   (cpu median {med[name + ' cpu']:.3f} ms)"
        )
    cpu_ratio = med["100k cpu"] / med["1k cpu"]
    verdict = "met" if ok else "MISSED"
    print(f"    ratio 100k/1k: {ratio:.2f} (cpu {cpu_ratio:.2f})   <= 2 ms and <= 1.3: {verdict}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"    load average after the run: {load} on {os.cpu_count()} cpus")
    return ok


def main() -> int:
    """Run the benchmark where asked and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--where", choices=["tmpfs", "disk", "both"], default="both")
    args = parser.parse_args()
    places: list[tuple[str, str | None]] = []
    if args.where in ("tmpfs", "both") and os.path.isdir("/dev/shm"):
        places.append(("tmpfs", "/dev/shm"))
    if args.where in ("disk", "both"):
        places.append((f"disk ({tempfile.gettempdir()})", None))
    ok = True
    for label, base in places:
        where = Path(tempfile.mkdtemp(prefix="gitpatch-bench-", dir=base))
        try:
            print(f"[{label}]")
            times, repos = measure(where, args.runs)
            ok &= report(label, times)
            side_costs(*repos["100k"], max(50, args.runs // 4))
        finally:
            shutil.rmtree(where, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
