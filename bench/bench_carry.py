"""What keeping a person's uncommitted work theirs costs: `python -m bench.bench_carry`.

In a repository of 1,000 files, the median of a one-line auto-mode edit (``Workspace.propose``,
landed on disk) of a file that is clean, of a file with a person's uncommitted line far from
the edit with ``dirty='carry'`` (two 3-way file merges and an index entry the person's work
keeps unstaged), and with ``dirty='record'`` (a commit of the person's work first). Also what
opening a session on a protected branch costs the first time (``git worktree add`` of the
session's own worktree) and after (finding it again). Ratios are against the clean edit, so
they compare in one run on one machine.

Options: ``--files N`` and ``--runs N``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench._common import git, make_repo, median_ms_of_calls, one_line, path_of, timed_ms
from gitpatch.porcelain.workspace import Workspace


def edits(repo: Path, files: int, runs: int) -> dict[str, float]:
    """Median ms of a clean, a carried and a recorded one-line edit."""
    out: dict[str, float] = {}
    for n, (label, dirty, person) in enumerate(
        (("clean", "carry", False), ("carry", "carry", True), ("record", "record", True))
    ):
        ws = Workspace.open(repo, dirty=dirty)  # type: ignore[arg-type]

        def once(k: int, ws: Workspace = ws, person: bool = person, n: int = n) -> None:
            path = path_of((n * files // 3 + k) % files)  # a fresh file each call
            full = repo / path
            if person:
                full.write_text(full.read_text().replace("line 0\n", f"person {k}\n", 1))
            ws.propose(one_line(path, "line 7", f"edit {k}"))

        out[label] = median_ms_of_calls(once, runs)
        git(repo, "reset", "-q", "--hard")  # the person's lines go; the next variant is clean
    return out


def sessions(root: Path, files: int) -> dict[str, float]:
    """ms to open a session on protected main the first time and again."""
    (root / "protected").mkdir()
    repo, _made = make_repo(root / "protected", files)
    git(repo, "branch", "-m", "main")
    first = timed_ms(lambda: Workspace.open(repo))
    again = timed_ms(lambda: Workspace.open(repo))
    return {"session, first open": first, "session, open again": again}


def main() -> int:
    """Print the medians and their ratios to the clean edit."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gitpatch-bench-carry-") as tmp:
        repo, _made = make_repo(Path(tmp), args.files)
        git(repo, "config", "gc.auto", "0")
        figures = edits(repo, args.files, args.runs)
        figures |= sessions(Path(tmp), args.files)
    clean = figures["clean"]
    print(f"{args.files} files, median of {args.runs} runs (ms; ratio to a clean edit):")
    for label, ms in figures.items():
        print(f"  {label:<22} {ms:8.2f}  x{ms / clean:5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
