"""The MCP server's speed over stdio: `python -m bench.bench_mcp`.

In a repository of 20,000 files plus one 2,000-line file, through the real ``gitpatch serve``
and the MCP SDK's own client (``ClientSession`` + ``stdio_client``), it measures:

- start: from spawning the server process to the first tool result (``read_file`` of the big
  file), and to the first edit result, medians over several fresh processes;
- per call: the median round trip of a one-line edit (``patch``) of the 2,000-line file, in
  review mode (a proposal commit and its note) and auto mode (also the working-tree file and
  the index), and of a ``read_file`` of it, once the server is warm;
- the same review-mode edit on the tool layer in process (``gitpatch.patch_tool`` over a
  Workspace, no MCP): the difference is what the protocol and the process boundary cost;
- the floor under the start figure: a bare interpreter importing the MCP SDK's ``MCPServer``;
- growth: the review-mode edit over stdio with 0, 300 and 1,000 proposals open in the
  repository (each one a branch and a note), which must not grow with their number.

Targets (issue 10): first result <= 1.0 s; median edit call <= 3 ms.
Options: ``--files N`` (default 20000), ``--runs N`` (calls per figure), ``--starts N``,
``--open A,B,C`` (open proposals for the growth figure; ``--open ''`` skips it).
The server runs from ``PYTHONPATH`` when set, so an older checkout can be measured the same way.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench._common import GIT_ENV, git, make_repo

BIG = "big/module.py"
BIG_LINES = 2000


def _add_big_file(repo: Path) -> None:
    (repo / "big").mkdir()
    (repo / BIG).write_text("".join(f"value_{n} = {n}  # rev 0\n" for n in range(BIG_LINES)))
    git(repo, "add", BIG)
    git(repo, "commit", "-q", "-m", "a 2,000-line file")


def _params(repo: Path, mode: str) -> StdioServerParameters:
    # Each server is a session of its own (review-mode proposals stack per session), so a
    # server's first edit applies to the target's content and its later ones chain on it.
    session = f"bench-{next(_SESSIONS)}"
    return StdioServerParameters(
        command=str(Path(sys.executable).parent / "gitpatch"),
        args=["-C", str(repo), "serve", "--mode", mode, "--session", session],
        env=dict(GIT_ENV),
    )


_SESSIONS = itertools.count()


def _edit(n: int) -> dict[str, Any]:
    old, new = f"value_1000 = 1000  # rev {n}", f"value_1000 = 1000  # rev {n + 1}"
    return {"path": BIG, "edits": f"<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"}


async def _start_once(repo: Path, counter: list[int]) -> tuple[float, float]:
    """Seconds from spawn to the first read result, and to the first edit result."""
    start = time.perf_counter()
    async with (
        stdio_client(_params(repo, "review"), errlog=sys.stderr) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        result = await client.call_tool("read_file", {"path": BIG, "limit": 1})
        assert not result.is_error
        first_read = time.perf_counter() - start
        result = await client.call_tool("patch", _edit(counter[0]))
        assert not result.is_error, result.content
        first_edit = time.perf_counter() - start
    return first_read, first_edit


async def _calls(repo: Path, mode: str, runs: int, counter: list[int]) -> dict[str, float]:
    """Median milliseconds per call, after warm-up, on one server."""
    out: dict[str, float] = {}
    async with (
        stdio_client(_params(repo, mode), errlog=sys.stderr) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        for _ in range(3):
            await client.call_tool("read_file", {"path": BIG, "limit": 1})
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            result = await client.call_tool("read_file", {"path": BIG, "offset": 990, "limit": 20})
            times.append((time.perf_counter() - t0) * 1000)
            assert not result.is_error
        out["read_file"] = statistics.median(times)
        times = []
        for k in range(runs + 3):
            # auto: the branch holds the last edit; review: this session's stack holds it
            arguments = _edit(counter[0]) if mode == "auto" else _edit(k)
            t0 = time.perf_counter()
            result = await client.call_tool("patch", arguments)
            elapsed = (time.perf_counter() - t0) * 1000
            assert not result.is_error, result.content
            if mode == "auto":
                counter[0] += 1
            if k >= 3:
                times.append(elapsed)
        out["patch"] = statistics.median(times)
    return out


def _children_cpu_ms() -> float:
    """CPU time (user + system, ms) used so far by this process's child processes that still
    run: the server. CPU time, unlike wall time, does not count waiting for a busy machine."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for pid in (task / "children").read_text().split():
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])  # utime, stime
    return total * 1000 / tick


async def _growth(
    repo: Path, marks: list[int], runs: int
) -> list[tuple[int, float, float, tuple[int, int]]]:
    """(open proposals, median wall ms, server CPU ms per call, notes root) of a review-mode
    edit at each mark, on one server: every edit stays open, stacked on the one before (one
    session), so the mark is also the depth of the session's stack."""
    out: list[tuple[int, float, float, tuple[int, int]]] = []
    made = 0
    async with (
        stdio_client(_params(repo, "review"), errlog=sys.stderr) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        for mark in marks:
            while made < mark:
                result = await client.call_tool("patch", _edit(made))
                assert not result.is_error, result.content
                made += 1
            times = []
            cpu = _children_cpu_ms()
            for k in range(runs):
                t0 = time.perf_counter()
                result = await client.call_tool("patch", _edit(mark + k))
                times.append((time.perf_counter() - t0) * 1000)
                assert not result.is_error, result.content
            cpu = (_children_cpu_ms() - cpu) / runs
            out.append((made, statistics.median(times), cpu, _notes_root(repo)))
            made += runs
    return out


def _notes_root(repo: Path) -> tuple[int, int]:
    """(entries, bytes) of the root tree of ``refs/notes/gitpatch``: what every proposal's note
    rewrites besides its own small subtree (deterministic, unlike the timings)."""
    import pygit2

    git_repo = pygit2.Repository(str(repo))
    root = git_repo.revparse_single("refs/notes/gitpatch").peel(pygit2.Tree)
    return len(root), len(root.read_raw())


def _sdk_import(starts: int) -> float:
    """Median seconds for a fresh interpreter to import ``MCPServer`` (and exit)."""
    code = "import mcp.server.mcpserver"
    times = []
    for _ in range(starts):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _in_process(repo: Path, runs: int) -> float:
    """Median milliseconds of the review-mode edit through ``patch_tool``, no MCP."""
    from gitpatch import Workspace, patch_tool

    ws = Workspace.open(repo, mode="review")
    tool = patch_tool(ws, ws)
    times = []
    for k in range(runs + 3):
        t0 = time.perf_counter()
        result = tool(**_edit(0))
        elapsed = (time.perf_counter() - t0) * 1000
        assert result.ok, str(result)
        if k >= 3:
            times.append(elapsed)
    return statistics.median(times)


def main() -> int:
    """Build the repository, then print the start-up and per-call figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--open", default="0,300,1000", help="open proposals for the growth figure")
    opts = parser.parse_args()
    marks = [int(m) for m in opts.open.split(",") if m.strip()]
    with tempfile.TemporaryDirectory(prefix="gitpatch-bench-mcp-") as tmp:
        repo, made = make_repo(Path(tmp), opts.files)
        _add_big_file(repo)
        print(
            f"repository: {opts.files:,} files + a {BIG_LINES:,}-line file (made in {made:.1f} s)"
        )
        if marks:  # on a repository of its own, so the other figures start with none open
            for count, ms, cpu, (entries, size) in anyio.run(
                _growth, repo, marks, max(opts.runs, 50)
            ):
                print(
                    f"review-mode patch over stdio with {count:>5,} proposals open: {ms:.2f} ms "
                    f"median, server CPU {cpu:.2f} ms per call; notes root {entries} entries, "
                    f"{size / 1024:.1f} KB rewritten per proposal"
                )
            (Path(tmp) / "fresh").mkdir()
            repo, _made = make_repo(Path(tmp) / "fresh", opts.files)
            _add_big_file(repo)
        counter = [0]
        starts = [anyio.run(_start_once, repo, counter) for _ in range(opts.starts)]
        reads, edits = zip(*starts, strict=True)
        print(
            f"start -> first read_file result: {statistics.median(reads):.2f} s median "
            f"(min {min(reads):.2f}, max {max(reads):.2f}); -> first patch result: "
            f"{statistics.median(edits):.2f} s   [target <= 1.0 s]"
        )
        print(
            f"  floor: a bare interpreter importing the MCP SDK: {_sdk_import(opts.starts):.2f} s"
        )
        direct = _in_process(repo, opts.runs)
        print(f"in process, no MCP: patch_tool review-mode edit {direct:.2f} ms median")
        for mode in ("review", "auto"):
            figures = anyio.run(_calls, repo, mode, opts.runs, counter)
            print(
                f"{mode:>6} mode, median per call over stdio: patch (one line of "
                f"{BIG_LINES:,}) {figures['patch']:.2f} ms, read_file {figures['read_file']:.2f} ms"
                "   [target patch <= 3 ms]"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
