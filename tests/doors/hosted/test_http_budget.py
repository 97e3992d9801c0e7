"""A budget per call, through the real server and the SDK client: the heavy calls of issue 29
answer ``budget_exceeded`` within their budget and change nothing while another tenant's edits
stay quick; a client that goes away frees its slot; SIGTERM during a heavy call drains.

Sizes, scaled down from the issue where the same behaviour shows: the 150,000-line file of the
big miss is 40,000 lines here (still seconds of fuzzy matching without a budget), and the
42 MB grep space is 8 files of 1 MB (about ten seconds of scanning without one).
"""

from __future__ import annotations

import os
import signal
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession

from gitpatch.doors.hosted.calls import DEFAULT_CPU_SECONDS, DEFAULT_WALL_SECONDS
from gitpatch.doors.hosted.credentials import hash_token
from tests.doors.hosted.svckit import (
    Server,
    busy_worker,
    call,
    make_credentials,
    session,
    space_refs,
    text_of,
    unwrap,
)
from tests.gitkit import git

pytestmark = pytest.mark.slow

#: How far past its wall budget a refused call may be answered on a busy machine (the
#: answer is due at the next checkpoint; the rest is HTTP, the event loop and other tests).
SLACK = 6.0
#: The heavy tenant's budget in the shared service: far below what each heavy call needs on
#: any machine (the defaults, 2 s of CPU, let a fast machine finish the 8 MB grep or the
#: 40,000-line miss in time, and the call then answers, rightly, without the code).
ADA_CPU_SECONDS = 0.5
ADA_WALL_SECONDS = 3.0
#: The bound another tenant's p99 is asserted against (the target is 0.5 s; this machine
#: runs other tests meanwhile).
P99_BOUND = 3.0

A_LINES = ("a" * 60 + "\n") * 15000  # 900 KB of "a"
SIMILAR = "".join(f"    total = total + value_{i % 97} * factor  # step\n" for i in range(40000))
MISSING = "".join(f"    total = total + value_{i % 97} * factr  # step\n" for i in range(301))
FLIP = [
    {"old_string": "a", "new_string": "b", "replace_all": True},
    {"old_string": "b", "new_string": "a", "replace_all": True},
]


def _credentials(root: Path, budgets: dict[str, str]) -> dict[str, str]:
    """The test credentials, with budget lines added to the named users' blocks."""
    path = root / "credentials.toml"
    tokens = make_credentials(path)
    text = path.read_text()
    for user, lines in budgets.items():
        text = text.replace(f'user = "{user}"\n', f'user = "{user}"\n{lines}\n', 1)
    path.write_text(text)
    return tokens


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    root = tmp_path_factory.mktemp("budget")
    tokens = _credentials(
        root, {"ada": f"cpu_seconds = {ADA_CPU_SECONDS}\nwall_seconds = {ADA_WALL_SECONDS}"}
    )
    (root / "data").mkdir(mode=0o700)
    (root / "data" / "spaces.toml").write_text(
        "[defaults]\nmax_file_bytes = 4194304\n\n"
        "[calls]\nmax_sessions = 50\nmax_concurrent_calls = 16\n"
    )
    server = Server(root / "data", root / "credentials.toml")
    try:
        yield server, tokens
    finally:
        server.stop()


async def _create(client: ClientSession, path: str, content: str) -> None:
    result = await client.call_tool("create_resource", {"path": path, "content": content})
    assert not result.is_error, text_of(result)


async def _timed(client: ClientSession, tool: str, args: dict[str, Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = await client.call_tool(tool, args)
    return result, time.perf_counter() - start


def _code(result: Any) -> str:
    return "" if not result.is_error else text_of(result).split(":")[0]


def test_heavy_calls_answer_budget_exceeded_while_another_tenant_edits(
    service: tuple[Server, dict[str, str]],
) -> None:
    server, tokens = service
    heavy: dict[str, list[tuple[str, float]]] = {}
    light: list[float] = []

    async def prepare() -> None:
        async with session(server.url, tokens["ada"]) as c:
            await _create(c, "big/a.txt", A_LINES)
            await _create(c, "big/similar.txt", SIMILAR)
            await _create(c, "regex/a.txt", ("a" * 50000 + "\n") * 10)
            for n in range(8):
                await _create(c, f"space/f{n}.txt", "".join(f"w{i} x y z\n" for i in range(120000)))
        async with session(server.url, tokens["bob"]) as c:
            await _create(c, "notes.txt", "end\n")

    heavy_calls: dict[str, tuple[str, dict[str, Any]]] = {
        "1,000 replace_all of 'a' on 900 KB": (
            "patch_resource",
            {"path": "big/a.txt", "edits": FLIP * 500},
        ),
        "301-line old_string missing from 40,000 lines": (
            "patch_resource",
            {"path": "big/similar.txt", "edits": [{"old_string": MISSING, "new_string": "x"}]},
        ),
        "(a?){400}a{400}c over 50,000-a lines": (
            "grep_resource",
            {"pattern": "(a?){400}a{400}c", "path": "regex"},
        ),
        "grep over an 8 MB space": ("grep_resource", {"pattern": "w[0-9]+ q", "path": "space"}),
    }

    async def one_heavy(name: str, tool: str, args: dict[str, Any]) -> None:
        async with session(server.url, tokens["ada"]) as c:
            result, took = await _timed(c, tool, args)
            heavy.setdefault(name, []).append((_code(result), took))

    async def eight_at_once() -> None:
        async with session(server.url, tokens["ada"]) as c, anyio.create_task_group() as group:

            async def flip() -> None:
                result, took = await _timed(
                    c, "patch_resource", {"path": "big/a.txt", "edits": FLIP * 5}
                )
                heavy.setdefault("8 calls of 10 replace_all", []).append((_code(result), took))

            for _ in range(8):
                group.start_soon(flip)

    async def light_edits(ready: anyio.Event, done: anyio.Event) -> None:
        async with session(server.url, tokens["bob"]) as c:
            await c.call_tool("read_resource", {"path": "notes.txt"})  # its space opened
            ready.set()
            n = 0
            while not done.is_set() or n < 20:
                args = {"path": "notes.txt", "edits": [{"after_line": 0, "new_string": f"{n}\n"}]}
                result, took = await _timed(c, "patch_resource", args)
                assert not result.is_error, text_of(result)
                light.append(took)
                n += 1

    async def main() -> None:
        await prepare()
        before = space_refs(server.data)["users/ada.git"]
        with anyio.fail_after(120):
            ready, done = anyio.Event(), anyio.Event()
            async with anyio.create_task_group() as outer:
                outer.start_soon(light_edits, ready, done)
                await ready.wait()
                async with anyio.create_task_group() as group:
                    for name, (tool, args) in heavy_calls.items():
                        group.start_soon(one_heavy, name, tool, args)
                    group.start_soon(eight_at_once)
                done.set()
        assert space_refs(server.data)["users/ada.git"] == before  # nothing changed

    try:
        anyio.run(main)
    except BaseExceptionGroup as group:
        raise unwrap(group) from None
    for name, outcomes in sorted(heavy.items()):
        print(f"{name}: {[(code, round(took, 2)) for code, took in outcomes]}")
    p99 = statistics.quantiles(light, n=100)[98]
    print(
        f"the other tenant: {len(light)} edits, p50 {statistics.median(light):.3f} s, "
        f"p99 {p99:.3f} s, max {max(light):.3f} s"
    )
    assert set(heavy) == {*heavy_calls, "8 calls of 10 replace_all"}
    for name, outcomes in heavy.items():
        for code, took in outcomes:
            assert code == "budget_exceeded", name
            assert took < ADA_WALL_SECONDS + SLACK, (name, took)
    assert len(heavy["8 calls of 10 replace_all"]) == 8
    assert p99 < P99_BOUND, light


def test_budget_exceeded_says_what_to_do_and_the_space_is_unchanged(
    service: tuple[Server, dict[str, str]],
) -> None:
    server, tokens = service
    call(server.url, tokens["bob"], "create_resource", path="a.txt", content=A_LINES)
    before = space_refs(server.data)
    result = call(server.url, tokens["bob"], "patch_resource", path="a.txt", edits=FLIP * 500)
    text = text_of(result)
    assert result.is_error and result.meta["code"] == "budget_exceeded", text
    assert f"{DEFAULT_CPU_SECONDS:g} s" in text or f"{DEFAULT_WALL_SECONDS:g} s" in text
    assert "narrower edit" in text and "Nothing was changed" in text
    assert space_refs(server.data) == before
    read = call(server.url, tokens["bob"], "read_resource", path="a.txt")
    assert read.structured_content["content"] == A_LINES


def test_a_client_that_goes_away_frees_its_slot(tmp_path: Path) -> None:
    # one call at a time and a budget of a minute: only the client's leaving can end it soon
    tokens = _credentials(tmp_path, {"ada": "cpu_seconds = 60\nwall_seconds = 60"})
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    ada = hash_token(tokens["ada"])[:12]
    (data / "spaces.toml").write_text(
        f'[defaults]\nmax_file_bytes = 4194304\n\n[calls."{ada}"]\nmax_concurrent_calls = 1\n'
    )
    server = Server(data, tmp_path / "credentials.toml")
    try:
        call(server.url, tokens["ada"], "create_resource", path="a.txt", content=A_LINES)
        before = space_refs(data)

        answered: list[Any] = []

        async def give_up() -> None:
            async with session(server.url, tokens["ada"]) as c:
                with anyio.move_on_after(2):
                    args = {"path": "a.txt", "edits": FLIP * 500}
                    answered.append(await c.call_tool("patch_resource", args))

        anyio.run(_quiet, give_up)  # the abandoned request may fail the client's teardown
        assert answered == [], "the heavy call ended before its client gave up"
        gave_up = time.monotonic()
        outcome = ""
        while time.monotonic() - gave_up < 10:  # freed at the next checkpoint: milliseconds
            outcome = text_of(call(server.url, tokens["ada"], "list_resources"))
            if not outcome.startswith("call_limit_reached"):
                break
            time.sleep(0.2)
        freed = time.monotonic() - gave_up
        print(f"slot freed {freed:.2f} s after the client went away")
        assert "a.txt" in outcome, outcome
        assert space_refs(data) == before
    finally:
        server.stop()


def test_sigterm_during_heavy_calls_exits_soon_with_every_acknowledged_edit(
    tmp_path: Path,
) -> None:
    tokens = _credentials(tmp_path, {"ada": "cpu_seconds = 600\nwall_seconds = 600"})
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    (data / "spaces.toml").write_text("[calls]\nmax_sessions = 50\n")
    server = Server(data, tmp_path / "credentials.toml")
    acknowledged: list[str] = []
    stopped: list[float] = []
    exited: list[float] = []
    watcher = threading.Thread(
        target=lambda: (server.proc.wait(), exited.append(time.monotonic())), daemon=True
    )
    watcher.start()

    async def heavy() -> None:
        async with session(server.url, tokens["ada"]) as c:
            await c.call_tool("patch_resource", {"path": "a.txt", "edits": FLIP * 500})

    async def edits() -> None:
        async with session(server.url, tokens["bob"]) as c:
            for n in range(1000):
                line = f"edit {n}"
                args = {
                    "path": "notes.txt",
                    "edits": [{"after_line": 0, "new_string": line + "\n"}],
                }
                result = await c.call_tool("patch_resource", args)
                if not result.is_error:
                    acknowledged.append(line)
                if n == 5:
                    os.kill(server.proc.pid, signal.SIGTERM)
                    stopped.append(time.monotonic())

    async def main() -> None:
        async with session(server.url, tokens["ada"]) as c:
            await _create(c, "a.txt", A_LINES)
        async with session(server.url, tokens["bob"]) as c:
            await _create(c, "notes.txt", "end\n")
        with anyio.move_on_after(600):  # a bound for a broken run: the server exits first
            async with anyio.create_task_group() as group:
                for _ in range(2):
                    group.start_soon(_quiet, heavy)
                await busy_worker(server.proc.pid)  # a heavy call runs (in a worker)
                group.start_soon(_quiet, edits)

    try:
        anyio.run(main)
        watcher.join(timeout=60)
    finally:
        server.stop()
    took = exited[0] - stopped[0]
    print(f"SIGTERM to exit: {took:.2f} s; {len(acknowledged)} edits acknowledged")
    assert took < 10, took
    assert len(acknowledged) >= 6
    repo = data / "users" / "bob.git"
    content = git(repo, "show", "main:notes.txt")
    assert all(line in content.splitlines() for line in acknowledged)
    git(repo, "fsck", "--strict", "--no-progress")
    assert not list(repo.glob("**/*.lock"))


async def _quiet(work: Any) -> None:
    """Run ``work``; the server going away under it is what the test does."""
    try:
        await work()
    except Exception:  # noqa: BLE001 - the connection dies with the server
        pass
    except BaseExceptionGroup:
        pass
