"""Running the service's tool calls: a budget each, a fair share of the workers, and a way out.

``CallGate.call(fingerprint, cpu, wall, request)`` is entered around each tool call, on the
event loop, once ``Quotas`` admitted it:

- **a budget** (``gitpatch.core.budget``): the credential's ``cpu_seconds`` and
  ``wall_seconds`` (credentials file), else ``DEFAULT_CPU_SECONDS`` and
  ``DEFAULT_WALL_SECONDS``; wall time runs from here, so waiting for a turn counts. The
  budget is applied for the rest of the call and follows it into its worker thread;
- **a turn**: each credential runs at most ``max_running_calls`` (``[calls]`` in
  ``spaces.toml``) calls at once in worker threads; its other calls wait here, on the loop,
  holding no thread. Matching is Python holding the GIL: one tenant with eight heavy calls
  in eight threads would take seven ninths of the interpreter from every other tenant;
- **a way out**: the budgets of the calls of an HTTP request whose client went away
  (``Request.gone``), and of every call when the service drains (``drain``), are stopped:
  each call ends at its next checkpoint with ``budget_exceeded``, having written nothing
  (a call past its last checkpoint finishes its write and answers as usual), and frees its
  slot.

No MCP or HTTP here: the front end says which request a call belongs to and when its client
went away.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import weakref
from collections.abc import AsyncIterator, Callable

import anyio

from gitpatch.core.budget import Budget

__all__ = ["DEFAULT_CPU_SECONDS", "DEFAULT_WALL_SECONDS", "CallGate", "Request"]

#: The CPU seconds a call may use when its credential names no ``cpu_seconds``.
DEFAULT_CPU_SECONDS = 2.0
#: The wall seconds a call may take (waiting for its turn included) without ``wall_seconds``.
DEFAULT_WALL_SECONDS = 5.0

#: How often a call waiting for its turn looks whether it was stopped meanwhile.
_POLL = 0.05

GONE = "its client went away"
DRAINING = "the service is shutting down"


class Request:
    """The calls of one HTTP request, stopped together when its client goes away."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._budgets: weakref.WeakSet[Budget] = weakref.WeakSet()
        self.gone = False

    def add(self, budget: Budget) -> None:
        """Stop ``budget`` with the request (at once if its client is already gone)."""
        with self._lock:
            self._budgets.add(budget)
            if not self.gone:
                return
        budget.stop(GONE)

    def went_away(self) -> None:
        """The client closed the connection: stop every call of the request."""
        with self._lock:
            self.gone = True
            budgets = list(self._budgets)
        for budget in budgets:
            budget.stop(GONE)


@dataclasses.dataclass
class _Share:
    limiter: anyio.CapacityLimiter
    waiting: int = 0


class CallGate:
    """Budgets, turns and stops for the calls of one service process (module docstring)."""

    def __init__(self, running: Callable[[str], int]) -> None:
        self.running = running
        self._lock = threading.Lock()
        self._shares: dict[str, _Share] = {}
        self._budgets: weakref.WeakSet[Budget] = weakref.WeakSet()
        self.draining = False

    def in_flight(self) -> int:
        """How many calls hold a budget now (waiting for a turn or running)."""
        with self._lock:
            return len(self._budgets)

    def drain(self) -> None:
        """Stop every call in flight and every call that arrives from now on."""
        with self._lock:
            self.draining = True
            budgets = list(self._budgets)
        for budget in budgets:
            budget.stop(DRAINING)

    def _share(self, owner: str) -> _Share:
        limit = self.running(owner)
        with self._lock:
            share = self._shares.get(owner)
            if share is None:
                share = self._shares[owner] = _Share(anyio.CapacityLimiter(limit))
            elif share.limiter.total_tokens != limit:
                share.limiter.total_tokens = limit
            share.waiting += 1
            return share

    def _leave(self, owner: str, share: _Share) -> None:
        with self._lock:
            share.waiting -= 1
            if not share.waiting and self._shares.get(owner) is share:
                del self._shares[owner]

    @contextlib.asynccontextmanager
    async def call(
        self,
        owner: str,
        cpu_seconds: float | None,
        wall_seconds: float | None,
        request: Request | None,
    ) -> AsyncIterator[Budget]:
        """Run one call of ``owner`` under its budget, in its turn (module docstring)."""
        budget = Budget(
            DEFAULT_CPU_SECONDS if cpu_seconds is None else cpu_seconds,
            DEFAULT_WALL_SECONDS if wall_seconds is None else wall_seconds,
        )
        with self._lock:
            self._budgets.add(budget)
            draining = self.draining
        if draining:
            budget.stop(DRAINING)
        if request is not None:
            request.add(budget)
        share = self._share(owner)
        try:
            await self._turn(share.limiter, budget)
            try:
                with budget.applied():
                    yield budget
            finally:
                share.limiter.release()
        finally:
            self._leave(owner, share)
            with self._lock:
                self._budgets.discard(budget)

    @staticmethod
    async def _turn(limiter: anyio.CapacityLimiter, budget: Budget) -> None:
        """Wait for one of the owner's running slots, within the budget's wall time."""
        while True:
            budget.check(cpu=False)  # spent waiting, or stopped: nothing ran, nothing to undo
            left = budget.wall_left()
            with anyio.move_on_after(_POLL if left is None else min(_POLL, left)):
                await limiter.acquire()
                return
