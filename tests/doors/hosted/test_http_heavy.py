"""Heavy calls' work runs in the service's worker processes, not in the server's, and an MCP
``notifications/cancelled`` stops a call (its slot freed, its worker killed) while its
connection stays open. Through the real server and the SDK client over HTTP.

What is asserted does not depend on how fast a loaded machine is: CPU time, counted by the
kernel per process, says where a heavy call's work ran (the server's own CPU over the heavy
phase stays near what the other tenant's edits cost there alone, while the workers use the
heavy call's budget), and the order of answers says the other tenant's edits were answered
while the heavy call was still running. The latencies are printed, absolute and relative to
the same tenant's edits alone in the same run (``bench/bench_service.py`` prints them too).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from gitpatch.doors.hosted.credentials import hash_token
from tests.doors.hosted.svckit import (
    Server,
    busy_worker,
    call,
    cpu_of,
    descendants,
    make_credentials,
    session,
    space_refs,
    text_of,
)
from tests.doors.hosted.test_http_budget import A_LINES, FLIP

pytestmark = pytest.mark.slow

#: The heavy call's CPU budget in the first test: on today's main all of it is the server's.
HEAVY_CPU = 3.0
#: The other tenant's edits, alone and then during the heavy call.
EDITS = 30
#: The share of a core a server spends waiting on a busy worker (a look every 20 ms): about
#: 0.006 measured on a loaded 2-core machine, where the niced worker took 128 s for its 3 s
#: of CPU. The server's margin grows with the wait by this much; the heavy work itself in
#: the server would still exceed the bound unless the server got under 1.5% of a core.
WAITING_CPU_SHARE = 0.015


def _workers_cpu(server: int, seen: dict[int, float]) -> float:
    """CPU seconds of every process below the server, counting those gone since (``seen``
    keeps each one's last figure)."""
    for pid in descendants(server):
        seen[pid] = max(seen.get(pid, 0.0), cpu_of(pid))
    return sum(seen.values())


def _start(tmp_path: Path, budget: str, calls: str = "") -> tuple[Server, dict[str, str]]:
    path = tmp_path / "credentials.toml"
    tokens = make_credentials(path)
    path.write_text(path.read_text().replace('user = "ada"\n', f'user = "ada"\n{budget}\n', 1))
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    ada = hash_token(tokens["ada"])[:12]
    (data / "spaces.toml").write_text(
        "[defaults]\nmax_file_bytes = 4194304\n\n[calls]\nmax_sessions = 50\n"
        f'\n[calls."{ada}"]\n{calls}\n'
    )
    return Server(data, path), tokens


@pytest.fixture
def heavy_service(tmp_path: Path) -> Iterator[tuple[Server, dict[str, str]]]:
    server, tokens = _start(tmp_path, f"cpu_seconds = {HEAVY_CPU}\nwall_seconds = 600")
    try:
        yield server, tokens
    finally:
        server.stop()


async def _edits(client: ClientSession, count: int, tag: str) -> list[tuple[float, float]]:
    """``count`` one-line edits; each one's (answered at, seconds it took)."""
    out = []
    for n in range(count):
        args = {"path": "notes.txt", "edits": [{"after_line": 0, "new_string": f"{tag}{n}\n"}]}
        start = time.perf_counter()
        result = await client.call_tool("patch_resource", args)
        assert not result.is_error, text_of(result)
        out.append((time.monotonic(), time.perf_counter() - start))
    return out


def _p99(took: list[float]) -> float:
    return statistics.quantiles(took, n=100)[98]


def test_a_heavy_calls_work_runs_in_a_worker_while_another_tenant_edits(
    heavy_service: tuple[Server, dict[str, str]],
) -> None:
    server, tokens = heavy_service
    pid = server.proc.pid
    seen: dict[int, float] = {}
    figures: dict[str, Any] = {}

    async def main() -> None:
        async with session(server.url, tokens["ada"]) as a, session(server.url, tokens["bob"]) as b:
            await a.call_tool("create_resource", {"path": "a.txt", "content": A_LINES})
            await b.call_tool("create_resource", {"path": "notes.txt", "content": "end\n"})
            await _edits(b, 5, "warm")  # caches, the space's queue, the SDK's paths
            before = cpu_of(pid)
            figures["alone"] = await _edits(b, EDITS, "alone")
            figures["alone_cpu"] = cpu_of(pid) - before
            refs = space_refs(server.data)["users/ada.git"]

            answered: list[float] = []

            async def heavy() -> None:
                result = await a.call_tool("patch_resource", {"path": "a.txt", "edits": FLIP * 500})
                answered.append(time.monotonic())
                figures["heavy"] = result

            async def sample() -> None:  # a worker killed meanwhile counts as last seen
                while not answered:
                    _workers_cpu(pid, seen)
                    await anyio.sleep(0.05)

            server_before, workers_before = cpu_of(pid), _workers_cpu(pid, seen)
            started = time.monotonic()
            async with anyio.create_task_group() as group:
                group.start_soon(heavy)
                group.start_soon(sample)
                figures["during"] = await _edits(b, EDITS, "during")
            figures["heavy_took"] = answered[0] - started
            figures["server_cpu"] = cpu_of(pid) - server_before
            figures["window"] = time.monotonic() - started
            figures["workers_cpu"] = _workers_cpu(pid, seen) - workers_before
            figures["answered"] = answered[0]
            assert space_refs(server.data)["users/ada.git"] == refs

    anyio.run(_bounded, main, 600)  # a niced worker on a loaded machine
    heavy = figures["heavy"]
    alone = [took for _, took in figures["alone"]]
    during = [took for _, took in figures["during"]]
    overlapped = sum(1 for at, _ in figures["during"] if at < figures["answered"])
    print(
        f"heavy call: {text_of(heavy).splitlines()[0][:90]} after {figures['heavy_took']:.2f} s; "
        f"server CPU {figures['server_cpu']:.2f} s, workers {figures['workers_cpu']:.2f} s; "
        f"the other tenant's {EDITS} edits alone: server CPU {figures['alone_cpu']:.2f} s, "
        f"p50 {statistics.median(alone):.3f} s, p99 {_p99(alone):.3f} s; during: "
        f"p50 {statistics.median(during):.3f} s, p99 {_p99(during):.3f} s, "
        f"{overlapped} answered while the heavy call ran"
    )
    assert heavy.is_error and heavy.meta["code"] == "budget_exceeded", text_of(heavy)
    assert f"CPU budget of {HEAVY_CPU:g} s" in text_of(heavy)
    # the heavy call's CPU was its worker's: the server used what the edits cost there, plus
    # a margin for parsing the heavy request, plus what waiting on its worker costs while it
    # waits (a look at the budget every ``workers._POLL``), far below its budget
    assert figures["workers_cpu"] > HEAVY_CPU / 2, figures
    waiting = WAITING_CPU_SHARE * figures["window"]
    assert figures["server_cpu"] < 2 * figures["alone_cpu"] + 1.0 + waiting, figures
    # the other tenant's edits did not queue behind it: answered while it still ran
    assert overlapped >= 1, figures


def test_notifications_cancelled_stops_the_call_frees_its_slot_and_kills_its_worker(
    tmp_path: Path,
) -> None:
    # one call at a time and a budget of minutes: only the cancellation can end it soon
    server, tokens = _start(
        tmp_path, "cpu_seconds = 120\nwall_seconds = 600", "max_concurrent_calls = 1"
    )
    pid = server.proc.pid
    figures: dict[str, Any] = {}
    try:
        call(server.url, tokens["ada"], "create_resource", path="a.txt", content=A_LINES)
        before = space_refs(server.data)

        async def main() -> None:
            async with (
                session(server.url, tokens["ada"]) as c,
                session(server.url, tokens["ada"]) as other,
            ):
                answered: list[Any] = []

                async def heavy() -> None:
                    args = {"path": "a.txt", "edits": FLIP * 500}
                    try:
                        answered.append(await c.call_tool("patch_resource", args))
                    except MCPError as exc:  # the HTTP reply to a cancelled request
                        answered.append(exc.message)

                async with anyio.create_task_group() as group:
                    request_id = c._dispatcher._next_id + 1  # type: ignore[attr-defined]
                    group.start_soon(heavy)
                    busy = await busy_worker(pid)  # the call runs, in a worker
                    held = await other.call_tool("list_resources", {})
                    figures["held"] = text_of(held)
                    await c.send_notification(
                        _cancelled(request_id, "the user pressed stop")  # connection kept
                    )
                    cancelled = time.monotonic()
                    outcome = ""
                    while time.monotonic() - cancelled < 30:  # milliseconds, when it works
                        outcome = text_of(await other.call_tool("list_resources", {}))
                        if not outcome.startswith("call_limit_reached"):
                            break
                        await anyio.sleep(0.1)
                    figures["freed_after"] = time.monotonic() - cancelled
                    figures["freed"] = outcome
                    while Path(f"/proc/{busy}").exists() and time.monotonic() - cancelled < 30:
                        await anyio.sleep(0.1)
                    figures["worker_alive"] = _alive(busy)
                    figures["answered"] = list(answered)
                    group.cancel_scope.cancel()  # the client stops waiting for the answer

        anyio.run(_bounded, main, 120)
        print(f"slot freed {figures['freed_after']:.2f} s after notifications/cancelled")
        assert figures["held"].startswith("call_limit_reached"), figures
        assert "a.txt" in figures["freed"], figures
        assert not figures["worker_alive"], figures
        assert figures["answered"] in ([], ["Request cancelled"]), figures
        assert space_refs(server.data) == before
        # the pool forks a new worker for the next heavy call
        result = call(server.url, tokens["ada"], "patch_resource", path="a.txt", edits=FLIP[:1] * 1)
        assert not result.is_error, text_of(result)
    finally:
        server.stop()


async def _bounded(work: Any, seconds: float) -> None:
    with anyio.fail_after(seconds):
        await work()


def _cancelled(request_id: int, reason: str) -> Any:
    from mcp import types

    params = types.CancelledNotificationParams(request_id=request_id, reason=reason)
    return types.CancelledNotification(params=params)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"
