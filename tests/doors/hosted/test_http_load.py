"""Concurrent clients over HTTP lose no update; a SIGKILLed server loses no acknowledged change.

Loopback only, bounded counts; servers are stopped by the tests. No timing assertions.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession

from tests.doors.hosted.loadkit import Outcome, load, replay, resource_name, setup
from tests.doors.hosted.svckit import Server, call, make_credentials, run, text_of
from tests.gitkit import git, wait_until

#: load and a SIGKILLed server: `make test-fast` leaves these out (`-m "not slow"`).
pytestmark = pytest.mark.slow

CLIENTS, CALLS, RESOURCES = 8, 20, 8


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    tokens = make_credentials(tmp_path / "credentials.toml")
    return tmp_path / "data", tmp_path / "credentials.toml", tokens


def _check_replay(repo: Path, outcomes: list[Outcome], resources: int) -> None:
    versions = [o.version for o in outcomes if o.ok]
    assert len(versions) == len(set(versions)), "two successes reported the same version"
    for n in range(resources):
        path = resource_name(n)
        assert git(repo, "show", f"main:{path}") == replay(outcomes, path), path


def test_concurrent_clients_lose_no_update(place: tuple[Path, Path, dict[str, str]]) -> None:
    data, creds, tokens = place
    server = Server(data, creds)
    try:
        anyio.run(setup, server.url, tokens["ada"], RESOURCES)
        outcomes = anyio.run(load, server.url, tokens["ada"], CLIENTS, CALLS, RESOURCES)
    finally:
        server.stop()
    assert len(outcomes) == CLIENTS * CALLS
    codes = Counter(o.code for o in outcomes if not o.ok)
    assert set(codes) <= {"resource_conflict"}, codes
    assert all(o.ok for o in outcomes if o.client % 2 == 1)  # no version: nothing to conflict
    repo = data / "users" / "ada.git"
    _check_replay(repo, outcomes, RESOURCES)
    generations = int(git(repo, "rev-list", "--first-parent", "--count", "main"))
    assert generations == RESOURCES + sum(o.ok for o in outcomes)


def test_two_server_processes_over_one_data_dir_lose_no_update(
    place: tuple[Path, Path, dict[str, str]],
) -> None:
    data, creds, tokens = place
    servers: list[Server] = []
    try:
        servers += [Server(data, creds), Server(data, creds)]  # each stopped, whatever fails
        anyio.run(setup, servers[0].url, tokens["ada"], RESOURCES)
        urls = [s.url for s in servers]
        outcomes = anyio.run(load, urls, tokens["ada"], CLIENTS, CALLS // 2, RESOURCES)
    finally:
        for server in servers:
            server.stop()
    assert len(outcomes) == CLIENTS * (CALLS // 2)
    codes = Counter(o.code for o in outcomes if not o.ok)
    assert set(codes) <= {"resource_conflict"}, codes
    # the writes of a space queue across the workers too: a call without a version is never
    # thrown away because the other worker wrote meanwhile
    assert all(o.ok for o in outcomes if o.client % 2 == 1)
    repo = data / "users" / "ada.git"
    _check_replay(repo, outcomes, RESOURCES)
    generations = int(git(repo, "rev-list", "--first-parent", "--count", "main"))
    assert generations == RESOURCES + sum(o.ok for o in outcomes)
    assert git(repo, "fsck", "--strict", "--no-dangling", "--no-progress") == ""


def test_sigkill_during_load_keeps_every_acknowledged_change(
    place: tuple[Path, Path, dict[str, str]],
) -> None:
    data, creds, tokens = place
    server = Server(data, creds)
    try:
        anyio.run(setup, server.url, tokens["ada"], RESOURCES)

        async def run_and_kill() -> list[Outcome]:
            outcomes: list[Outcome] = []
            enough = anyio.Event()

            def after(out: list[Outcome]) -> None:
                if sum(o.ok for o in out) >= 25:
                    enough.set()

            async def kill_when_enough() -> None:
                await enough.wait()
                await anyio.to_thread.run_sync(server.kill)

            async with anyio.create_task_group() as tg:
                tg.start_soon(kill_when_enough)
                await load(server.url, tokens["ada"], CLIENTS, CALLS, RESOURCES, outcomes, after)
                enough.set()  # the load may finish first on a fast machine
            return outcomes

        outcomes = anyio.run(run_and_kill)
    finally:
        server.stop()
    acked = [o for o in outcomes if o.ok]
    assert 25 <= len(acked) < CLIENTS * CALLS  # killed in the middle of the load
    repo = data / "users" / "ada.git"
    assert git(repo, "fsck", "--strict", "--no-dangling", "--no-progress") == ""
    restarted = Server(data, creds)
    try:
        for o in acked:
            assert o.line in git(repo, "show", f"main:{o.resource}")
        again = call(
            restarted.url,
            tokens["ada"],
            "patch_resource",
            path=resource_name(0),
            edits=[{"after_line": 0, "new_string": "after restart\n"}],
        )
        assert not again.is_error
    finally:
        restarted.stop()
    assert git(repo, "fsck", "--strict", "--no-dangling", "--no-progress") == ""


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_two_workers_share_the_load_lose_no_update_and_die_with_their_parent(
    place: tuple[Path, Path, dict[str, str]],
) -> None:
    data, creds, tokens = place
    server = Server(data, creds, "--workers", "2")
    try:
        workers = _children(server.proc.pid)
        assert len(workers) == 2
        anyio.run(setup, server.url, tokens["ada"], RESOURCES)
        outcomes = anyio.run(load, server.url, tokens["ada"], CLIENTS, CALLS // 2, RESOURCES)
    finally:
        server.kill()
    assert len(outcomes) == CLIENTS * (CALLS // 2)
    codes = Counter(o.code for o in outcomes if not o.ok)
    assert set(codes) <= {"resource_conflict"}, codes
    # the writes of a space queue across the workers too: a call without a version is never
    # thrown away because the other worker wrote meanwhile
    assert all(o.ok for o in outcomes if o.client % 2 == 1)
    repo = data / "users" / "ada.git"
    _check_replay(repo, outcomes, RESOURCES)
    generations = int(git(repo, "rev-list", "--first-parent", "--count", "main"))
    assert generations == RESOURCES + sum(o.ok for o in outcomes)
    assert git(repo, "fsck", "--strict", "--no-progress") is not None
    for pid in workers:  # SIGKILLed with their parent: no orphan keeps the port
        wait_until(
            lambda pid=pid: not Path(f"/proc/{pid}").exists() or "Z" in _state(pid),
            f"worker {pid} ended with its parent",
        )


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def test_every_tool_answers_through_two_stateless_workers(
    place: tuple[Path, Path, dict[str, str]],
) -> None:
    data, creds, tokens = place
    server = Server(data, creds, "--workers", "2")

    async def scenario(client: ClientSession) -> list[Any]:
        edit = [{"old_string": "one", "new_string": "two"}]
        return [
            await client.call_tool("create_resource", {"path": "d/a.md", "content": "one\n"}),
            await client.call_tool("patch_resource", {"path": "d/a.md", "edits": edit}),
            await client.call_tool(
                "update_resource", {"path": "d/a.md", "content": "three\n", "expected_version": 2}
            ),
            await client.call_tool("read_resource", {"path": "d/a.md"}),
            await client.call_tool("grep_resource", {"pattern": "^thr", "path": "d"}),
            await client.call_tool("list_resources", {"prefix": "d"}),
        ]

    try:
        made, patched, updated, read, grep, listed = run(server.url, tokens["ada"], scenario)
    finally:
        server.stop()
    for result in (made, patched, updated, read, grep, listed):
        assert not result.is_error, text_of(result)
    assert updated.structured_content["version"] == 3
    assert read.structured_content["content"] == "three\n"
    assert grep.structured_content["matches"] == [{"path": "d/a.md", "line": 1, "text": "three"}]
    assert listed.structured_content["resources"] == ["d/a.md"]


def test_sixteen_clients_on_one_resource_are_queued_and_each_change_is_its_own_commit(
    place: tuple[Path, Path, dict[str, str]],
) -> None:
    data, creds, tokens = place
    data.mkdir(mode=0o700)
    (data / "spaces.toml").write_text("[calls]\nmax_concurrent_calls = 16\n")  # one credential
    server = Server(data, creds)
    try:
        anyio.run(setup, server.url, tokens["ada"], 1)
        outcomes = anyio.run(load, server.url, tokens["ada"], 16, 5, 1)
    finally:
        server.stop()
    codes = Counter(o.code for o in outcomes if not o.ok)
    assert set(codes) <= {"resource_conflict"}, codes  # a version read before another's write
    assert all(o.ok for o in outcomes if o.client % 2 == 1)  # queued: none thrown away
    repo = data / "users" / "ada.git"
    _check_replay(repo, outcomes, 1)
    # batched or not, each change is one commit of one line on main's first-parent line
    versions = sorted(o.version for o in outcomes if o.ok and o.version is not None)
    assert versions == list(range(2, 2 + len(versions)))
    for version in versions:
        commit = f"main~{versions[-1] - version}"
        assert git(repo, "diff", "--numstat", f"{commit}^", commit).split()[:2] == ["1", "0"]
