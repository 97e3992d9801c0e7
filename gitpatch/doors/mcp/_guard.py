"""What a connection may hold before it has sent a request: the service's connection guard.

uvicorn closes nothing that sent half a request (it has no request-header timeout), so idle
half-sent connections would pile up until the process runs out of descriptors, and then the
service's own files (repositories, objects, refs) fail to open. ``guarded_protocol`` is
uvicorn's h11 protocol with three rules, all decided on the event loop, before any work:

- **header timeout**: a connection has ``header_timeout`` seconds, from when it opened or
  its last response ended, to send a whole request head; then it is closed. Between requests
  uvicorn's keep-alive timeout (``IDLE_SECONDS``) closes it sooner;
- **per address**: a client address holds at most ``per_address`` connections; past that,
  its oldest connection that has no request running is closed (never one with a request in
  flight), or the new one when every other is busy;
- **descriptor reserve**: the process holds at most its descriptor limit minus a reserve of
  connections, by the same rule over every address, so the service's own files always find
  a descriptor.

The counting is ``gitpatch.doors.hosted.connections.Guard``'s (with the accept-error log
filter); the timers and the hooks into uvicorn are here.

A connection that has not sent a request has no credential, so these rules are what an
unauthenticated client can cost: a bounded, short-lived share of descriptors, and nothing an
authenticated tenant's running call needs.
"""

from __future__ import annotations

import asyncio
import contextlib

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from gitpatch.doors.hosted.connections import Guard

__all__ = ["CLIENT_GONE", "IDLE_SECONDS", "guarded_protocol"]

#: uvicorn's keep-alive timeout: an idle connection between requests is closed after this.
IDLE_SECONDS = 5
#: The scope key of what to call when the connection of a request still running is lost (its
#: client went away): an app that must know sets it (``_hosted_http.ClientWatch``), and the
#: protocol calls it, so no task has to wait on the connection per request.
CLIENT_GONE = "gitpatch.client_gone"


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
            gone = self.cycle.scope.get(CLIENT_GONE) if self.busy() else None
            super().connection_lost(exc)
            if callable(gone):
                gone()

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
