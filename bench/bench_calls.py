"""Issue 19's per-call rows through the real entry points, each a ratio against its anchor
measured in the same run: `python -m bench.bench_calls` (also part of `make bench`).

- MCP edit: a one-line ``patch`` edit of a 2,000-line file in auto mode, on a 20,000-file
  repository, through ``gitpatch serve`` and the SDK's own client, against the ``echo`` tool of
  the SDK's own server (``bench/echo_server.py``). Both sessions stay open and the calls
  alternate, so load on the machine hits both alike. Target: <= 3.
- MCP layer: the MCP edit minus the same edit in process (``Workspace.apply`` on a clone of the
  repository, measured just before), against the echo call: what the door,
  the SDK and the pipe add to an edit. Target (issue 24): <= 2.
- MCP start: spawning ``gitpatch serve`` to its first tool result (``read_file``) against
  spawning the echo server to its first ``echo`` result, alternately. Target: <= 1.15.
- big file: ``gitpatch edit`` (the whole CLI process) of one line of a 52 MB file against
  ``git add`` + ``git commit`` of the same change, alternately; and each side's peak resident
  set (the child's ``ru_maxrss``) over the file's size. Targets: <= 1.5 and <= 2x the file.

The review proposal against the raw pygit2 floor, auto-apply against git's commands and their
growth from 500 to 20,000 files are ``bench_speed``'s rows. Options: ``--files N``, ``--runs N``,
``--starts N``, ``--mb M`` (0 skips the big file), ``--dir PATH``; ``--against REV`` prints
only the MCP layer's row, for the package at ``REV`` and for this tree A/B in one run (each
side's server, its in-process edits in a child process and the echo server alternating call
by call, every side on clones of its own). Child interpreters run
with a bytecode cache, as an installed package has (``_common.bytecode_env``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
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

from bench._common import GIT_QUIET, bytecode_env, git, make_repo

HERE = Path(__file__).resolve().parent
BIG, BIG_LINES = "big/module.py", 2000
TARGETS = {"edit": 3.0, "layer": 2.0, "start": 1.15, "big_time": 1.5, "big_rss": 2.0}
GITPATCH = str(Path(sys.executable).parent / "gitpatch")
TIME = "/usr/bin/time"  # GNU time: the peak resident set of a command
#: The children's environment: ``bytecode_env`` (set in ``main``), the same for both sides.
ENV: dict[str, str] = {}


def _gitpatch_server(repo: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=GITPATCH, args=["-C", str(repo), "serve", "--mode", "auto"], env=dict(ENV)
    )


def _echo_server() -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "bench.echo_server"],
        cwd=str(HERE.parent),
        env=dict(ENV),
    )


def _edit(n: int, line: int = 1000) -> dict[str, Any]:
    old, new = f"value_{line} = {line}  # rev {n}", f"value_{line} = {line}  # rev {n + 1}"
    return {"path": BIG, "edits": f"<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"}


async def _timed(client: ClientSession, tool: str, arguments: dict[str, Any]) -> float:
    start = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    elapsed = (time.perf_counter() - start) * 1000
    assert not result.is_error, result.content
    return elapsed


def _in_process(repo: Path, runs: int) -> float:
    """Median ms of the same edit in process, on a clone of ``repo`` (its own fresh index):
    measured on its own, before the servers start, since calls alternating with a server
    in the same event loop ran several times slower than either alone."""
    twin = repo.with_name(repo.name + "-in-process")
    git(repo.parent, "clone", "-q", str(repo), str(twin))
    return statistics.median(_edits_here(twin, runs))


def _edits_here(repo: Path, runs: int) -> list[float]:
    """Ms of each of ``runs`` edits in process after three warm-up ones (``Workspace.apply``)."""
    from gitpatch import Workspace

    ws = Workspace.open(repo, mode="auto")
    times: list[float] = []
    for k in range(runs + 3):
        start = time.perf_counter()
        ws.apply(**_edit(k))
        if k >= 3:
            times.append((time.perf_counter() - start) * 1000)
    return times


async def _edits(repo: Path, runs: int) -> tuple[float, float]:
    """Median ms of the auto-mode edit and of the echo call, alternating on live sessions."""
    ours: list[float] = []
    echo: list[float] = []
    async with (
        stdio_client(_gitpatch_server(repo), errlog=sys.stderr) as (read, write),
        ClientSession(read, write) as client,
        stdio_client(_echo_server(), errlog=sys.stderr) as (echo_read, echo_write),
        ClientSession(echo_read, echo_write) as anchor,
    ):
        await client.initialize()
        await anchor.initialize()
        for k in range(runs + 3):
            mine = await _timed(client, "patch", _edit(k))
            theirs = await _timed(anchor, "echo", {"text": f"call {k}"})
            if k >= 3:
                ours.append(mine)
                echo.append(theirs)
    return statistics.median(ours), statistics.median(echo)


async def _start(params: StdioServerParameters, tool: str, arguments: dict[str, Any]) -> float:
    """Seconds from spawning the server to its first tool result."""
    start = time.perf_counter()
    async with (
        stdio_client(params, errlog=sys.stderr) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        result = await client.call_tool(tool, arguments)
        assert not result.is_error, result.content
        return time.perf_counter() - start


def _starts(repo: Path, starts: int) -> tuple[list[float], list[float]]:
    ours: list[float] = []
    echo: list[float] = []
    for _ in range(starts):
        read = {"path": BIG, "limit": 1}
        ours.append(anyio.run(_start, _gitpatch_server(repo), "read_file", read))
        echo.append(anyio.run(_start, _echo_server(), "echo", {"text": "first"}))
    return ours, echo


def _child(args: list[str], cwd: Path) -> tuple[float, float, float]:
    """(wall seconds, peak RSS in MB, CPU seconds) of one child process, which must succeed.

    The peak comes from GNU time, a small process that starts the command: a child forked
    from this process would count this one's own peak (Linux keeps the larger of the two
    when it execs), which the benchmark's repositories and clients make large.
    """
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as out:
        start = time.perf_counter()
        done = subprocess.run(
            [TIME, "-f", "%M %U %S", "-o", out.name, *args],
            cwd=cwd,
            env=ENV,
            stdout=subprocess.DEVNULL,
            check=False,
        )
        elapsed = time.perf_counter() - start
        assert done.returncode == 0, args
        rss, user, system = out.read().split()[-3:]
        return elapsed, int(rss) / 1024, float(user) + float(system)


def _big_repo(root: Path, mb: int, name: str) -> tuple[Path, int]:
    repo = root / name
    repo.mkdir()
    git(repo, "init", "-q", "-b", "bench")
    line = "x = compute(value, other_value) + 12345  # a line of about sixty bytes\n"
    big = repo / "big.py"
    big.write_text("rev 0 " + line + line * (mb * 1024 * 1024 // len(line)))
    past = time.time() - 60  # an old file: git trusts its stat data
    os.utime(big, (past, past))
    git(repo, "add", "big.py")
    git(repo, "commit", "-q", "-m", "big")
    return repo, big.stat().st_size


def _big_file(root: Path, mb: int, runs: int) -> dict[str, float]:
    """Medians of the CLI edit and of git's add + commit, alternating, plus peak RSS."""
    repo, size = _big_repo(root, mb, "big_gitpatch")
    anchor, _ = _big_repo(root, mb, "big_git")
    names = ("ours", "ours_rss", "ours_cpu", "git", "git_rss", "git_cpu")
    figures: dict[str, list[float]] = {name: [] for name in names}
    for k in range(runs):
        edits = json.dumps([{"old_string": f"rev {k} ", "new_string": f"rev {k + 1} "}])
        wall, rss, cpu = _child(
            [GITPATCH, "-C", str(repo), "edit", "big.py", "--edits", edits], repo
        )
        figures["ours"].append(wall)
        figures["ours_rss"].append(rss)
        figures["ours_cpu"].append(cpu)
        start = time.perf_counter()
        with (anchor / "big.py").open("r+b") as fh:  # the same one-line change, in place
            fh.write(f"rev {k + 1} ".encode())
        add = _child(["git", *GIT_QUIET, "add", "big.py"], anchor)
        commit = _child(["git", *GIT_QUIET, "commit", "-q", "-m", f"edit {k}"], anchor)
        figures["git"].append(time.perf_counter() - start)
        figures["git_rss"].append(max(add[1], commit[1]))
        figures["git_cpu"].append(add[2] + commit[2])
    out = {name: statistics.median(values) for name, values in figures.items()}
    out["file_mb"] = size / 2**20
    return out


# -- A/B: the MCP layer's own cost of two trees in one run ----------------------------------------


def _source(rev: str, into: Path) -> Path:
    """The gitpatch package of ``rev`` (a revision of this repository) unpacked under ``into``,
    compiled into the children's bytecode cache."""
    into.mkdir(parents=True)
    tar = subprocess.run(
        ["git", "-C", str(HERE.parent), "archive", rev, "gitpatch"],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(into / "gitpatch")],
        env=ENV,
        check=True,
        capture_output=True,
    )
    return into


def _side_env(src: Path) -> dict[str, str]:
    """The children's environment with ``src``'s gitpatch first on the path (then bench/)."""
    return {**ENV, "PYTHONPATH": os.pathsep.join([str(src), str(HERE.parent)])}


def _server_of(src: Path, repo: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "gitpatch", "-C", str(repo), "serve", "--mode", "auto"],
        env=_side_env(src),
        cwd=str(repo.parent),  # not a folder holding another gitpatch package
    )


def edit_loop() -> None:
    """A child's loop: one in-process edit of the repository at ``argv[1]`` per line read
    (the edit's number), printing the ms it took (``Workspace.apply``, in this process)."""
    from gitpatch import Workspace

    ws = Workspace.open(Path(sys.argv[1]), mode="auto")
    edit = getattr(ws, "patch", ws.apply)  # a tree before the porcelain's one apply verb
    for line in sys.stdin:
        start = time.perf_counter()
        edit(**_edit(int(line)))
        print((time.perf_counter() - start) * 1000, flush=True)


class _InProcess:
    """A child process editing its clone in process, one edit when asked (``edit_loop``)."""

    def __init__(self, src: Path, repo: Path) -> None:
        code = "from bench.bench_calls import edit_loop; edit_loop()"
        self.child = subprocess.Popen(
            [sys.executable, "-c", code, str(repo)],
            env=_side_env(src),
            cwd=str(repo.parent),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def edit(self, k: int) -> float:
        assert self.child.stdin is not None and self.child.stdout is not None
        self.child.stdin.write(f"{k}\n")
        self.child.stdin.flush()
        return float(self.child.stdout.readline())

    def close(self) -> None:
        assert self.child.stdin is not None
        self.child.stdin.close()
        assert self.child.wait() == 0


async def _ab(
    sides: dict[str, tuple[Path, Path, Path]], runs: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], list[float]]:
    """Ms of each side's MCP edit, of its in-process edit and of the echo call, all
    alternating call by call (so the machine's load hits each alike)."""
    here = {name: _InProcess(src, twin) for name, (src, _repo, twin) in sides.items()}
    try:
        async with contextlib.AsyncExitStack() as stack:
            clients: dict[str, ClientSession] = {}
            servers = {name: _server_of(src, repo) for name, (src, repo, _twin) in sides.items()}
            for name, params in {**servers, "echo": _echo_server()}.items():
                read, write = await stack.enter_async_context(
                    stdio_client(params, errlog=sys.stderr)
                )
                clients[name] = await stack.enter_async_context(ClientSession(read, write))
                await clients[name].initialize()
            mcp: dict[str, list[float]] = {name: [] for name in clients}
            inproc: dict[str, list[float]] = {name: [] for name in sides}
            for k in range(runs + 3):
                for name, client in clients.items():
                    args = {"text": f"call {k}"} if name == "echo" else _edit(k)
                    took = await _timed(client, "echo" if name == "echo" else "patch", args)
                    if k >= 3:
                        mcp[name].append(took)
                for name, child in here.items():
                    took = child.edit(k)
                    if k >= 3:
                        inproc[name].append(took)
            echo = mcp.pop("echo")
    finally:
        for child in here.values():
            child.close()
    return mcp, inproc, echo


def _layer_ab(root: Path, repo: Path, sources: dict[str, Path], runs: int) -> None:
    """The MCP layer's own cost of each source tree, in one run: each side's MCP edit minus
    its in-process edit (a child process on a clone of its own), against the echo call; the
    sides' servers, their in-process children and the echo server alternate call by call."""
    sides: dict[str, tuple[Path, Path, Path]] = {}
    for name, src in sources.items():
        clones = []
        for use in ("mcp", "inproc"):
            clone = root / f"{name.split()[0]}-{use}"
            git(root, "clone", "-q", str(repo), str(clone))
            clones.append(clone)
        sides[name] = (src, clones[0], clones[1])
    time.sleep(1.1)  # then a refresh: no index entry is racily clean (as old as its file)
    for _src, *clones in sides.values():
        for clone in clones:
            git(clone, "status", "--porcelain")
    mcp, inproc, echo = anyio.run(_ab, sides, runs)
    anchor = statistics.median(echo)
    layers: dict[str, float] = {}
    for name in sources:
        ours, here = statistics.median(mcp[name]), statistics.median(inproc[name])
        layers[name] = ours - here
        print(
            f"{name:<34} MCP {ours:8.2f} ms - in process {here:8.2f} ms = layer "
            f"{layers[name]:7.2f} ms vs echo {anchor:6.2f} ms  x{layers[name] / anchor:5.2f}  "
            f"(target <= {TARGETS['layer']})"
        )
    first, second = layers.values()
    print(f"{'layer, second - first':<34} {second - first:+.2f} ms")
    # each call's layer beside the same round's in-process edit: paired in time, so a load
    # that comes and goes moves both terms of a difference alike
    paired = {
        name: [m - i for m, i in zip(mcp[name], inproc[name], strict=True)] for name in sources
    }
    one, two = (statistics.median(v) for v in paired.values())
    print(
        f"{'paired (median of MCP_k - here_k)':<34} {one:7.2f} ms, {two:7.2f} ms  "
        f"x{one / anchor:5.2f}, x{two / anchor:5.2f} echo"
    )


def _row(name: str, ours: float, anchor: float, unit: str, target: float, what: str) -> bool:
    ratio = ours / anchor
    verdict = "met" if ratio <= target else "MISSED"
    print(
        f"{name:<34} {ours:9.2f} {unit} vs {what} {anchor:8.2f} {unit}  "
        f"x{ratio:5.2f}  (target <= {target})  {verdict}"
    )
    return ratio <= target


def main() -> int:
    """Build the repositories, print each row with its ratio and verdict."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--starts", type=int, default=7)
    parser.add_argument("--mb", type=int, default=52)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--against", metavar="REV", default=None)
    opts = parser.parse_args()
    held = True
    with tempfile.TemporaryDirectory(prefix="gitpatch-bench-calls-", dir=opts.dir) as tmp:
        ENV.update(bytecode_env(Path(tmp)))
        repo, _made = make_repo(Path(tmp), opts.files)
        (repo / "big").mkdir()
        (repo / BIG).write_text("".join(f"value_{n} = {n}  # rev 0\n" for n in range(BIG_LINES)))
        git(repo, "add", BIG)
        git(repo, "commit", "-q", "-m", "a 2,000-line file")
        print(f"{opts.files:,}-file repository, one-line edits of a {BIG_LINES:,}-line file")
        if opts.against:
            before = _source(opts.against, Path(tmp) / "before")
            sources = {f"before ({opts.against})": before, "after (this tree)": HERE.parent}
            _layer_ab(Path(tmp), repo, sources, opts.runs)
            load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
            print(f"load average after the run: {load} on {os.cpu_count()} cpus")
            return 0
        inproc = _in_process(repo, opts.runs)
        ours, echo = anyio.run(_edits, repo, opts.runs)
        held &= _row("MCP patch, auto mode", ours, echo, "ms", TARGETS["edit"], "echo")
        print(f"{'  the same edit in process':<34} {inproc:9.2f} ms")
        layer = ours - inproc
        if layer > 0:
            held &= _row(
                "MCP layer (MCP - in process)", layer, echo, "ms", TARGETS["layer"], "echo"
            )
        else:  # the clone's edits cost more than the server's: no figure to judge
            print(f"{'MCP layer (MCP - in process)':<34} {layer:9.2f} ms  (no verdict: negative)")
            held = False
        mine, theirs = _starts(repo, opts.starts)
        ratios = [a / b for a, b in zip(mine, theirs, strict=True)]
        held &= _row(
            "MCP start to first result",
            statistics.median(mine),
            statistics.median(theirs),
            "s ",
            TARGETS["start"],
            "echo",
        )
        print(f"{'':34} start ratios: min x{min(ratios):.2f}, max x{max(ratios):.2f}")
        if opts.mb:
            big = _big_file(Path(tmp), opts.mb, max(3, opts.runs // 10))
            held &= _row(
                f"edit of a {big['file_mb']:.0f} MB file (CLI)",
                big["ours"],
                big["git"],
                "s ",
                TARGETS["big_time"],
                "git",
            )
            print(
                f"{'  CPU time':<34} {big['ours_cpu']:9.2f} s  vs git {big['git_cpu']:8.2f} s   "
                f"x{big['ours_cpu'] / big['git_cpu']:5.2f}"
            )
            rss, git_rss = big["ours_rss"] / big["file_mb"], big["git_rss"] / big["file_mb"]
            verdict = "met" if rss <= TARGETS["big_rss"] else "MISSED"
            print(
                f"{'  peak RSS / file size':<34} x{rss:.2f} (git x{git_rss:.2f})  "
                f"(target <= {TARGETS['big_rss']})  {verdict}"
            )
            held &= rss <= TARGETS["big_rss"]
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"load average after the run: {load} on {os.cpu_count()} cpus")
    return 0  # a missed target is a printed verdict, not a failed run


if __name__ == "__main__":
    sys.exit(main())
