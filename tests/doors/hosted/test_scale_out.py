"""Past one machine: two servers with disjoint shards of spaces behind HAProxy and behind nginx,
each configured exactly as docs/hosted-service.md shows (the test reads the configurations from
it), hashing each space's own URL (``/s/<space>/mcp``) consistently. The SDK client reaches
every personal and team space through one router; each space lives on one shard; a shard that
is down is not failed over (its spaces are not created on the other); a server SIGKILLed and
restarted loses nothing it acknowledged. Loopback only.

HAProxy and nginx are Debian's (``.ci/run`` installs them when missing). Without one the test
of that router skips, unless ``GITPATCH_REQUIRE_HAPROXY`` / ``GITPATCH_REQUIRE_NGINX`` is set
(CI sets it once the install worked), where it fails.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from gitpatch.doors.hosted.credentials import add_credential
from tests.doors.hosted.svckit import Server, fixed_ports, text_of
from tests.gitkit import git, wait_until

pytestmark = pytest.mark.slow

USERS = [f"u{n}" for n in range(6)]
TEAMS = [f"t{n}" for n in range(4)]
DOCS = Path(__file__).parents[3] / "docs" / "hosted-service.md"


def _binary(name: str) -> str:
    found = shutil.which(name) or (
        f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None
    )
    if found is None:
        if os.environ.get(f"GITPATCH_REQUIRE_{name.upper()}"):
            pytest.fail(f"{name} is required here (GITPATCH_REQUIRE_{name.upper()}) but missing")
        pytest.skip(f"{name} is not installed (apt-get install {name})")
    return found


def documented(first_line: str) -> str:
    """The fenced block of docs/hosted-service.md that starts with ``first_line``."""
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", DOCS.read_text(), re.MULTILINE | re.DOTALL)
    found = [b for b in blocks if b.startswith(first_line + "\n")]
    assert len(found) == 1, f"docs/hosted-service.md has no one block starting {first_line!r}"
    return str(found[0])


def _on_loopback(config: str, listen: str, front: int, a: int, b: int) -> str:
    """The documented configuration with loopback ports for the router and the two hosts."""
    for old, new in ((listen, f"127.0.0.1:{front}"), ("10.0.0.1:8765", f"127.0.0.1:{a}")):
        assert old in config
        config = config.replace(old, new)
    assert "10.0.0.2:8765" in config
    return config.replace("10.0.0.2:8765", f"127.0.0.1:{b}")


def _haproxy(tmp_path: Path, front: int, a: int, b: int) -> list[str]:
    binary = _binary("haproxy")
    config = tmp_path / "haproxy.cfg"
    config.write_text(_on_loopback(documented("# haproxy.cfg"), ":8080", front, a, b))
    return [binary, "-db", "-f", str(config)]


def _nginx(tmp_path: Path, front: int, a: int, b: int) -> list[str]:
    binary = _binary("nginx")
    prefix = tmp_path / "nginx"
    prefix.mkdir()
    block = _on_loopback(documented("# nginx: the http block"), "8080", front, a, b)
    temp = "".join(
        f"    {kind}_temp_path {prefix / kind};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    (prefix / "nginx.conf").write_text(
        f"daemon off;\npid {prefix / 'nginx.pid'};\nerror_log {prefix / 'error.log'};\n"
        "events { worker_connections 512; }\n"
        f"http {{\n    access_log off;\n{temp}{block}}}\n"
    )
    return [binary, "-p", str(prefix), "-c", str(prefix / "nginx.conf")]


@pytest.fixture(params=["haproxy", "nginx"])
def router(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[int, int, int]]:
    """HAProxy or nginx in front of two ports; yields (front, a, b)."""
    front, a, b = fixed_ports(3)  # in the configuration, and server a restarts on its port
    command = {"haproxy": _haproxy, "nginx": _nginx}[request.param](tmp_path, front, a, b)
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def listening() -> bool:
        assert proc.poll() is None, f"{request.param} exited"
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", front)) == 0

    try:
        wait_until(listening, f"{request.param} listening")
        yield front, a, b
    finally:
        proc.terminate()
        proc.wait()


async def _call(url: str, token: str, tool: str, args: dict[str, Any]) -> Any:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        return await client.call_tool(tool, args)


def call(front: int, token: str, space: str, tool: str, **args: Any) -> Any:
    """One tool call through the router, at the URL of ``space``."""

    async def main() -> Any:
        with anyio.fail_after(60):
            return await _call(f"http://127.0.0.1:{front}/s/{space}/mcp", token, tool, args)

    return anyio.run(main)


def _args(space: str) -> dict[str, Any]:
    kind, _, name = space.partition("/")
    return {"team": name} if kind == "teams" else {}


def test_two_shards_behind_a_router_one_map_for_personal_and_team_spaces_and_no_loss(
    tmp_path: Path, router: tuple[int, int, int]
) -> None:
    front, port_a, port_b = router
    creds = tmp_path / "credentials.toml"
    tokens = {
        u: add_credential(creds, user=u, organization="acme", teams=TEAMS, manage=TEAMS)[0]
        for u in USERS
    }
    # each team is written by two users, each session at the team's own URL
    writers = {f"users/{u}": [u] for u in USERS}
    writers |= {f"teams/{t}": [USERS[n], USERS[n + 1]] for n, t in enumerate(TEAMS)}
    data = {"a": tmp_path / "a", "b": tmp_path / "b"}
    servers: dict[str, Server] = {}
    written: dict[str, str] = {}
    try:
        for name, port in (("a", port_a), ("b", port_b)):  # each stopped, whatever fails
            servers[name] = Server(data[name], creds, "--routed", listen=f"127.0.0.1:{port}")
        for space, users in writers.items():
            made = call(
                front,
                tokens[users[0]],
                space,
                "create_resource",
                path="n.md",
                content="0\n",
                **_args(space),
            )
            assert not made.is_error, text_of(made)
            written[space] = "0\n"
        for round_ in range(1, 3):
            for space, users in writers.items():
                for user in users:
                    edit = [{"after_line": 0, "new_string": f"{round_}{user}\n"}]
                    done = call(
                        front,
                        tokens[user],
                        space,
                        "patch_resource",
                        path="n.md",
                        edits=edit,
                        **_args(space),
                    )
                    assert not done.is_error, text_of(done)
                    written[space] = f"{round_}{user}\n" + written[space]
        owner = {}
        for space in writers:  # disjoint shards: each space lives on exactly one server
            homes = [k for k, d in data.items() if (d / f"{space}.git").exists()]
            assert len(homes) == 1, (space, homes)
            owner[space] = homes[0]
        assert set(owner.values()) == {"a", "b"}, owner

        servers["a"].kill()
        on_a = [s for s in writers if owner[s] == "a"]
        on_b = [s for s in writers if owner[s] == "b"]
        # the other shard keeps serving while a is down ...
        read = call(
            front,
            tokens[writers[on_b[0]][0]],
            on_b[0],
            "read_resource",
            path="n.md",
            **_args(on_b[0]),
        )
        assert read.structured_content["content"] == written[on_b[0]]
        # ... and a's spaces are not failed over to b, where they would start empty
        with pytest.raises(BaseException):  # noqa: B017 - the router's 502/503, as the SDK raises it
            call(
                front,
                tokens[writers[on_a[0]][0]],
                on_a[0],
                "create_resource",
                path="x.md",
                content="x\n",
                **_args(on_a[0]),
            )
        assert not (data["b"] / f"{on_a[0]}.git").exists()

        servers["a"] = Server(data["a"], creds, "--routed", listen=f"127.0.0.1:{port_a}")
        for space, users in writers.items():
            read = call(
                front, tokens[users[-1]], space, "read_resource", path="n.md", **_args(space)
            )
            assert read.structured_content["content"] == written[space], space
    finally:
        for server in servers.values():
            server.stop()
    for space in writers:
        repo = data[owner[space]] / f"{space}.git"
        assert git(repo, "fsck", "--strict", "--no-progress") is not None
