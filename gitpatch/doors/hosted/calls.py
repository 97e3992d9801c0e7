"""Running the service's tool calls: a budget each, a fair share of the GIL, and a way out.

``CallGate.call(fingerprint, cpu, wall, request)`` is entered around each tool call, on the
event loop, once ``Quotas`` admitted it:

- **a budget** (``gitpatch.core.budget``): the credential's ``cpu_seconds`` and
  ``wall_seconds`` (credentials file), else ``DEFAULT_CPU_SECONDS`` and
  ``DEFAULT_WALL_SECONDS``; wall time runs from the request's arrival (reading and
  parsing it, waiting for a slot count). The budget is applied for the rest of the call and
  follows it into its worker thread;
- **a fair share**: matching is Python holding the GIL, so one tenant with eight heavy
  calls in eight threads would take the interpreter from every other tenant's calls. A call
  that has used ``HEAVY`` CPU seconds (50 ms; most calls never do) takes one of its
  credential's ``max_heavy_calls`` slots (``[calls]`` in ``spaces.toml``, 1 by default), or
  waits for one, asleep in its thread, within its wall time; and from then on it pauses at
  its checkpoints as long as it ran (``Budget``'s ``share``), so light calls of every
  tenant get the interpreter at least half the time. Light calls neither wait nor pause;
- **somewhere else for heavy work**: the budget's ``offload`` (``workers.Pool.run``) takes
  the work the engine judges heavy, and costly greps, to a worker process; such a call is
  heavy from the start (it takes its slot before its work is sent);
- **a way out**: the budgets of the calls of an HTTP request whose client went away
  (``Request.gone``), of a call its client cancelled (MCP ``notifications/cancelled``: the
  SDK cancels the call's scope, and the front end stops the budget with ``CANCELLED``), and
  of every call when the service drains (``drain``), are stopped:
  each call ends at its next checkpoint with ``budget_exceeded``, having written nothing
  (a call past its last checkpoint finishes its write and answers as usual), and frees its
  slot.

No MCP or HTTP here: the front end says which request a call belongs to and when its client
went away.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable

from gitpatch.core.budget import Budget, Offload

__all__ = ["DEFAULT_CPU_SECONDS", "DEFAULT_WALL_SECONDS", "CallGate", "Request"]

#: The CPU seconds a call may use when its credential names no ``cpu_seconds``.
DEFAULT_CPU_SECONDS = 2.0
#: The wall seconds a call may take (waiting for a slot included) without ``wall_seconds``.
DEFAULT_WALL_SECONDS = 5.0

#: A heavy call pauses this long after each such slice of CPU time (``Budget``'s ``share``).
SHARE = 0.005

#: How often a call waiting for a heavy-call slot looks whether it was stopped meanwhile.
_POLL = 0.05

GONE = "its client went away"
CANCELLED = "its client cancelled it"
DRAINING = "the service is shutting down"


class _Group:
    """Budgets stopped together, once, for one reason; one added after that stops at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._budgets: weakref.WeakSet[Budget] = weakref.WeakSet()
        self.reason: str | None = None

    def __len__(self) -> int:
        with self._lock:
            return len(self._budgets)

    def add(self, budget: Budget) -> None:
        with self._lock:
            self._budgets.add(budget)
            reason = self.reason
        if reason is not None:
            budget.stop(reason)

    def discard(self, budget: Budget) -> None:
        with self._lock:
            self._budgets.discard(budget)

    def stop(self, reason: str) -> None:
        with self._lock:
            self.reason = reason
            budgets = list(self._budgets)
        for budget in budgets:
            budget.stop(reason)


class Request:
    """The calls of one HTTP request, stopped together when its client goes away."""

    def __init__(self) -> None:
        self.calls = _Group()
        #: When the request arrived: its calls' wall time counts from here (reading and
        #: parsing a large request is part of the call).
        self.arrived = time.monotonic()

    @property
    def gone(self) -> bool:
        """Its client went away."""
        return self.calls.reason is not None

    def add(self, budget: Budget) -> None:
        """Stop ``budget`` with the request (at once if its client is already gone)."""
        self.calls.add(budget)

    def went_away(self) -> None:
        """The client closed the connection: stop every call of the request."""
        self.calls.stop(GONE)


class _Share:
    """The heavy-call slots of one credential, and how many of its calls hold a budget."""

    def __init__(self, slots: int) -> None:
        self.slots = threading.Semaphore(slots)
        self.size = slots
        self.users = 0


class _Slot:
    """One call's claim on its credential's heavy slots, taken when it becomes heavy."""

    def __init__(self, share: _Share, budget: Budget) -> None:
        self.share, self.budget = share, budget
        self.held = False

    def take(self) -> None:
        """Wait (in the call's thread, within its wall time) for a slot; raises when the
        budget ends first (spent, or stopped: the client went away, the service drains)."""
        while not self.share.slots.acquire(timeout=_POLL):
            self.budget.check(cpu=False)
        self.held = True

    def give_back(self) -> None:
        if self.held:
            self.held = False
            self.share.slots.release()


class CallGate:
    """Budgets, heavy-call slots and stops for the calls of one service process (module
    docstring)."""

    def __init__(self, heavy_slots: Callable[[str], int], offload: Offload | None = None) -> None:
        self.heavy_slots = heavy_slots
        #: Where each call's heavy pure work runs (``workers.Pool.run``); None: in its thread.
        self.offload = offload
        self._lock = threading.Lock()
        self._shares: dict[str, _Share] = {}
        self._calls = _Group()

    def in_flight(self) -> int:
        """How many calls hold a budget now."""
        return len(self._calls)

    def drain(self) -> None:
        """Stop every call in flight and every call that arrives from now on."""
        self._calls.stop(DRAINING)

    def _share(self, owner: str) -> _Share:
        size = self.heavy_slots(owner)
        with self._lock:
            share = self._shares.get(owner)
            if share is None or (share.size != size and not share.users):
                share = self._shares[owner] = _Share(size)
            share.users += 1
            return share

    def _leave(self, owner: str, share: _Share) -> None:
        with self._lock:
            share.users -= 1
            if not share.users and self._shares.get(owner) is share:
                del self._shares[owner]

    @contextlib.asynccontextmanager
    async def call(
        self,
        owner: str,
        cpu_seconds: float | None,
        wall_seconds: float | None,
        request: Request | None,
    ) -> AsyncIterator[Budget]:
        """Run one call of ``owner`` under its budget (module docstring)."""
        share = self._share(owner)
        slot: list[_Slot] = []
        budget = Budget(
            DEFAULT_CPU_SECONDS if cpu_seconds is None else cpu_seconds,
            DEFAULT_WALL_SECONDS if wall_seconds is None else wall_seconds,
            started=None if request is None else request.arrived,
            share=SHARE,
            on_heavy=lambda: slot[0].take(),
            offload=self.offload,
        )
        slot.append(_Slot(share, budget))
        self._calls.add(budget)
        if request is not None:
            request.add(budget)
        try:
            with budget.applied():
                yield budget
        finally:
            slot[0].give_back()
            self._leave(owner, share)
            self._calls.discard(budget)
