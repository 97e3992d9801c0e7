"""Driving the real ``gitpatch serve --http`` with the MCP SDK's own streamable HTTP client.

``Server`` starts the console script on 127.0.0.1 with an ephemeral port, waits for the line
naming its URL (no sleeps), and is stopped by the test (terminate, or SIGKILL on purpose).
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import resource
import signal
import socket
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from gitpatch.doors.hosted.credentials import add_credential
from tests.doors.mcp.mcpkit import console_script
from tests.gitkit import GIT_ENV

T = TypeVar("T")

#: The credentials every HTTP test can use, by name: (user, organization, teams, manage, scopes).
PEOPLE: dict[str, dict[str, Any]] = {
    "ada": {"user": "ada", "organization": "acme", "teams": ["web", "infra"], "manage": ["web"]},
    "org": {"user": None, "organization": "acme", "teams": ["web"], "manage": ["web"]},
    "bob": {"user": "bob", "organization": None},
    "reader": {"user": "carl", "organization": None, "scopes": ["read"]},
    "ed": {"user": "ed", "organization": None, "scopes": ["edit"]},
}


def make_credentials(path: Path) -> dict[str, str]:
    """Write every credential of ``PEOPLE`` to ``path``; returns the tokens by name."""
    tokens = {}
    for name, spec in PEOPLE.items():
        token, _ = add_credential(
            path,
            user=spec["user"],
            organization=spec["organization"],
            teams=spec.get("teams", ()),
            manage=spec.get("manage", ()),
            scopes=spec.get("scopes", ("read", "edit")),
        )
        tokens[name] = token
    return tokens


class Server:
    """A ``gitpatch serve --http`` process over ``data`` with the credentials file ``creds``."""

    def __init__(
        self,
        data: Path,
        creds: Path,
        *extra: str,
        listen: str = "127.0.0.1:0",
        nofile: int | None = None,
    ) -> None:
        """``nofile``: the server's descriptor limit (soft and hard), as ``ulimit -n`` sets."""
        self.data, self.creds = data, creds
        env = {**os.environ, **GIT_ENV, "HOME": str(data.parent)}

        def limit() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.proc = subprocess.Popen(
            [console_script(), "serve", "--http", listen, "--data", str(data)]
            + ["--credentials", str(creds), *extra],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=limit if nofile is not None else None,
        )
        assert self.proc.stderr is not None
        self.url = ""
        for line in self.proc.stderr:  # ends when the process dies: no hang
            found = re.search(r"http://\S+:\d+/mcp", line)
            if found:
                self.url = found.group(0)
                break
        assert self.url, f"the server did not start (exit {self.proc.poll()})"
        self.log = ""

    def stop(self) -> str:
        """Terminate the server and wait for it; returns what it logged after starting."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr is not None and not self.proc.stderr.closed:
            self.log = self.proc.stderr.read()
            self.proc.stderr.close()
        return self.log

    def kill(self) -> None:
        """SIGKILL the server (no clean shutdown) and wait for it."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        if self.proc.stderr is not None:
            self.proc.stderr.close()


def fixed_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports for processes that must listen on a port named
    in advance (a router's configuration, a server restarted on its old port), chosen below
    the kernel's ephemeral range. A port from binding port 0 comes from that range, where the
    kernel hands out ports to every other test's connections and servers meanwhile, so it can
    be taken before the process binds it (or while a server is down); below the range only
    a port named on purpose is ever taken."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    pick = random.SystemRandom()
    found: list[int] = []
    while len(found) < count:
        port = pick.randrange(10_000, low) if low > 11_000 else 0
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:  # in use: another one
                continue
            port = int(probe.getsockname()[1])
        if port not in found:
            found.append(port)
    return found


@contextlib.contextmanager
def serving(root: Path, *options: str) -> Iterator[tuple[Server, dict[str, str]]]:
    """A server on a fresh data folder under ``root`` with the kit's credentials (its
    tokens by user), stopped at the end."""
    tokens = make_credentials(root / "credentials.toml")
    (root / "data").mkdir(mode=0o700)
    server = Server(root / "data", root / "credentials.toml", *options)
    try:
        yield server, tokens
    finally:
        server.stop()


#: How long a session's HTTP client waits for an answer: longer than any test's own bound.
CLIENT_TIMEOUT = 900.0
#: ``run``'s bound on a scenario: for a broken server, not a timing claim. A heavy call's
#: niced worker took 128 s for 3 s of CPU on a loaded 2-core machine.
SCENARIO_BOUND = 600.0


@contextlib.asynccontextmanager
async def session(url: str, token: str | None) -> AsyncIterator[ClientSession]:
    """An initialised SDK client session at ``url`` with ``token`` as bearer. Its HTTP client
    waits as long as ``CLIENT_TIMEOUT`` for an answer: each test bounds its scenario itself
    (``anyio.fail_after``), and the client must not give up first on a call that a loaded
    machine makes slow (a heavy call's niced worker gets little CPU there)."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=CLIENT_TIMEOUT) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        yield client


def run(url: str, token: str, scenario: Callable[[ClientSession], Awaitable[T]]) -> T:
    """Run ``scenario(client)`` in one session; returns its result (bounded by
    ``SCENARIO_BOUND``)."""

    async def main() -> T:
        with anyio.fail_after(SCENARIO_BOUND):
            async with session(url, token) as client:
                return await scenario(client)

    try:
        return anyio.run(main)
    except BaseExceptionGroup as group:
        raise unwrap(group) from None


def unwrap(error: BaseException) -> BaseException:
    """The one error inside the task groups the SDK client nests it in."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def call(url: str, token: str, tool: str, **arguments: Any) -> Any:
    """One tool call in a fresh session; returns the SDK's result."""
    return run(url, token, lambda c: c.call_tool(tool, arguments))


def text_of(result: Any) -> str:
    """The text content of a tool result."""
    return "".join(getattr(block, "text", "") for block in result.content)


def space_refs(data: Path) -> dict[str, str]:
    """Every ref of every space under ``data`` (what a refused call must leave unchanged)."""
    from tests.gitkit import git

    found = {}
    for repo in sorted(data.glob("*/*.git")):
        refs = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
        found[str(repo.relative_to(data))] = refs
    return found


def children(pid: int) -> list[int]:
    """The processes ``pid`` started that still run (or wait to be reaped), from /proc."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``: its children, theirs, and so on."""
    found, todo = [], children(pid)
    while todo:
        found.append(todo.pop())
        todo += children(found[-1])
    return found


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) the process ``pid`` used itself; 0 once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def busy_worker(server: int, seconds: float = 600) -> int:
    """The worker process (below the server's forkserver) running a job: the one whose CPU
    time grows while we look (idle workers use none). Bounded by ``seconds`` of wall time: a
    niced worker on a loaded machine may wait long for its first CPU."""
    first: dict[int, float] = {}
    deadline = anyio.current_time() + seconds
    while anyio.current_time() < deadline:
        for forkserver in children(server):
            for pid in children(forkserver):
                used = cpu_of(pid)
                if used > first.setdefault(pid, used) + 0.05:
                    return pid
        await anyio.sleep(0.05)
    raise AssertionError(f"no worker process ran a job within {seconds:g} s")


def inserted_lines(count: int) -> Callable[[ClientSession], Awaitable[list[Any]]]:
    """A scenario: ``h.md`` created ("0"), then ``count - 1`` edits each inserting ``line N``
    at its top; every call's result, in order."""

    async def scenario(client: ClientSession) -> list[Any]:
        out = [await client.call_tool("create_resource", {"path": "h.md", "content": "0\n"})]
        for n in range(1, count):
            edit = [{"after_line": 0, "new_string": f"line {n}\n"}]
            out.append(await client.call_tool("patch_resource", {"path": "h.md", "edits": edit}))
        return out

    return scenario
