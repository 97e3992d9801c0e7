"""Past one machine: two servers with disjoint shards of spaces behind HAProxy, which hashes the
``Gitpatch-Space`` header consistently; the SDK client reaches every space through one URL, and
a server SIGKILLed and restarted loses nothing it acknowledged. Loopback only.

HAProxy is Debian's (``.ci/run`` installs it when missing). Without it the test skips, unless
``GITPATCH_REQUIRE_HAPROXY`` is set (CI sets it once the install worked), where it fails.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from gitpatch.doors.hosted.credentials import add_credential
from tests.doors.hosted.svckit import Server
from tests.gitkit import git

pytestmark = pytest.mark.slow

USERS = [f"u{n}" for n in range(8)]
HEADER = "Gitpatch-Space"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _haproxy() -> str:
    found = shutil.which("haproxy") or (
        "/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None
    )
    if found is None:
        if os.environ.get("GITPATCH_REQUIRE_HAPROXY"):
            pytest.fail("haproxy is required here (GITPATCH_REQUIRE_HAPROXY) but not installed")
        pytest.skip("haproxy is not installed (apt-get install haproxy)")
    return found


CONFIG = """
global
    maxconn 256
defaults
    mode http
    timeout connect 5s
    timeout client 120s
    timeout server 120s
    timeout tunnel 120s
frontend gitpatch
    bind 127.0.0.1:{front}
    default_backend shards
backend shards
    balance hdr({header})
    hash-type consistent
    server a 127.0.0.1:{a}
    server b 127.0.0.1:{b}
"""


@pytest.fixture
def router(tmp_path: Path) -> Iterator[tuple[int, int, int]]:
    """HAProxy in front of two ports; yields (front, a, b)."""
    front, a, b = _free_port(), _free_port(), _free_port()
    config = tmp_path / "haproxy.cfg"
    config.write_text(CONFIG.format(front=front, a=a, b=b, header=HEADER))
    proc = subprocess.Popen(
        [_haproxy(), "-db", "-f", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(1000):  # until it listens (bounded; nothing depends on how long)
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", front)) == 0:
                    break
            assert proc.poll() is None, "haproxy exited"
            time.sleep(0.01)
        yield front, a, b
    finally:
        proc.terminate()
        proc.wait()


async def _call(url: str, token: str, space: str, tool: str, args: dict[str, Any]) -> Any:
    headers = {"Authorization": f"Bearer {token}", HEADER: space}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        return await client.call_tool(tool, args)


def call(url: str, token: str, user: str, tool: str, **args: Any) -> Any:
    """One tool call of ``user`` through the router (its space named in the header)."""

    async def main() -> Any:
        with anyio.fail_after(60):
            return await _call(url, token, f"users/{user}", tool, args)

    return anyio.run(main)


def test_two_shards_behind_haproxy_one_url_and_a_restart_loses_nothing(
    tmp_path: Path, router: tuple[int, int, int]
) -> None:
    front, port_a, port_b = router
    url = f"http://127.0.0.1:{front}/mcp"
    creds = tmp_path / "credentials.toml"
    tokens = {u: add_credential(creds, user=u, organization=None)[0] for u in USERS}
    data = {"a": tmp_path / "a", "b": tmp_path / "b"}
    servers = {
        "a": Server(data["a"], creds, listen=f"127.0.0.1:{port_a}"),
        "b": Server(data["b"], creds, listen=f"127.0.0.1:{port_b}"),
    }
    written: dict[str, list[str]] = {u: [] for u in USERS}
    try:
        for user in USERS:
            made = call(url, tokens[user], user, "create_resource", path="n.md", content="0\n")
            assert not made.is_error
            written[user].append("0\n")
        owner = {
            u: next(k for k, d in data.items() if (d / "users" / f"{u}.git").exists())
            for u in USERS
        }
        for user in USERS:  # disjoint shards: each space lives on exactly one server
            assert sum((d / "users" / f"{user}.git").exists() for d in data.values()) == 1
        assert set(owner.values()) == {"a", "b"}, owner
        for round_ in range(1, 4):
            for user in USERS:
                edit = [{"after_line": 0, "new_string": f"{round_}\n"}]
                done = call(url, tokens[user], user, "patch_resource", path="n.md", edits=edit)
                assert not done.is_error
                written[user].insert(0, f"{round_}\n")
        servers["a"].kill()
        on_b = [u for u in USERS if owner[u] == "b"]
        # the other shard keeps serving while a is down
        assert not call(url, tokens[on_b[0]], on_b[0], "read_resource", path="n.md").is_error
        servers["a"] = Server(data["a"], creds, listen=f"127.0.0.1:{port_a}")
        for user in USERS:
            read = call(url, tokens[user], user, "read_resource", path="n.md")
            assert read.structured_content["content"] == "".join(written[user]), user
    finally:
        for server in servers.values():
            server.stop()
    for user in USERS:
        repo = data[owner[user]] / "users" / f"{user}.git"
        assert git(repo, "fsck", "--strict", "--no-progress") is not None
