"""What the benchmarks share: timing medians, and big repositories made with git.

Not a benchmark itself (``bench/run.py`` runs only ``bench_*.py``).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from gitpatch.core.model import Proposal, Replace, UpdateFile

BRANCH = "bench"
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}
# Automatic gc/maintenance would add an occasional extra process to git's figure; leave it out.
GIT_QUIET = ("-c", "gc.auto=0", "-c", "maintenance.auto=false")
FILES_PER_DIR = 100


# --- timing ----------------------------------------------------------------------------------


def timed_ms(fn: Callable[[], object], clock: Callable[[], float] = time.perf_counter) -> float:
    """How long one call of ``fn`` took, in milliseconds, by ``clock`` (wall time unless told)."""
    start = clock()
    fn()
    return (clock() - start) * 1000


def median_ms(
    fn: Callable[[], object], runs: int, clock: Callable[[], float] = time.perf_counter
) -> float:
    """Median time of ``fn`` in milliseconds, by ``clock`` (wall time unless told)."""
    return statistics.median(timed_ms(fn, clock) for _ in range(runs))


def median_ms_of_calls(action: Callable[[int], object], runs: int, warmup: int = 3) -> float:
    """Median wall time in milliseconds of ``action(k)`` for the ``runs`` calls after ``warmup``.

    ``k`` numbers every call, warm-up ones included, so each call can make a distinct change.
    """
    times = [timed_ms(partial(action, k)) for k in range(warmup + runs)]
    return statistics.median(times[warmup:])


# --- repositories ----------------------------------------------------------------------------


def git(repo: Path, *args: str) -> None:
    """Run git quietly in ``repo`` as the bench identity; a failure raises."""
    subprocess.run(
        ["git", *GIT_QUIET, *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True
    )


def path_of(i: int) -> str:
    """The path of file number ``i`` in a repository made by ``make_repo``."""
    # Three levels like a real source tree: src/dNNN/eN/fNNNNN.txt with 100 files per folder.
    return f"src/d{i // 1000:03d}/e{(i // FILES_PER_DIR) % 10}/f{i:06d}.txt"


def _fast_import_stream(files: int) -> bytes:
    lines = [
        b"commit refs/heads/" + BRANCH.encode(),
        b"committer Bench <bench@example.com> 1767225600 +0000",
        b"data 12",
        b"bench files",
        b"",
    ]
    for i in range(files):
        data = (f"file {i}\nrev 0\n" + "".join(f"line {n}\n" for n in range(8))).encode()
        lines.append(b"M 100644 inline " + path_of(i).encode())
        lines.append(b"data %d" % len(data))
        lines.append(data)
    return b"\n".join(lines) + b"\n"


def make_repo(root: Path, files: int) -> tuple[Path, float]:
    """A repository of ``files`` small text files with working tree and index; (path, seconds).

    ``git fast-import`` writes the one commit straight into a pack (as a clone would have it)
    and ``git reset --hard`` writes the working tree and a fully stat-ed index: the same end
    state as writing the files, ``git add`` and ``git commit``, several times faster.
    """
    start = time.perf_counter()
    repo = root / f"repo_{files}"
    repo.mkdir()
    git(repo, "init", "-q", "-b", BRANCH)
    subprocess.run(
        ["git", "fast-import", "--quiet"],
        cwd=repo,
        env=GIT_ENV,
        check=True,
        input=_fast_import_stream(files),
        capture_output=True,
    )
    git(repo, "reset", "-q", "--hard")
    return repo, time.perf_counter() - start


def one_line(path: str, old: str, new: str) -> Proposal:
    """A proposal replacing ``old`` with ``new`` in ``path``."""
    op = UpdateFile(path=path, edits=(Replace(old=old, new=new),))
    return Proposal(operations=(op,), format="patch_resource", tool="bench")


def bytecode_env(root: Path) -> dict[str, str]:
    """``GIT_ENV`` for child Pythons, with gitpatch compiled to a bytecode cache under ``root``.

    A pip install compiles the package when it installs it. This machine's environment sets
    ``PYTHONDONTWRITEBYTECODE=1``, so without a cache every child interpreter would compile
    gitpatch from source again (0.1-0.2 s a start): whole-process figures need the cache.
    """
    env = {k: v for k, v in GIT_ENV.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(root / "pycache")
    package = Path(__file__).resolve().parent.parent / "gitpatch"
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(package), str(Path(__file__).parent)],
        env=env,
        check=True,
        capture_output=True,
    )
    return env
