"""The HTTP service's process: the socket, the ASGI app, and ``--workers N`` processes.

One worker serves stateful MCP sessions (the SDK keeps each session in the process that
opened it, so per-credential session limits apply). With several workers the listening socket
is shared by forked processes, the kernel spreads connections among them, and the service runs
the SDK's stateless streamable HTTP: each request stands alone, so any worker can answer it.
Workers coordinate only through git (compare-and-swap on each space's branch), as separate
servers over one data directory always have; inside a worker the writes of one space queue
(``Space.writing``). A worker that dies is replaced; each dies with its parent (Linux
``PR_SET_PDEATHSIG``), so a killed server leaves no orphan holding the port.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import gc
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp

from gitpatch.doors.hosted.calls import CallGate

__all__ = ["serve"]

_log = logging.getLogger("gitpatch.doors.hosted")


#: On SIGTERM, calls in flight get this long to finish by themselves before their budgets are
#: stopped (``CallGate.drain``): they then end at their next checkpoint having written nothing.
DRAIN_GRACE = 1.0
#: Once the server stopped, a space's packing run under way gets this long to finish (its
#: pack moved into place, its work folder removed) before the process exits.
SETTLE_SECONDS = 5.0


@dataclasses.dataclass(frozen=True)
class Served:
    """The ASGI app of one process, the gate its tool calls pass (drained on SIGTERM), and
    what to wait for once it stopped (``settle(timeout)``: its spaces' packing runs)."""

    app: ASGIApp
    gate: CallGate
    settle: Callable[[float], object]


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it (Linux): a reply written as headers then body must not
    # wait for the client's delayed ACK of the first part (Nagle), 40 ms a call otherwise.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(1024)
    return sock


def _app(
    data: Path,
    credentials: Path,
    host: str,
    port: int,
    on_change: Callable[..., None] | None,
    allowed: tuple[str, ...],
    stateless: bool,
    build_server: Callable[..., MCPServer],
    routed: bool,
    header_timeout: float,
) -> Served:
    """The service's ASGI app: client watch, the space's URL, body limit, session limits, then
    the SDK's streamable HTTP; and the gate of its calls."""
    from mcp.server.transport_security import TransportSecuritySettings

    from gitpatch.doors.hosted import CredentialFile, ResourceService, Spaces
    from gitpatch.doors.hosted.listen import allowed_hosts
    from gitpatch.doors.hosted.quota import Quotas
    from gitpatch.doors.hosted.watched import CheckedPerRequest
    from gitpatch.doors.hosted.workers import pool
    from gitpatch.doors.mcp._hosted_http import (
        BodyLimit,
        ClientWatch,
        SessionIdFilter,
        SessionLimit,
        SpaceRoute,
        auth_options,
        call_admission,
        service_toolset,
    )

    service = ResourceService(Spaces(data), on_change=on_change)
    config = service.spaces.config
    quotas = Quotas(config.call_limits)
    workers = pool()
    gate = CallGate(lambda owner: config.call_limits(owner).max_heavy_calls, workers.run)
    creds = CredentialFile(credentials)
    server = build_server(
        service_toolset(service),
        name="gitpatch-service",
        log_level="WARNING",
        offload=True,
        admit=call_admission(quotas, gate),
        **auth_options(creds, host, port),
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(SessionIdFilter())

    def limit() -> int:  # base64 of the largest file, plus room for the envelope
        return config.largest_file_limit() * 4 // 3 + 64 * 1024

    hosts, origins = allowed_hosts(host, allowed)
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        max_request_body_size=2**62,  # BodyLimit applies the current limit
        host=host,
        stateless_http=stateless,
        json_response=True,  # one JSON reply per call: no SSE stream to run per request
        session_idle_timeout=None if stateless else config.call_limits("").session_idle_seconds,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=hosts,
            allowed_origins=origins,
        ),
    )
    inner = app if stateless else SessionLimit(app, quotas, creds)
    workers.warm()  # heavy work's processes, forked before the first call that needs one
    guarded = ClientWatch(SpaceRoute(BodyLimit(inner, limit, creds, header_timeout), routed))
    return Served(CheckedPerRequest(guarded), gate, service.maintenance.wait)


def _run(sock: socket.socket, served: Served, header_timeout: float, per_address: int) -> None:
    """Serve ``served`` on ``sock`` under the connection guard (``_guard``) until stopped;
    SIGTERM drains the calls in flight."""
    import anyio
    import uvicorn

    from gitpatch.doors.hosted.connections import AcceptErrorFilter, Guard
    from gitpatch.doors.mcp._guard import IDLE_SECONDS, guarded_protocol

    class Draining(uvicorn.Server):
        """uvicorn's server, whose SIGTERM/SIGINT also drains the calls in flight: they get
        ``DRAIN_GRACE`` to finish, then their budgets stop them, so shutting down waits for
        no heavy call."""

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if not self.should_exit:
                timer = threading.Timer(DRAIN_GRACE, served.gate.drain)
                timer.daemon = True
                timer.start()
            super().handle_exit(sig, frame)

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            # here, not after serving: uvicorn raises the signal it caught again once it
            # served, and the process ends there
            await super().shutdown(sockets=sockets)
            if not served.settle(SETTLE_SECONDS):  # nothing else runs now: the loop may wait
                _log.warning("a packing run still runs at exit; a later run sweeps its leftovers")

    logging.getLogger("asyncio").addFilter(AcceptErrorFilter())
    guard = Guard.for_process(header_timeout, per_address)
    # A heavy call holds the GIL in Python loops between its checkpoints; a shorter switch
    # interval (5 ms by default) hands it to the event loop and light calls sooner.
    sys.setswitchinterval(0.001)
    config = uvicorn.Config(
        served.app,
        log_level="warning",
        lifespan="on",
        http=guarded_protocol(guard),
        timeout_keep_alive=IDLE_SECONDS,
    )
    web = Draining(config)
    _settle_garbage_collector()
    anyio.run(lambda: web.serve(sockets=[sock]))


#: The cyclic collector's first-generation threshold while serving (Python's default: 700).
GC_THRESHOLD = 20_000


def _settle_garbage_collector() -> None:
    """Keep the cyclic garbage collector off what serving allocates in bulk. Everything
    built until now (modules, the app, the SDK's models) lives as long as the process:
    ``gc.freeze`` moves it out of every collection, so a full collection no longer walks it.
    A call allocates thousands of short-lived container objects (the SDK's models, anyio's
    scopes, the request's dicts), which reference counting frees; at the default threshold
    the collector ran a young collection every ~700 of them, several per call. Cycles are
    still collected, in larger steps."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, older, oldest)


def _die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this process when its parent dies (a no-op elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _fork(child: Callable[[], None]) -> int:
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    code = 0
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _die_with_parent(parent)
        child()
    except BaseException:  # a worker reports and exits; the parent replaces it
        _log.exception("a service worker failed")
        code = 1
    finally:
        os._exit(code)


def _supervise(count: int, child: Callable[[], None], ready: Callable[[], None]) -> None:
    """Run ``count`` forked workers until SIGTERM/SIGINT, replacing any that dies; ``ready``
    once they are forked (the socket already listens, so no connection is refused)."""
    started = {_fork(child): time.monotonic() for _ in range(count)}
    stopping = False
    ready()

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True
        for pid in started:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while started:
        try:
            pid, _status = os.wait()
        except ChildProcessError:
            break
        born = started.pop(pid, None)
        if stopping or born is None:
            continue
        if time.monotonic() - born < 1.0:
            time.sleep(1.0)  # a worker that cannot start must not become a fork loop
        started[_fork(child)] = time.monotonic()


def serve(
    data: Path,
    credentials: Path,
    host: str,
    port: int,
    *,
    on_change: Callable[..., None] | None,
    ready: Callable[[str], None] | None,
    allowed: tuple[str, ...],
    workers: int,
    build_server: Callable[..., MCPServer],
    routed: bool = False,
    header_timeout: float = 10.0,
    per_address: int = 256,
) -> None:
    """See ``gitpatch.doors.mcp.serve_http`` (which passes its ``build_server``)."""
    from gitpatch.doors.hosted.listen import url_host

    sock = _listen(host, port)
    port = sock.getsockname()[1]
    data.mkdir(parents=True, exist_ok=True)
    url = f"http://{url_host(host)}:{port}/mcp"
    stateless = workers > 1

    def app() -> Served:
        return _app(
            data,
            credentials,
            host,
            port,
            on_change,
            allowed,
            stateless,
            build_server,
            routed,
            header_timeout,
        )

    def child() -> None:
        _run(sock, app(), header_timeout, per_address)

    if not stateless:
        served = app()
        if ready is not None:
            ready(url)
        _run(sock, served, header_timeout, per_address)
        return
    _supervise(workers, child, lambda: ready(url) if ready is not None else None)
