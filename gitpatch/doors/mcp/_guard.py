"""What a connection may hold before it has sent a request: the service's connection guard.

uvicorn closes nothing that sent half a request (it has no request-header timeout), so idle
half-sent connections would pile up until the process runs out of descriptors, and then the
service's own files (repositories, objects, refs) fail to open. ``guarded_protocol`` is
uvicorn's h11 protocol with four rules, all decided on the event loop, before any work:

- **header timeout**: a connection has ``header_timeout`` seconds, from when it opened or
  its last response ended, to send a whole request head; then it is closed. Between requests
  uvicorn's keep-alive timeout (``IDLE_SECONDS``) closes it sooner;
- **per address**: a client address holds at most ``per_address`` connections; past that,
  its oldest connection that has no request running is closed (never one with a request in
  flight), or the new one when every other is busy;
- **descriptor reserve**: the process holds at most its descriptor limit minus a reserve
  (``reserve_for``) of connections, by the same rule over every address, so the service's
  own files always find a descriptor;
- **accept errors** (``socket.accept() out of system resource``, should the limit be hit
  anyway) are logged once per ``LOG_EVERY`` seconds with a count, not per attempt.

A connection that has not sent a request has no credential, so these rules are what an
unauthenticated client can cost: a bounded, short-lived share of descriptors, and nothing an
authenticated tenant's running call needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import resource
import time
from collections import OrderedDict
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = [
    "IDLE_SECONDS",
    "AcceptErrorFilter",
    "Guard",
    "guarded_protocol",
    "reserve_for",
]

_log = logging.getLogger("gitpatch.doors.hosted")

#: uvicorn's keep-alive timeout: an idle connection between requests is closed after this.
IDLE_SECONDS = 5
#: Accept errors are logged at most once per this many seconds.
LOG_EVERY = 60.0


def reserve_for(limit: int) -> int:
    """The descriptors kept for the service's own files under a limit of ``limit``."""
    return max(64, limit // 4)


@dataclasses.dataclass
class Guard:
    """The open connections of one process, oldest first, and the rules' settings."""

    header_timeout: float = 10.0
    per_address: int = 256
    max_connections: int = 0  # 0: from the descriptor limit (see ``for_process``)
    open: OrderedDict[Any, None] = dataclasses.field(default_factory=OrderedDict)
    by_address: dict[str, OrderedDict[Any, None]] = dataclasses.field(default_factory=dict)

    @classmethod
    def for_process(cls, header_timeout: float, per_address: int) -> Guard:
        """A guard whose connection cap is this process's descriptor limit minus the reserve."""
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        limit = soft if soft != resource.RLIM_INFINITY else 1 << 20
        cap = max(16, limit - reserve_for(limit))
        return cls(header_timeout=header_timeout, per_address=per_address, max_connections=cap)

    def admit(self, conn: Any, address: str) -> bool:
        """Count ``conn``; closes older idle connections past a cap (``drop``, which forgets
        them). False: refuse ``conn`` (not counted)."""
        mine = self.by_address.setdefault(address, OrderedDict())
        mine[conn] = None
        self.open[conn] = None
        for group, cap in ((mine, self.per_address), (self.open, self.max_connections)):
            while len(group) > cap:
                victim = next((c for c in group if c is not conn and not c.busy()), None)
                if victim is None:
                    self.forget(conn, address)
                    return False
                victim.drop()
        return True

    def forget(self, conn: Any, address: str) -> None:
        """``conn`` closed, or is closing: it no longer counts."""
        self.open.pop(conn, None)
        mine = self.by_address.get(address)
        if mine is not None:
            mine.pop(conn, None)
            if not mine:
                del self.by_address[address]


def guarded_protocol(guard: Guard) -> type[H11Protocol]:
    """uvicorn's h11 protocol under ``guard``'s rules (pass it as ``Config(http=...)``)."""

    class Guarded(H11Protocol):
        _timer: asyncio.TimerHandle | None = None
        _address = ""
        _dropped = False

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._address = self.client[0] if self.client else ""
            if not guard.admit(self, self._address):
                self.drop()
                return
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            guard.forget(self, self._address)
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.busy():
                self._disarm()
            elif self._timer is None:  # bytes of a next request: its head has the same time
                self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.busy() and not self.transport.is_closing():
                self._arm()

        def busy(self) -> bool:
            """A request is running (its head arrived and its response is not finished)."""
            return self.cycle is not None and not self.cycle.response_complete

        def drop(self) -> None:
            """Close the connection (it has no request running); it stops counting now."""
            self._disarm()
            guard.forget(self, self._address)
            if self._dropped or self.transport.is_closing():
                return
            self._dropped = True
            with contextlib.suppress(h11.LocalProtocolError):  # mid-head: nothing to say
                self.conn.send(h11.ConnectionClosed())
            self.transport.close()

        def _arm(self) -> None:
            self._disarm()
            self._timer = self.loop.call_later(guard.header_timeout, self._expired)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _expired(self) -> None:
            self._timer = None
            if not self.busy():
                self.drop()

    return Guarded


class AcceptErrorFilter(logging.Filter):
    """Lets one ``socket.accept() out of system resource`` record through per ``LOG_EVERY``
    seconds, saying how many were held back since; every other record passes."""

    def __init__(self) -> None:
        super().__init__()
        self._last = -LOG_EVERY
        self._held = 0

    def filter(self, record: logging.LogRecord) -> bool:
        """False for an accept error logged less than ``LOG_EVERY`` seconds ago."""
        if "socket.accept() out of system resource" not in record.getMessage():
            return True
        now = time.monotonic()
        if now - self._last < LOG_EVERY:
            self._held += 1
            return False
        if self._held:
            record.msg = f"{record.getMessage()} ({self._held} more since the last one)"
            record.args = None
        self._last, self._held = now, 0
        return True
