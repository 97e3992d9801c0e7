"""Each space's own URL, ``/s/users/<user>/mcp`` and ``/s/teams/<team>/mcp``: what a router
hashes to pick the host of a space. A call through one space's URL may address only that space
(``wrong_space``, nothing created), and a shard started with ``--routed`` serves no plain
``/mcp``. Through the real server and the SDK client on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.doors.hosted.svckit import Server, call, make_credentials, space_refs, text_of

pytestmark = pytest.mark.slow


def at(url: str, space: str) -> str:
    """The URL of ``space`` on the server whose plain URL is ``url``."""
    return url.removesuffix("/mcp") + f"/s/{space}/mcp"


def code_of(result: Any) -> str:
    assert result.is_error, text_of(result)
    return str(result.meta["code"])


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    tokens = make_credentials(tmp_path / "credentials.toml")
    (tmp_path / "data").mkdir(mode=0o700)
    return tmp_path / "data", tmp_path / "credentials.toml", tokens


@pytest.fixture
def server(place: tuple[Path, Path, dict[str, str]]) -> Iterator[Server]:
    data, creds, _ = place
    running = Server(data, creds)
    try:
        yield running
    finally:
        running.stop()


def test_a_space_url_serves_its_space_and_refuses_every_other_creating_nothing(
    server: Server, place: tuple[Path, Path, dict[str, str]]
) -> None:
    data, _, tokens = place
    ada, web = at(server.url, "users/ada"), at(server.url, "teams/web")
    made = call(ada, tokens["ada"], "create_resource", path="a.md", content="a\n")
    assert not made.is_error, text_of(made)
    made = call(web, tokens["ada"], "create_resource", path="w.md", content="w\n", team="web")
    assert not made.is_error, text_of(made)
    assert (data / "users" / "ada.git").is_dir() and (data / "teams" / "web.git").is_dir()
    before = space_refs(data)
    refused = [
        call(ada, tokens["ada"], "create_resource", path="x.md", content="x\n", team="web"),
        call(ada, tokens["ada"], "read_resource", path="team/infra/x.md"),
        call(web, tokens["ada"], "create_resource", path="x.md", content="x\n"),
        call(ada, tokens["bob"], "create_resource", path="x.md", content="x\n"),  # users/bob
        call(ada, tokens["bob"], "read_resource", path="a.md"),
        call(ada, tokens["org"], "list_resources", team="web"),
    ]
    for result in refused:
        assert code_of(result) == "wrong_space"
        assert "/s/" in text_of(result)  # the hint names the URL to use
    assert space_refs(data) == before
    assert not (data / "users" / "bob.git").exists()
    assert not (data / "teams" / "infra.git").exists()
    # the same space through its URL and through plain /mcp: one space
    read = call(server.url, tokens["ada"], "read_resource", path="w.md", team="web")
    assert read.structured_content["content"] == "w\n"
    listed = call(web, tokens["org"], "list_resources", team="web")
    assert listed.structured_content["resources"] == ["w.md"]


def test_a_url_naming_no_valid_space_is_not_found(server: Server) -> None:
    base = server.url.removesuffix("/mcp")
    for path in ["/s/users/Ada/mcp", "/s/groups/web/mcp", "/s/users/a/b/mcp", "/s/users/../mcp"]:
        reply = httpx2.post(base + path, json={}, headers={"Accept": "application/json"})
        assert reply.status_code == 404, path
    assert list(server.data.iterdir()) == []


def test_a_routed_shard_serves_only_space_urls(place: tuple[Path, Path, dict[str, str]]) -> None:
    data, creds, tokens = place
    shard = Server(data, creds, "--routed")
    try:
        headers = {
            "Authorization": f"Bearer {tokens['bob']}",
            "Accept": "application/json, text/event-stream",
        }
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        plain = httpx2.post(shard.url, json=init, headers=headers)
        assert plain.status_code == 404 and "/s/users/<user>/mcp" in plain.text
        made = call(
            at(shard.url, "users/bob"), tokens["bob"], "create_resource", path="b.md", content="b\n"
        )
        assert not made.is_error, text_of(made)
    finally:
        shard.stop()
    assert sorted(p.name for p in (data / "users").iterdir()) == ["bob.git"]
