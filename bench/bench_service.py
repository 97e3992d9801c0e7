"""The HTTP service under load: 16 concurrent SDK clients x 100 patch_resource calls on 8
resources of one space, half of them passing expected_version (so they read first).

Prints throughput, p50/p99 latency per call (the read included for the versioned half),
conflicts, whether the final content equals the replay of the successes (no lost update), and
the server process's resident memory idle, after the load, and with 200 spaces open.
Loopback only; the server is started and stopped here. ``python -m bench.bench_service``.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

from tests.doors.hosted.loadkit import load, replay, resource_name, setup
from tests.doors.hosted.svckit import Server, make_credentials, session
from tests.gitkit import git

CLIENTS = int(sys.argv[1]) if len(sys.argv) > 1 else 16
CALLS = int(sys.argv[2]) if len(sys.argv) > 2 else 100
RESOURCES = 8
SPACES = 200


def rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` in MiB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def touch_spaces(url: str, root: Path, count: int) -> None:
    """Open ``count`` more spaces in the server (one credential and one write each)."""
    from gitpatch.doors.hosted import add_credential

    for n in range(count):
        token, _ = add_credential(root / "credentials.toml", user=f"u{n}", organization=None)
        async with session(url, token) as c:
            await c.call_tool("create_resource", {"path": "a.txt", "content": "x\n"})


def main() -> None:
    """Run the load and print the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tokens = make_credentials(root / "credentials.toml")
        server = Server(root / "data", root / "credentials.toml")
        try:
            idle = rss_mib(server.proc.pid)
            anyio.run(setup, server.url, tokens["ada"], RESOURCES)
            start = time.perf_counter()
            outcomes = anyio.run(load, server.url, tokens["ada"], CLIENTS, CALLS, RESOURCES)
            took = time.perf_counter() - start
            loaded = rss_mib(server.proc.pid)
            anyio.run(touch_spaces, server.url, root, SPACES)
            spaces = rss_mib(server.proc.pid)
        finally:
            server.stop()
        repo = root / "data" / "users" / "ada.git"
        lost = [
            resource_name(n)
            for n in range(RESOURCES)
            if git(repo, "show", f"main:{resource_name(n)}") != replay(outcomes, resource_name(n))
        ]
    times = sorted(o.seconds * 1000 for o in outcomes)
    ok = sum(o.ok for o in outcomes)
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    print(f"{CLIENTS} clients x {CALLS} patch_resource calls on {RESOURCES} resources, one space")
    print(f"  calls {len(outcomes)}, succeeded {ok}, resource_conflict {len(outcomes) - ok}")
    print(f"  throughput {len(outcomes) / took:.0f} calls/s over {took:.1f} s")
    print(f"  latency p50 {statistics.median(times):.1f} ms, p99 {p99:.1f} ms")
    print(f"  lost updates: {len(lost)} (final content == replay of the successes)")
    print(f"  server RSS: idle {idle:.0f} MiB, after load {loaded:.0f} MiB, ")
    print(f"    with {SPACES} more spaces open {spaces:.0f} MiB")
    print(f"    (~{(spaces - loaded) * 1024 / SPACES:.0f} KiB per open space)")


if __name__ == "__main__":
    main()
