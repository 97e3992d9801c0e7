"""Per-credential counters: open sessions, tool calls at once, and the tool-invocation allowance.

The limits come from ``[calls]`` in ``spaces.toml`` (``limits.CallLimits``), read on every
decision, so a changed limit applies to the next call. Counts live in this process's memory:
they restart at zero with the server, and with several workers each worker counts its own
(the documented per-process meaning). The clock is injected so expiry is testable without
waiting. No HTTP or MCP here: the front end says when a session opens, is used or closes,
and enters ``call`` around each tool call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import threading
import time
from collections.abc import Callable, Iterator

from gitpatch.doors.hosted.limits import CallLimits
from gitpatch.errors import CallLimitReached

__all__ = ["Quotas"]


@dataclasses.dataclass
class _Session:
    owner: str
    last_used: float
    busy: int = 0


@dataclasses.dataclass
class _Window:
    start: float
    calls: int = 0


class Quotas:
    """Counters per credential fingerprint, each checked against ``limits(fingerprint)``."""

    def __init__(
        self,
        limits: Callable[[str], CallLimits],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = limits
        self.clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._running: dict[str, int] = {}
        self._windows: dict[str, _Window] = {}
        self._keys = itertools.count(1)

    # -- sessions ------------------------------------------------------------------------------

    def _expire(self, now: float) -> None:
        for sid, s in list(self._sessions.items()):
            if not s.busy and now - s.last_used > self.limits(s.owner).session_idle_seconds:
                del self._sessions[sid]

    def sessions_of(self, owner: str) -> int:
        """How many sessions ``owner`` holds open now (idle ones past their time dropped)."""
        with self._lock:
            self._expire(self.clock())
            return sum(1 for s in self._sessions.values() if s.owner == owner)

    def reserve(self, owner: str) -> str:
        """Hold a session slot for ``owner`` while its opening request runs (a key to pass to
        ``opened`` or ``closed``); refuses (``call_limit_reached``) at its session limit."""
        limit = self.limits(owner).max_sessions
        with self._lock:
            now = self.clock()
            self._expire(now)
            held = sum(1 for s in self._sessions.values() if s.owner == owner)
            if held >= limit:
                raise CallLimitReached(
                    f"this credential already holds {held} open sessions, its limit is {limit}",
                    hint="Reuse an open session, or close one (an HTTP DELETE on it) before "
                    "opening another; unused sessions close by themselves after a while.",
                    details={"limit": limit, "sessions": held, "kind": "sessions"},
                )
            key = f"opening:{next(self._keys)}"
            self._sessions[key] = _Session(owner, now, busy=1)
            return key

    def opened(self, key: str, session: str) -> None:
        """The opening request of ``key`` (from ``reserve``) created ``session``."""
        with self._lock:
            found = self._sessions.pop(key, None)
            if found is not None:
                self._sessions[session] = _Session(found.owner, self.clock())

    def closed(self, session: str) -> None:
        """Forget ``session`` (closed by the client, unknown to the server, or expired)."""
        with self._lock:
            self._sessions.pop(session, None)

    @contextlib.contextmanager
    def using(self, session: str) -> Iterator[None]:
        """Mark ``session`` in use for one request: a session is never idle while in use."""
        with self._lock:
            found = self._sessions.get(session)
            if found is not None:
                found.busy += 1
        try:
            yield
        finally:
            with self._lock:
                if found is not None:
                    found.busy -= 1
                    found.last_used = self.clock()

    # -- tool calls ----------------------------------------------------------------------------

    def _count(self, owner: str, limits: CallLimits, now: float) -> None:
        window = self._windows.get(owner)
        if window is None or now - window.start >= limits.tool_call_window_seconds:
            window = self._windows[owner] = _Window(now)
        if window.calls >= limits.max_tool_calls:
            left = max(1, int(window.start + limits.tool_call_window_seconds - now))
            raise CallLimitReached(
                f"this credential has used its allowance of {limits.max_tool_calls} tool calls "
                f"per {limits.tool_call_window_seconds} s",
                hint=f"Wait about {left} s for the next window, or ask for a larger allowance.",
                details={"limit": limits.max_tool_calls, "kind": "tool_calls", "retry_after": left},
            )
        window.calls += 1

    @contextlib.contextmanager
    def call(self, owner: str) -> Iterator[None]:
        """Count one tool call of ``owner`` against its allowance and hold one of its
        concurrent-call slots while it runs; refuses (``call_limit_reached``) over either."""
        limits = self.limits(owner)
        with self._lock:
            running = self._running.get(owner, 0)
            if running >= limits.max_concurrent_calls:
                raise CallLimitReached(
                    f"this credential already has {running} tool calls running, its limit is "
                    f"{limits.max_concurrent_calls}",
                    hint="Wait for a call to finish before sending the next one.",
                    details={"limit": limits.max_concurrent_calls, "kind": "concurrent_calls"},
                )
            self._count(owner, limits, self.clock())
            self._running[owner] = running + 1
        try:
            yield
        finally:
            with self._lock:
                self._running[owner] -= 1
                if not self._running[owner]:
                    del self._running[owner]
