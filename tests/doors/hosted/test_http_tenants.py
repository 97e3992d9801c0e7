"""One tenant cannot stall or starve the others: edit caps, linear-time grep, per-credential
limits (sessions, the tool-invocation allowance), all through the real server and the SDK client.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.client import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import BaseModel

from gitpatch.doors.hosted.credentials import hash_token
from gitpatch.doors.hosted.limits import MAX_EDITS_PER_CALL, CallLimits
from gitpatch.doors.hosted.quota import Quotas
from gitpatch.doors.mcp import Reply, ToolSet, build_server
from gitpatch.errors import CallLimitReached
from gitpatch.tools import definitions as tooldefs
from tests.doors.hosted.svckit import (
    CLIENT_TIMEOUT,
    Server,
    call,
    make_credentials,
    run,
    session,
    space_refs,
    text_of,
    unwrap,
)

FIFTY = "".join(f"line {i}\n" for i in range(1, 51))


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    root = tmp_path_factory.mktemp("tenants")
    tokens = make_credentials(root / "credentials.toml")
    (root / "data").mkdir(mode=0o700)
    reader = hash_token(tokens["reader"])[:12]
    org = hash_token(tokens["org"])[:12]
    (root / "data" / "spaces.toml").write_text(
        f'[calls]\nmax_sessions = 50\n\n[calls."{reader}"]\nmax_sessions = 2\n\n'
        f'[calls."{org}"]\nmax_tool_calls = 3\ntool_call_window_seconds = 86400\n'
    )
    server = Server(root / "data", root / "credentials.toml")
    try:
        yield server, tokens
    finally:
        server.stop()


# -- 1. many edits in one call -------------------------------------------------------------------


@pytest.mark.slow
def test_edits_past_the_cap_are_invalid_params_naming_the_limit(
    service: tuple[Server, dict[str, str]],
) -> None:
    server, tokens = service
    assert not call(
        server.url, tokens["ada"], "create_resource", path="cap.md", content=FIFTY
    ).is_error
    before = space_refs(server.data)
    edits = [{"after_line": 0, "new_string": f"e{i}\n"} for i in range(MAX_EDITS_PER_CALL + 1)]
    with pytest.raises(MCPError) as caught:
        call(server.url, tokens["ada"], "patch_resource", path="cap.md", edits=edits)
    assert caught.value.code == INVALID_PARAMS
    assert str(MAX_EDITS_PER_CALL) in str(caught.value)
    assert space_refs(server.data) == before


@pytest.mark.slow
def test_the_most_edits_allowed_land_in_order(service: tuple[Server, dict[str, str]]) -> None:
    server, tokens = service
    call(server.url, tokens["ada"], "create_resource", path="many.md", content=FIFTY)
    edits = [{"after_line": 0, "new_string": f"e{i}\n"} for i in range(MAX_EDITS_PER_CALL)]
    result = call(server.url, tokens["ada"], "patch_resource", path="many.md", edits=edits)
    assert not result.is_error, text_of(result)
    read = call(server.url, tokens["ada"], "read_resource", path="many.md")
    lines = read.structured_content["content"].splitlines()
    assert lines[:3] == [f"e{MAX_EDITS_PER_CALL - 1}", f"e{MAX_EDITS_PER_CALL - 2}", "e997"]
    assert lines[MAX_EDITS_PER_CALL:] == FIFTY.splitlines()


class _Args(BaseModel):
    pass


def test_service_calls_run_off_the_event_loop() -> None:
    """A call that waits for another call finishes only if the other one can run meanwhile:
    on the event loop the first would block the second, and this test would time out."""
    released = threading.Event()

    def wait(args: BaseModel) -> Reply:
        return Reply(released.wait(30), "waited", data={"path": "w", "id": None, "version": "1"})

    def release(args: BaseModel) -> Reply:
        released.set()
        return Reply(True, "released", data={"path": "r", "id": None, "version": "1"})

    tools = (tooldefs.ToolDef("wait", _Args, True), tooldefs.ToolDef("release", _Args, True))
    outputs = {"wait": _out(), "release": _out()}
    toolset = ToolSet({"wait": wait, "release": release}, tools=tools, outputs=outputs)
    toolset.describe = lambda name: name
    server = build_server(toolset, offload=True)
    texts: list[str] = []

    async def main() -> None:
        with anyio.fail_after(60):
            async with Client(server) as client, anyio.create_task_group() as group:

                async def one(name: str) -> None:
                    texts.append(text_of(await client.call_tool(name, {})))

                group.start_soon(one, "wait")
                await anyio.sleep(0)
                group.start_soon(one, "release")

    anyio.run(main)
    assert sorted(texts) == ["released", "waited"]


def _out() -> type[BaseModel]:
    from gitpatch.doors.mcp import OUTPUTS

    return OUTPUTS["patch_resource"]


# -- 2. catastrophic regexes ----------------------------------------------------------------------


@pytest.mark.slow
def test_a_catastrophic_regex_is_answered_in_linear_time(
    service: tuple[Server, dict[str, str]],
) -> None:
    server, tokens = service
    content = "a" * 5000 + "!\n" + "aaaa\n"
    call(server.url, tokens["bob"], "create_resource", path="aa.txt", content=content)
    # a backtracking engine needs ~2^5000 steps for the first line; RE2 needs one pass
    result = call(server.url, tokens["bob"], "grep_resource", pattern="^(a+)+$", path="aa.txt")
    assert not result.is_error, text_of(result)
    assert [m["line"] for m in result.structured_content["matches"]] == [2]


@pytest.mark.parametrize("pattern", ["(a)\\1", "a(?=b)", "(?<=x)y"])
@pytest.mark.slow
def test_patterns_re2_cannot_run_are_invalid_params(
    service: tuple[Server, dict[str, str]], pattern: str
) -> None:
    server, tokens = service
    before = space_refs(server.data)
    with pytest.raises(MCPError) as caught:
        call(server.url, tokens["bob"], "grep_resource", pattern=pattern)
    assert caught.value.code == INVALID_PARAMS
    assert "RE2" in str(caught.value.error.data) or "RE2" in str(caught.value)
    assert space_refs(server.data) == before


# -- 3. per-credential limits ---------------------------------------------------------------------


@pytest.mark.slow
def test_the_tool_invocation_allowance_counts_every_call_and_then_refuses(
    service: tuple[Server, dict[str, str]],
) -> None:
    server, tokens = service

    async def scenario(client: ClientSession) -> list[Any]:
        web = {"path": "n.md", "team": "web"}
        out = [await client.call_tool("create_resource", {**web, "content": "1\n"})]
        out.append(await client.call_tool("read_resource", web))
        out.append(await client.call_tool("list_resources", {"team": "web"}))
        out.append(await client.call_tool("read_resource", web))
        return out

    results = run(server.url, tokens["org"], scenario)
    assert [r.is_error for r in results] == [False, False, False, True]
    refused = results[-1]
    assert refused.meta["code"] == "call_limit_reached"
    assert "allowance of 3 tool calls" in text_of(refused)
    # another credential is not affected
    other = call(server.url, tokens["bob"], "list_resources")
    assert not other.is_error


@pytest.mark.slow
def test_sessions_past_the_credential_limit_are_http_429_until_one_closes(
    service: tuple[Server, dict[str, str]],
) -> None:
    server, tokens = service
    statuses: list[int] = []

    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    async def third() -> None:
        headers = {"Authorization": f"Bearer {tokens['reader']}"}
        async with httpx2.AsyncClient(
            headers=headers, event_hooks={"response": [record]}, timeout=CLIENT_TIMEOUT
        ) as http:
            from mcp.client.streamable_http import streamable_http_client

            async with (
                streamable_http_client(server.url, http_client=http) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()

    async def main() -> list[str]:
        with anyio.fail_after(90):
            async with AsyncExitStack() as stack:
                held = [
                    await stack.enter_async_context(session(server.url, tokens["reader"]))
                    for _ in range(2)
                ]
                with pytest.raises(BaseException) as caught:  # noqa: PT012
                    await third()
                assert 429 in statuses, (statuses, unwrap(caught.value))
                # someone else still gets in, and the held sessions still work
                async with session(server.url, tokens["bob"]) as other:
                    assert not (await other.call_tool("list_resources", {})).is_error
                listed = await held[0].call_tool("list_resources", {})
                assert not listed.is_error
            # both closed (the SDK client ends its session with DELETE): room again
            async with session(server.url, tokens["reader"]) as again:
                result = await again.call_tool("list_resources", {})
                return [text_of(result)]

    assert anyio.run(main)


def _quotas(clock: list[float], **limits: int) -> Quotas:
    return Quotas(lambda owner: CallLimits(**limits), clock=lambda: clock[0])


def test_calls_running_at_once_are_capped_per_credential() -> None:
    quotas = _quotas([0.0], max_concurrent_calls=1)
    with quotas.call("a"):
        with pytest.raises(CallLimitReached) as caught, quotas.call("a"):
            pass
        assert caught.value.details["kind"] == "concurrent_calls"
        with quotas.call("b"):
            pass
    with quotas.call("a"):
        pass


def test_idle_sessions_expire_and_busy_ones_do_not() -> None:
    clock = [0.0]
    quotas = _quotas(clock, max_sessions=2, session_idle_seconds=10)
    quotas.opened(quotas.reserve("a"), "s1")
    quotas.opened(quotas.reserve("a"), "s2")
    with pytest.raises(CallLimitReached):
        quotas.reserve("a")
    with quotas.using("s2"):
        clock[0] = 100.0
        assert quotas.sessions_of("a") == 1  # s1 idle past 10 s; s2 in use
    clock[0] = 105.0
    assert quotas.sessions_of("a") == 1
    clock[0] = 111.0
    assert quotas.sessions_of("a") == 0


def test_the_allowance_window_starts_again() -> None:
    clock = [0.0]
    quotas = _quotas(clock, max_tool_calls=1, tool_call_window_seconds=60)
    with quotas.call("a"):
        pass
    with pytest.raises(CallLimitReached), quotas.call("a"):
        pass
    clock[0] = 60.0
    with quotas.call("a"):
        pass


def test_call_limits_come_from_the_limits_file(tmp_path: Path) -> None:
    from gitpatch.doors.hosted.limits import SpacesConfig

    (tmp_path / "spaces.toml").write_text(
        '[calls]\nmax_sessions = 3\n[calls."abc"]\nmax_tool_calls = 7\n'
    )
    config = SpacesConfig(tmp_path / "spaces.toml")
    assert config.call_limits("zzz") == CallLimits(max_sessions=3)
    assert config.call_limits("abc") == CallLimits(max_sessions=3, max_tool_calls=7)
