"""Hostile input over HTTP: each refused with its code, nothing written anywhere.

Oversized bodies, path tricks and other users' spaces go through the SDK's own client. Deep
JSON and invalid UTF-8 cannot: the SDK client refuses to serialise them, so those two are sent
as raw bytes with httpx2 (the SDK's HTTP library) on a session opened the same raw way.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, PARSE_ERROR

from tests.doors.hosted.svckit import (
    CLIENT_TIMEOUT,
    Server,
    call,
    make_credentials,
    space_refs,
    text_of,
    unwrap,
)
from tests.gitkit import git

#: a gitpatch serve --http process: `make test-fast` leaves these out.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    root = tmp_path_factory.mktemp("hostile")
    tokens = make_credentials(root / "credentials.toml")
    (root / "data").mkdir(mode=0o700)
    (root / "data" / "spaces.toml").write_text("[defaults]\nmax_file_bytes = 65536\n")
    server = Server(root / "data", root / "credentials.toml")
    try:
        # ada's space holds something the others must not reach
        assert not call(
            server.url, tokens["ada"], "create_resource", path="s.md", content="ada\n"
        ).is_error
        yield server, tokens
    finally:
        server.stop()


def _everything(root: Path) -> dict[str, Any]:
    # os.walk, not rglob: a folder a background packing run removes mid-walk is skipped
    files = sorted(
        str((Path(top) / name).relative_to(root))
        for top, dirs, names in os.walk(root)
        for name in [*dirs, *names]
        if "objects" not in (Path(top) / name).parts
    )
    return {"refs": space_refs(root / "data"), "files": files}


def test_oversized_body_is_http_413_and_writes_nothing(
    service: tuple[Server, dict[str, str]],
) -> None:
    server, tokens = service
    before = _everything(server.data.parent)
    seen: list[int] = []

    async def record(response: httpx2.Response) -> None:
        seen.append(response.status_code)

    async def main() -> None:
        headers = {"Authorization": f"Bearer {tokens['ada']}"}
        with anyio.fail_after(60):
            async with (
                httpx2.AsyncClient(
                    headers=headers, event_hooks={"response": [record]}, timeout=CLIENT_TIMEOUT
                ) as http,
                streamable_http_client(server.url, http_client=http) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                big = {"path": "big.txt", "content": "x" * 300_000}
                await client.call_tool("create_resource", big)

    with pytest.raises(BaseException):  # noqa: B017 - the SDK reports it as a broken request
        anyio.run(main)
    assert 413 in seen
    assert _everything(server.data.parent) == before


def test_a_file_over_the_limit_but_under_the_body_limit_is_payload_too_large(
    service: tuple[Server, dict[str, str]],
) -> None:
    server, tokens = service
    before = _everything(server.data.parent)
    result = call(server.url, tokens["ada"], "create_resource", path="b.txt", content="y" * 70_000)
    assert result.is_error and text_of(result).startswith("payload_too_large:")
    assert _everything(server.data.parent) == before


PATH_TRICKS = [
    "../x",
    "../../etc/passwd",
    "/etc/passwd",
    ".git/config",
    "a/../../b",
    "a\x00b",
    "C:\\windows\\x",
    "",
]


@pytest.mark.parametrize("path", PATH_TRICKS)
def test_path_tricks_are_refused_with_their_code(
    service: tuple[Server, dict[str, str]], path: str
) -> None:
    server, tokens = service
    before = _everything(server.data.parent)
    try:
        created = call(server.url, tokens["bob"], "create_resource", path=path, content="x\n")
    except MCPError as exc:  # an empty path is a malformed argument
        assert exc.code == INVALID_PARAMS
    else:
        assert created.is_error and text_of(created).startswith("path_unsafe:")
    with pytest.raises(MCPError) as caught:  # patch_resource: path_unsafe is invalid_arguments
        call(
            server.url,
            tokens["bob"],
            "patch_resource",
            path=path,
            edits=[{"after_line": 0, "new_string": "x"}],
        )
    assert caught.value.code == INVALID_PARAMS
    assert _everything(server.data.parent) == before


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"path": "users/ada/s.md"}, "resource_not_found"),  # a path in bob's own space
        ({"path": "../ada.git/s.md"}, "path_unsafe"),
        ({"path": "s.md", "team": "../users/ada"}, "personal_cannot_address_team"),
        ({"path": "team/../users/ada/s.md"}, "personal_cannot_address_team"),
    ],
)
def test_other_users_spaces_are_out_of_reach(
    service: tuple[Server, dict[str, str]], arguments: dict[str, Any], code: str
) -> None:
    server, tokens = service
    before = _everything(server.data.parent)
    read = call(server.url, tokens["bob"], "read_resource", **arguments)
    assert read.is_error and text_of(read).split(":")[0] == code
    update = call(server.url, tokens["bob"], "update_resource", content="bob\n", **arguments)
    assert update.is_error
    assert _everything(server.data.parent) == before
    assert git(server.data / "users" / "ada.git", "show", "main:s.md") == "ada\n"


def _raw(server: Server, token: str, body: bytes) -> httpx2.Response:
    """POST ``body`` on a freshly initialised raw session."""
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "hostile", "version": "1"},
        },
    }
    with httpx2.Client(timeout=30) as http:
        opened = http.post(server.url, content=json.dumps(init).encode(), headers=headers)
        assert opened.status_code == 200
        headers["mcp-session-id"] = opened.headers["mcp-session-id"]
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        http.post(server.url, content=json.dumps(done).encode(), headers=headers)
        return http.post(server.url, content=body, headers=headers)


def _call_body(arguments: str) -> bytes:
    head = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_resource",'
    return (head + f'"arguments":{arguments}}}}}').encode("utf-8", "surrogateescape")


@pytest.mark.parametrize(
    "body",
    [
        _call_body('{"path":"d.txt","content":' + "[" * 5000 + "]" * 5000 + "}"),
        _call_body('{"path":"u.txt","content":"\udcff\udcfe"}'),  # raw 0xff 0xfe bytes
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":',  # truncated
    ],
    ids=["deep-json", "invalid-utf8", "truncated"],
)
def test_unparseable_bodies_are_parse_errors(
    service: tuple[Server, dict[str, str]], body: bytes
) -> None:
    server, tokens = service
    before = _everything(server.data.parent)
    answer = _raw(server, tokens["ada"], body)
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == PARSE_ERROR
    assert _everything(server.data.parent) == before


def test_unwrap_keeps_a_lone_error() -> None:
    error = ValueError("x")
    assert unwrap(BaseExceptionGroup("g", [BaseExceptionGroup("h", [error])])) is error
