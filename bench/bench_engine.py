"""Engine speed: `python -m bench.bench_engine` prints medians of ``engine.apply`` in-process.

Each figure applies an already-parsed proposal to an in-memory snapshot: decoding the bytes, the
matcher, rendering, and encoding the new bytes, for one edit near the end of a file of real
Python source (10,000 and 100,000 lines), in each edit language. "50 files" applies one
apply_patch proposal that updates 50 files of 2,000 lines. Parsing is not included: it is
proportional to the size of the edit, not of the file.
"""

from __future__ import annotations

import time

from bench._common import median_ms
from bench.bench_match import corpus_lines, unique_block
from gitpatch.core.model import Hunk, HunkLine, Proposal, Replace, SearchReplace, UpdateFile
from gitpatch.engine import apply

PATH = "big.py"
#: Times are CPU time, not wall time: robust to a busy machine.
CPU = time.process_time


def proposals(lines: list[str]) -> dict[str, Proposal]:
    """One proposal per language, each changing the last line of one unique 5-line block."""
    block = unique_block(lines, len(lines) - 50)
    new = [*block[:-1], block[-1] + "  # edited"]
    ops = [HunkLine(" ", x) for x in block[:-1]]
    hunk = Hunk((*ops, HunkLine("-", block[-1]), HunkLine("+", new[-1])))
    replace = Replace("\n".join(block), "\n".join(new))
    return {
        "search_replace": Proposal(
            (UpdateFile(PATH, (SearchReplace(tuple(block), tuple(new), 1, 1),)),), "search_replace"
        ),
        "apply_patch": Proposal((UpdateFile(PATH, (hunk,)),), "apply_patch"),
        "unified_diff": Proposal((UpdateFile(PATH, (hunk,)),), "unified_diff"),
        "patch_resource": Proposal((UpdateFile(PATH, (replace,)),), "patch_resource"),
    }


def bench_size(size: int, runs: int) -> None:
    """Print one line per language for a file of ``size`` lines."""
    lines = corpus_lines(size)
    data = ("\n".join(lines) + "\n").encode("utf-8")
    for name, proposal in proposals(lines).items():
        ms = median_ms(lambda p=proposal: apply(p, {PATH: data}), runs, CPU)
        print(f"{size:>7} lines  {name:<15} {ms:8.2f} ms")


def bench_many(files: int, size: int, runs: int) -> None:
    """One apply_patch proposal updating ``files`` files of ``size`` lines each."""
    lines = corpus_lines(size)
    data = ("\n".join(lines) + "\n").encode("utf-8")
    hunk = proposals(lines)["apply_patch"].operations[0]
    assert isinstance(hunk, UpdateFile)
    paths = [f"pkg/m{i}.py" for i in range(files)]
    proposal = Proposal(tuple(UpdateFile(p, hunk.edits) for p in paths), "apply_patch")
    snapshot = dict.fromkeys(paths, data)
    ms = median_ms(lambda: apply(proposal, snapshot), runs, CPU)
    print(f"{files} files x {size} lines, apply_patch, one hunk each: {ms:.1f} ms")


def main() -> None:
    """Print every figure (medians)."""
    print("engine.apply, in-process, median CPU time of repeated runs")
    bench_size(10_000, 31)
    bench_size(100_000, 7)
    bench_many(50, 2_000, 7)


if __name__ == "__main__":
    main()
