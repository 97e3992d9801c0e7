"""The workbench's costs on a big repository: `python -m bench.bench_workbench`.

One repository of ``--files`` files (default 100,000; made once with ``git fast-import``,
``gc.auto=0``), then, each against its anchor in the same run, variants alternating:

- a checkpoint with nothing changed (``Workspace.checkpoint``, in process) against ``git
  status --porcelain`` in the same worktree (target <= x1.2); the whole ``gitpatch
  checkpoint`` process is printed too;
- a checkpoint of one changed file against ``git add -A`` + ``git commit`` of one changed file
  in a plain linked worktree of the same repository (target <= x1.2);
- the first call of a session that only edits (opening the Workspace included, as an MCP
  server's first call has it) against a later call, in review mode and in auto mode on a
  protected branch (target <= x1.5);
- a new session worktree (``review.worktrees.add``: ``--no-checkout``, then git's parallel
  checkout) against ``git worktree add`` (target <= x1.0).

Options: ``--files N``, ``--runs N``, ``--dir PATH``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._common import GIT_ENV, GIT_QUIET, bytecode_env, git, make_repo, one_line, path_of
from gitpatch.porcelain.workspace import Workspace
from gitpatch.review import worktrees
from gitpatch.store import Store


def _ms(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def _pair(
    ours: Callable[[int], object], anchor: Callable[[int], object], runs: int
) -> tuple[float, float]:
    """Medians (ms) of ``ours`` and ``anchor``, alternating call by call after one warm-up."""
    ours(-1)
    anchor(-1)
    a: list[float] = []
    b: list[float] = []
    for k in range(runs):
        a.append(_ms(lambda k=k: ours(k)))  # type: ignore[misc]
        b.append(_ms(lambda k=k: anchor(k)))  # type: ignore[misc]
    return statistics.median(a), statistics.median(b)


def _verdict(label: str, ours: float, anchor: float, target: float) -> None:
    ratio = ours / anchor
    mark = "ok" if ratio <= target else "MISSED"
    print(f"{label:58s} {ours:9.1f} ms / {anchor:9.1f} ms = x{ratio:.2f} (<= x{target}) {mark}")


def _bump(where: Path, k: int, files: int) -> None:
    path = where / path_of((files // 2 + k) % files)
    path.write_text(path.read_text() + f"bench {k}\n")


def checkpoints(repo: Path, runs: int, env: dict[str, str], files: int) -> None:
    """Nothing changed, and one changed file, against git's own commands."""
    ws = Workspace.open(repo, "review", session="bench")
    where = ws.plumbing.session_worktree().path
    plain = repo.parent / "plain"
    git(repo, "worktree", "add", "-q", "--detach", str(plain), "bench")

    def status(_k: int) -> None:
        git(where, "status", "--porcelain")

    ours, anchor = _pair(lambda _k: ws.checkpoint(), status, runs)
    _verdict("checkpoint, nothing changed / git status --porcelain", ours, anchor, 1.2)
    cli = [sys.executable, "-m", "gitpatch", "-C", str(where), "checkpoint"]
    whole, anchor = _pair(
        lambda _k: subprocess.run(cli, env=env, check=True, capture_output=True), status, 3
    )
    print(f"{'  (whole gitpatch checkpoint process, for reference)':58s} {whole:9.1f} ms")

    def ours_one(k: int) -> None:
        _bump(where, k, files)
        assert ws.checkpoint().recorded

    def git_one(k: int) -> None:
        _bump(plain, k, files)
        git(plain, "add", "-A")
        git(plain, "commit", "-q", "-m", f"bench {k}")

    ours, anchor = _pair(ours_one, git_one, runs)
    _verdict("checkpoint, one file changed / git add -A + git commit", ours, anchor, 1.2)


def first_calls(repo: Path, runs: int, files: int) -> None:
    """An edit-only session's first call (open included) against a later one."""
    for mode in ("review", "auto"):
        firsts, laters = [], []
        for k in range(runs):
            name = f"{mode}-{k}"
            n = 2 * k + (0 if mode == "review" else files // 4)
            ws: list[Workspace] = []

            def first(
                name: str = name, n: int = n, ws: list[Workspace] = ws, mode: str = mode
            ) -> None:
                ws.append(Workspace.open(repo, mode, "main", session=name))  # type: ignore[arg-type]
                ws[0].propose(one_line(path_of(n), "line 3", f"first {n}"))

            def later(n: int = n, ws: list[Workspace] = ws) -> None:
                ws[0].propose(one_line(path_of(n + 1), "line 3", "x"))

            firsts.append(_ms(first))
            laters.append(_ms(later))
        _verdict(
            f"first call of an edit-only session ({mode}) / a later call",
            statistics.median(firsts),
            statistics.median(laters),
            1.5,
        )


def new_worktrees(repo: Path, runs: int) -> None:
    """Making a session's worktree against ``git worktree add``."""
    store = Store.open(repo)
    folder = worktrees.place(store, "x").parent
    head = git_out(repo, "rev-parse", "bench")

    def ours(k: int) -> None:
        worktrees.add(store, f"ours{k}", head, detach=True)

    def anchor(k: int) -> None:
        git(repo, "worktree", "add", "-q", "--detach", str(folder / f"git{k}"), head)

    mine, theirs = _pair(ours, anchor, runs)
    _verdict("new session worktree / git worktree add", mine, theirs, 1.0)
    for child in folder.iterdir():
        shutil.rmtree(child)
    git(repo, "worktree", "prune")


def git_out(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *GIT_QUIET, *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True
    )
    return done.stdout.decode().strip()


def main() -> int:
    """Print each figure against its anchor, with its verdict."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        (root / "r").mkdir()
        repo, took = make_repo(root / "r", args.files)
        git(repo, "config", "gc.auto", "0")
        git(repo, "config", "user.name", "Bench")
        git(repo, "config", "user.email", "bench@example.com")
        git(repo, "branch", "main", "bench")
        print(f"{args.files} files, made in {took:.1f} s; runs {args.runs}")
        env = bytecode_env(root)
        new_worktrees(repo, max(2, args.runs // 2))
        checkpoints(repo, args.runs, env, args.files)
        first_calls(repo, args.runs, args.files)
    return 0


if __name__ == "__main__":
    sys.exit(main())
