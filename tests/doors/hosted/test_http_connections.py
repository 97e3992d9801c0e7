"""Connections that never finish a request cost the other tenants nothing (issue 29, item 2):
2,000 half-sent connections against a server whose descriptor limit is 1,024 are all closed by
the server, while another tenant's edits keep succeeding and the log stays quiet. Through the
real server (its limit set as ``ulimit -n`` would) and the SDK client on loopback."""

from __future__ import annotations

import contextlib
import resource
import selectors
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.doors.hosted.svckit import Server, call, make_credentials, text_of

pytestmark = pytest.mark.slow

HALF = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer nothing\r\n"


@pytest.fixture
def enough_descriptors() -> Iterator[None]:
    """This test process holds 2,000 sockets at once: raise its own soft limit if needed."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, max(soft, 4096))
    if wanted < 2200:
        pytest.skip(f"this process may hold {hard} descriptors, the test needs 2,200")
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _open_half_sent(address: tuple[str, int], count: int) -> list[socket.socket]:
    """``count`` connections, each having sent part of a request head and nothing more."""
    opened: list[socket.socket] = []
    for _ in range(count):
        sock = socket.socket()
        sock.setblocking(False)
        sock.connect_ex(address)
        opened.append(sock)
    pending = {s for s in opened}
    with selectors.DefaultSelector() as sel:
        for sock in pending:
            sel.register(sock, selectors.EVENT_WRITE)
        deadline = time.monotonic() + 120  # a bound for a broken server, not a timing claim
        while pending and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=1):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                sel.unregister(sock)
                pending.discard(sock)
                with contextlib.suppress(OSError):
                    sock.send(HALF)
    return opened


def _wait_closed(socks: list[socket.socket], bound: float) -> int:
    """How many of ``socks`` the server has not closed after waiting at most ``bound`` s."""
    live = set(socks)
    with selectors.DefaultSelector() as sel:
        for sock in live:
            sel.register(sock, selectors.EVENT_READ)
        deadline = time.monotonic() + bound
        while live and time.monotonic() < deadline:
            for key, _ in sel.select(timeout=1):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    gone = sock.recv(4096) == b""
                except OSError:
                    gone = True
                if gone:
                    sel.unregister(sock)
                    live.discard(sock)
    return len(live)


def test_two_thousand_half_sent_connections_are_closed_and_cost_other_tenants_nothing(
    tmp_path: Path, enough_descriptors: None
) -> None:
    tokens = make_credentials(tmp_path / "credentials.toml")
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    server = Server(data, tmp_path / "credentials.toml", "--header-timeout", "5", nofile=1024)
    socks: list[socket.socket] = []
    try:
        made = call(server.url, tokens["bob"], "create_resource", path="n.md", content="0\n")
        assert not made.is_error, text_of(made)
        where = urlsplit(server.url)
        assert where.hostname is not None and where.port is not None
        socks = _open_half_sent((where.hostname, where.port), 2000)
        text = "0\n"
        for n in range(1, 9):  # while they are held: every edit succeeds
            edit = [{"after_line": 0, "new_string": f"{n}\n"}]
            done = call(server.url, tokens["bob"], "patch_resource", path="n.md", edits=edit)
            assert not done.is_error, text_of(done)
            text = f"{n}\n" + text
        # every half-sent connection is closed by the server (the bound is for a broken one)
        assert _wait_closed(socks, bound=120) == 0
        read = call(server.url, tokens["bob"], "read_resource", path="n.md")
        assert read.structured_content["content"] == text
    finally:
        for sock in socks:
            sock.close()
        log = server.stop()
    assert "filesystem_error" not in log
    assert len(log.splitlines()) < 20, log[-3000:]


def _raw(address: tuple[str, int], head: bytes) -> socket.socket:
    sock = socket.create_connection(address, timeout=60)
    sock.sendall(head)
    return sock


def _answer_then_close(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (bounded by the socket's
    timeout, which only a broken server reaches)."""
    got = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return got
        if not chunk:
            return got
        got += chunk


def test_a_slow_body_holds_nothing_without_a_token_and_stalls_into_408_with_one(
    tmp_path: Path,
) -> None:
    tokens = make_credentials(tmp_path / "credentials.toml")
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    server = Server(data, tmp_path / "credentials.toml", "--header-timeout", "3")
    try:
        where = urlsplit(server.url)
        assert where.hostname is not None and where.port is not None
        address = (where.hostname, where.port)
        head = (
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n{auth}\r\n"
        )
        stranger = _raw(address, head.format(auth="").encode() + b'{"jsonrpc"')
        tenant = _raw(
            address,
            head.format(auth=f"Authorization: Bearer {tokens['bob']}\r\n").encode() + b'{"js',
        )
        # no token: answered 401 at once, the body never read, and the connection closed
        assert _answer_then_close(stranger).startswith(b"HTTP/1.1 401")
        # a known token whose body stalls: 408, and closed
        assert _answer_then_close(tenant).startswith(b"HTTP/1.1 408")
        stranger.close()
        tenant.close()
        made = call(server.url, tokens["bob"], "create_resource", path="n.md", content="0\n")
        assert not made.is_error, text_of(made)
    finally:
        server.stop()
    assert sorted(p.name for p in (data / "users").iterdir()) == ["bob.git"]
