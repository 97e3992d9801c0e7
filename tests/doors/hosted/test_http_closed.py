"""The service fails closed and answers with the spec's codes: credentials, permissions, hosts,
the order of checks, paths (issue 20, items 4-9), through the real server and the SDK client.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.doors.hosted.svckit import (
    CLIENT_TIMEOUT,
    GIT_ENV,
    Server,
    call,
    make_credentials,
    space_refs,
    text_of,
)
from tests.doors.mcp.mcpkit import console_script

pytestmark = pytest.mark.slow


def _statuses(
    url: str, token: str, tool: str = "list_resources", args: dict[str, Any] | None = None
) -> list[int]:
    """The HTTP statuses an SDK client met opening a session and calling ``tool``."""
    seen: list[int] = []

    async def record(response: httpx2.Response) -> None:
        seen.append(response.status_code)

    async def main() -> None:
        headers = {"Authorization": f"Bearer {token}"}
        with anyio.fail_after(60):
            async with (
                httpx2.AsyncClient(
                    headers=headers, event_hooks={"response": [record]}, timeout=CLIENT_TIMEOUT
                ) as http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                await client.call_tool(tool, args or {})

    # a refused client fails; the statuses tell why
    with contextlib.suppress(BaseException):
        anyio.run(main)
    return seen


def _place(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    tokens = make_credentials(tmp_path / "credentials.toml")
    (tmp_path / "data").mkdir(mode=0o700)
    return tmp_path / "data", tmp_path / "credentials.toml", tokens


def _replace(path: Path, text: str | bytes) -> None:
    tmp = path.with_name(path.name + ".new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(text.encode() if isinstance(text, str) else text)
    os.replace(tmp, path)


# -- 4. credentials and permissions ---------------------------------------------------------------


_BROKEN: dict[str, Any] = {
    "unclosed table header at the top": lambda text: "[[credential]\n" + text,
    "byte-order mark": lambda text: "\ufeff" + text,
    "a broken header at the end": lambda text: text + "\n[[credential\n",
    "an unknown key (a typo)": lambda text: text.replace("scopes =", "scope =", 1),
    "a duplicated key": lambda text: text.replace("teams =", 'user = "eve"\nteams =', 1),
    "a stray top-level key": lambda text: "admin = true\n" + text,
    "not utf-8": lambda text: text.replace("acme", "acm\udcff", 1),
    "made readable by others": None,
}


@pytest.mark.parametrize("variant", list(_BROKEN))
def test_a_credentials_file_that_does_not_parse_whole_or_stays_private_refuses_every_token(
    tmp_path: Path, variant: str
) -> None:
    data, creds, tokens = _place(tmp_path)
    good = creds.read_text()
    server = Server(data, creds)
    try:
        assert not call(server.url, tokens["bob"], "list_resources").is_error
        breaking = _BROKEN[variant]
        if breaking is None:
            creds.chmod(0o644)
        else:
            broken = breaking(good).encode("utf-8", "surrogateescape")
            assert broken != good.encode()
            _replace(creds, broken)
        for name, token in tokens.items():  # every token, the untouched blocks' too
            seen = _statuses(server.url, token)
            assert 401 in seen and 200 not in seen, (name, seen)
        # fixed: the same tokens work again, without a restart
        if breaking is None:
            creds.chmod(0o600)
        else:
            _replace(creds, good)
        assert not call(server.url, tokens["bob"], "list_resources").is_error
    finally:
        log = server.stop()
    refused = [line for line in log.splitlines() if "every token is denied" in line]
    assert len(refused) == 1, log  # once per change of the file, not once per request
    assert str(creds) in refused[0]


def _serve(data: Path, creds: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **GIT_ENV, "HOME": str(data.parent)}
    args = ["serve", "--http", "127.0.0.1:0", "--data", str(data), "--credentials", str(creds)]
    return subprocess.run(
        [console_script(), *args], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(("what", "mode"), [("credentials", 0o644), ("data", 0o755)])
def test_serve_refuses_to_start_on_what_others_can_read(
    tmp_path: Path, what: str, mode: int
) -> None:
    data, creds, _ = _place(tmp_path)
    (creds if what == "credentials" else data).chmod(mode)
    done = _serve(data, creds)
    assert done.returncode != 0
    assert "invalid_arguments" in done.stderr and "open to other users" in done.stderr
    assert "chmod" in done.stderr
    assert list(data.iterdir()) == []


def test_what_the_service_writes_is_private_from_the_first_byte(tmp_path: Path) -> None:
    creds = tmp_path / "credentials.toml"
    tokens = make_credentials(creds)
    assert stat.S_IMODE(creds.stat().st_mode) == 0o600
    data = tmp_path / "data"  # made by the server
    server = Server(data, creds)
    try:
        result = call(server.url, tokens["bob"], "create_resource", path="a.md", content="a\n")
        assert not result.is_error, text_of(result)
    finally:
        server.stop()
    files = [data, *data.rglob("*")]
    assert any(p.name == "HEAD" for p in files)
    assert [p for p in files if stat.S_IMODE(p.stat().st_mode) & 0o077] == []


# -- 5. Host and Origin on every bind -------------------------------------------------------------


def _statuses_with(url: str, token: str, headers: dict[str, str]) -> list[int]:
    seen: list[int] = []

    async def record(response: httpx2.Response) -> None:
        seen.append(response.status_code)

    async def main() -> None:
        sent = {"Authorization": f"Bearer {token}", **headers}
        with anyio.fail_after(60):
            async with (
                httpx2.AsyncClient(
                    headers=sent, event_hooks={"response": [record]}, timeout=CLIENT_TIMEOUT
                ) as http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                await client.call_tool("list_resources", {})

    with contextlib.suppress(BaseException):
        anyio.run(main)
    return seen


def test_host_and_origin_are_checked_on_a_bind_the_sdk_does_not_protect(
    tmp_path: Path,
) -> None:
    """127.0.0.2 is loopback but not one of the SDK's loopback names, which used to turn the
    checks off just as 0.0.0.0 did; --allowed-host adds a name to the allow-list."""
    data, creds, tokens = _place(tmp_path)
    server = Server(data, creds, "--allowed-host", "svc.example", listen="127.0.0.2:0")
    try:
        port = server.url.rsplit(":", 1)[1].split("/")[0]
        token = tokens["bob"]
        assert _statuses_with(server.url, token, {}).count(200) >= 2
        assert _statuses_with(server.url, token, {"Host": f"svc.example:{port}"}).count(200) >= 2
        evil = _statuses_with(server.url, token, {"Host": f"evil.example:{port}"})
        assert evil and all(s >= 400 for s in evil)
        origin = {"Origin": "http://evil.example"}
        assert all(s >= 400 for s in _statuses_with(server.url, token, origin))
    finally:
        server.stop()
    assert not (data / "users").exists()


# -- 9. small things ------------------------------------------------------------------------------


def test_serve_on_ipv6_loopback(tmp_path: Path) -> None:
    data, creds, tokens = _place(tmp_path)
    server = Server(data, creds, listen="[::1]:0")
    try:
        assert server.url.startswith("http://[::1]:")
        result = call(server.url, tokens["bob"], "create_resource", path="six.md", content="6\n")
        assert not result.is_error, text_of(result)
    finally:
        server.stop()


# -- 6. the spec's order: version, edit, limits ---------------------------------------------------


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    root = tmp_path_factory.mktemp("order")
    data, creds, tokens = _place(root)
    (data / "spaces.toml").write_text("[defaults]\nmax_file_bytes = 1000\n")
    server = Server(data, creds)
    try:
        yield server, tokens
    finally:
        server.stop()


def _code(result: Any) -> str:
    assert result.is_error, text_of(result)
    return str(result.meta["code"])


def test_a_stale_version_is_a_conflict_before_the_edit_or_the_limits_are_tried(
    small: tuple[Server, dict[str, str]],
) -> None:
    server, tokens = small
    token = tokens["bob"]
    made = call(server.url, token, "create_resource", path="o.md", content="a\nb\n")
    first = made.structured_content["version"]
    edit = [{"old_string": "a", "new_string": "A"}]
    assert not call(server.url, token, "patch_resource", path="o.md", edits=edit).is_error
    before = space_refs(server.data)
    stale = {"path": "o.md", "expected_version": first}
    # the edit no longer matches, and this one would also be over the per-file limit
    assert _code(call(server.url, token, "patch_resource", edits=edit, **stale)) == (
        "resource_conflict"
    )
    big = [{"old_string": "a", "new_string": "x" * 2000}]
    assert _code(call(server.url, token, "patch_resource", edits=big, **stale)) == (
        "resource_conflict"
    )
    assert _code(call(server.url, token, "update_resource", content="x" * 2000, **stale)) == (
        "resource_conflict"
    )
    now = {"path": "o.md", "expected_version": first + 1}
    # with the current version: the edit first, then the limit
    bad_and_big = [{"after_line": 0, "new_string": "x" * 2000}, *edit]
    assert _code(call(server.url, token, "patch_resource", edits=bad_and_big, **now)) == (
        "invalid_patch"
    )
    too_big = [{"after_line": 0, "new_string": "x" * 2000}]
    assert _code(call(server.url, token, "patch_resource", edits=too_big, **now)) == (
        "payload_too_large"
    )
    assert space_refs(server.data) == before


# -- 7. a full disk: one code, no internals --------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1.5 MB tmpfs (root only: CI and these machines run as root)."""
    mnt = tmp_path / "disk"
    mnt.mkdir(mode=0o700)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1500k,mode=0700", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def test_a_full_disk_answers_one_code_with_no_internals(small_disk: Path, tmp_path: Path) -> None:
    import base64
    import random

    from gitpatch.doors.hosted.resources import STORAGE_REFUSED
    from tests.gitkit import git

    tokens = make_credentials(tmp_path / "credentials.toml")
    (small_disk / "spaces.toml").write_text("[defaults]\nmax_file_bytes = 4000000\n")
    server = Server(small_disk, tmp_path / "credentials.toml")
    rnd = random.Random(7)
    saved: dict[str, str] = {}
    refusals: set[tuple[str, str]] = set()
    try:
        # big incompressible resources fill the disk, then ever smaller ones fail at every
        # step of a write (blob, tree, commit, ref)
        sizes = [150_000] * 12 + [40 + n * 37 for n in range(60)]
        for n, size in enumerate(sizes):
            content = base64.b64encode(rnd.randbytes(size)).decode()
            result = call(
                server.url, tokens["bob"], "create_resource", path=f"f{n}.txt", content=content
            )
            if result.is_error:
                refusals.add((result.meta["code"], text_of(result)))
            else:
                saved[f"f{n}.txt"] = content
    finally:
        server.stop()
    assert saved and refusals
    assert {code for code, _ in refusals} == {"filesystem_error"}
    assert {text.splitlines()[0] for _, text in refusals} == {
        f"filesystem_error: {STORAGE_REFUSED}"
    }
    repo = small_disk / "users" / "bob.git"
    git(repo, "fsck")
    for path, content in saved.items():
        assert git(repo, "show", f"main:{path}") == content


# -- 8. path limits ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "needle"),
    [("a/" * 2000 + "x", "bytes long"), ("a/" * 100 + "x", "levels"), ("x" * 256, "name over")],
)
def test_paths_past_the_limits_are_invalid_params_and_write_nothing(
    small: tuple[Server, dict[str, str]], path: str, needle: str
) -> None:
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS

    server, tokens = small
    before = space_refs(server.data)
    for tool, args in [
        ("create_resource", {"content": "x\n"}),
        ("read_resource", {}),
        ("patch_resource", {"edits": [{"after_line": 0, "new_string": "x\n"}]}),
    ]:
        with pytest.raises(MCPError) as caught:
            call(server.url, tokens["bob"], tool, path=path, **args)
        assert caught.value.code == INVALID_PARAMS and needle in str(caught.value), tool
    assert space_refs(server.data) == before


def test_a_name_of_255_bytes_is_fine(small: tuple[Server, dict[str, str]]) -> None:
    server, tokens = small
    name = "é" * 127 + "x"  # 255 bytes in UTF-8
    result = call(server.url, tokens["bob"], "create_resource", path=name, content="x\n")
    assert not result.is_error, text_of(result)


# -- 9. the body cap, the commit message, paths in results, logs ------------------------


def test_the_body_cap_follows_a_raised_max_file_bytes(tmp_path: Path) -> None:
    data, creds, tokens = _place(tmp_path)
    (data / "spaces.toml").write_text("[defaults]\nmax_file_bytes = 65536\n")
    server = Server(data, creds)
    big = "x" * 300_000
    try:
        assert 413 in _statuses(
            server.url, tokens["bob"], "create_resource", {"path": "big.txt", "content": big}
        )
        assert not (data / "users").exists()
        _replace(data / "spaces.toml", "[defaults]\nmax_file_bytes = 1048576\n")
        result = call(server.url, tokens["bob"], "create_resource", path="big.txt", content=big)
        assert not result.is_error, text_of(result)
    finally:
        server.stop()


def test_changes_name_the_caller_results_show_normalised_paths_logs_hide_ids(
    tmp_path: Path,
) -> None:
    from gitpatch.doors.hosted.credentials import hash_token
    from tests.gitkit import git

    data, creds, tokens = _place(tmp_path)
    server = Server(data, creds)
    ada = tokens["ada"]
    try:
        made = call(server.url, ada, "create_resource", path="./d//n.md", content="a\n")
        assert made.structured_content["path"] == "d/n.md"
        replaced = call(server.url, ada, "update_resource", path="d/./n.md", content="b\n")
        assert replaced.structured_content["path"] == "d/n.md"
        edit = [{"old_string": "b", "new_string": "c"}]
        patched = call(server.url, ada, "patch_resource", path="d//n.md", edits=edit)
        assert patched.structured_content["path"] == "d/n.md"
        team = call(server.url, ada, "create_resource", path="team/web/./t.md", content="t\n")
        assert team.structured_content["path"] == "team/web/t.md"
        read = call(server.url, ada, "read_resource", path="team/web/x/../t.md")
        assert read.structured_content["path"] == "team/web/t.md"
        sid = _use_session_of_another(server.url, ada, tokens["bob"])
    finally:
        log = server.stop()
    assert f"{sid[:8]}..." in log  # the SDK's warning about it is there, with the id cut
    who = f"Requested by ada (credential {hash_token(ada)[:12]})."
    messages = git(data / "users" / "ada.git", "log", "--format=%B", "main")
    assert messages.count(who) == 3
    assert who in git(data / "teams" / "web.git", "log", "-1", "--format=%B", "main")
    assert re.search(r"[0-9a-f]{32}", log) is None, log


def _use_session_of_another(url: str, owner: str, other: str) -> str:
    """Open a session as ``owner`` and send a request on it as ``other`` (the SDK refuses it
    and logs a warning naming the session); returns the session id."""
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream"}
    with httpx2.Client(timeout=30) as http:
        opened = http.post(url, json=init, headers={**accept, "Authorization": f"Bearer {owner}"})
        sid = opened.headers["mcp-session-id"]
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        headers = {**accept, "Authorization": f"Bearer {other}", "mcp-session-id": sid}
        assert http.post(url, json=ping, headers=headers).status_code == 404
    return str(sid)
