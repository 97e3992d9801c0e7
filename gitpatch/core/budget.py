"""A budget per call: the CPU time and wall time one call may take, checked where work happens.

A ``Budget`` is made when a call starts and applied to it (``with budget.applied():``); the
code that can run long (matching and its fuzzy level, ``replace_all``, a miss's closest-region
search, grep) calls ``checkpoint()`` in its loops. Once the budget is spent, or stopped from
outside (``Budget.stop``: the client went away, the service is shutting down), the next
checkpoint raises ``BudgetExceeded`` and every later one raises again, so code that tries
alternatives cannot swallow it. The commit step checks it last, before anything is written:
a call over its budget changes nothing.

The budget travels in a context variable: it follows the call into the worker thread that
runs it (``asyncio.to_thread``, anyio's ``run_sync``, ``contextvars.Context.run``) and costs
nothing when no budget is applied (the library's default). CPU time is the CPU of the threads
that worked for the call, each counted from the first checkpoint it passed (``run_as`` keeps
a thread's work for another call out of this one's count); wall time runs
from the budget's creation, so time spent waiting for a turn counts.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from gitpatch.errors import BudgetExceeded

__all__ = ["HEAVY", "Budget", "Offload", "checkpoint", "current", "run_as"]

#: CPU seconds after which a call counts as heavy (``Budget``'s ``share``).
HEAVY = 0.05

T = TypeVar("T")

#: ``Budget``'s ``offload``: ``offload(work, *args)`` is ``work(*args)``, run elsewhere.
Offload = Callable[..., Any]

_CURRENT: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "gitpatch_budget", default=None
)


class Budget:
    """CPU seconds and wall seconds one call may use (None: no limit of that kind).

    A call that has used more than ``HEAVY`` CPU seconds is heavy. ``on_heavy`` is then
    called once, at that checkpoint, in the call's thread: it may wait (a server lets few
    heavy calls run at once) or raise. ``share``: from then on the call pauses at a checkpoint
    for ``share`` seconds after each ``share`` CPU seconds, so threads of other calls in the
    same process get the interpreter (the GIL) at least half the time: a server's light
    calls, which give it up at every system call and must win it back each time, otherwise
    wait behind a heavy one at every step. Light calls never pause or wait.

    ``offload(work, *args)``: runs ``work(*args)`` (a pure function of picklable values, such
    as the engine's apply on a file's bytes) somewhere the call's own process does not wait
    on, under this budget, and returns what it returns or raises what it raises (a server's
    pool of worker processes). The engine hands it the work it judges heavy; None: all work
    runs in the call's thread.
    """

    def __init__(
        self,
        cpu_seconds: float | None = None,
        wall_seconds: float | None = None,
        *,
        what: str = "this call",
        started: float | None = None,
        share: float | None = None,
        on_heavy: Callable[[], None] | None = None,
        offload: Offload | None = None,
    ) -> None:
        self.cpu_seconds = cpu_seconds
        self.wall_seconds = wall_seconds
        self.what = what
        #: When the wall time started (``time.monotonic``): now, or when the call arrived.
        self.started = time.monotonic() if started is None else started
        self._wall_end = None if wall_seconds is None else self.started + wall_seconds
        self._lock = threading.Lock()
        self._marks: dict[int, float] = {}  # thread: its CPU clock when last counted
        self._used = 0.0
        self._stopped: str | None = None
        self.exceeded: BudgetExceeded | None = None
        #: See ``share`` in the class docstring: CPU seconds between pauses (None: never).
        self.share = share
        self.on_heavy = on_heavy
        self._heavy_at = HEAVY  # CPU seconds of the next pause (inf: never)
        #: See ``offload`` in the class docstring: where heavy pure work runs (None: here).
        self.offload = offload

    # -- from outside ---------------------------------------------------------------------------

    def stop(self, reason: str) -> None:
        """End the call at its next checkpoint (``reason`` completes "stopped: ...")."""
        with self._lock:
            if self._stopped is None:
                self._stopped = reason

    @property
    def stopped(self) -> str | None:
        """Why the budget was stopped from outside, or None."""
        return self._stopped

    def wall_left(self) -> float | None:
        """Seconds of wall time left (never negative), or None without a wall limit."""
        if self._wall_end is None:
            return None
        return max(0.0, self._wall_end - time.monotonic())

    def cpu_used(self) -> float:
        """CPU seconds the call's threads used, as of their last checkpoints."""
        with self._lock:
            return self._used

    def become_heavy(self) -> None:
        """The call is heavy from now on, whatever CPU it used so far (its work is about to
        run elsewhere, where checkpoints here do not see it): ``on_heavy`` is called now, in
        the call's thread, unless it already was."""
        with self._lock:
            became = self._heavy_at == HEAVY
            if became:
                self._heavy_at = math.inf if self.share is None else self._used + self.share
        if became and self.on_heavy is not None:
            self.on_heavy()

    def charge(self, cpu_seconds: float) -> None:
        """Count CPU seconds used for the call outside its threads (a worker process's)."""
        with self._lock:
            self._used += max(0.0, cpu_seconds)

    # -- from the call --------------------------------------------------------------------------

    def check(self, *, cpu: bool = True) -> None:
        """Raise ``BudgetExceeded`` when the budget is spent or stopped (and ever after);
        ``cpu=False`` from a thread that does not work for the call (an event loop), whose
        CPU time must not count."""
        if self.exceeded is not None:
            raise self.exceeded
        why = self._stopped
        if why is None and self._wall_end is not None and time.monotonic() > self._wall_end:
            why = f"it ran past its wall-time budget of {self.wall_seconds:g} s"
        if why is None and cpu and self.cpu_seconds is not None:
            now = time.thread_time()
            me = threading.get_ident()
            with self._lock:
                self._used += now - self._marks.get(me, now)
                self._marks[me] = now
                used = self._used
                heavy = used > self._heavy_at and used <= self.cpu_seconds
                became = heavy and self._heavy_at == HEAVY
                if heavy:
                    self._heavy_at = math.inf if self.share is None else used + self.share
            if used > self.cpu_seconds:
                why = f"it used more than its CPU budget of {self.cpu_seconds:g} s"
            elif heavy:
                if became and self.on_heavy is not None:
                    self.on_heavy()
                if self.share is not None:
                    time.sleep(self.share)
        if why is not None:
            self.exceeded = self.error(why)
            raise self.exceeded

    def _count_here(self, *, reset: bool = False) -> None:
        """Count this thread's CPU since its last count (``reset``: start counting from now,
        leaving out what it did meanwhile for someone else)."""
        now = time.thread_time()
        me = threading.get_ident()
        with self._lock:
            if not reset:
                self._used += now - self._marks.get(me, now)
            self._marks[me] = now

    def error(self, why: str) -> BudgetExceeded:
        """The error a call over its budget answers (``why``: what happened)."""
        return BudgetExceeded(
            f"{self.what} was stopped before it changed anything: {why}",
            hint="Nothing was changed. Make the call cheaper and send it again: a narrower "
            "edit (a longer old_string that occurs once rather than replace_all of a short "
            "one, fewer edits per call), a smaller file, or a grep with a path and a simpler "
            "pattern. A call stopped because the service was shutting down can be sent again "
            "as it is.",
            details={
                "cpu_seconds": self.cpu_seconds,
                "wall_seconds": self.wall_seconds,
                "reason": why,
            },
        )

    @contextlib.contextmanager
    def applied(self) -> Iterator[Budget]:
        """Make this the budget of the code run inside (and of threads it hands work to
        with its context)."""
        token = _CURRENT.set(self)
        try:
            self.check(cpu=False)
            yield self
        finally:
            _CURRENT.reset(token)


def run_as(context: contextvars.Context, work: Callable[..., T], *args: Any) -> T:
    """Run ``work`` in ``context``, another call's (a batch that builds several calls' changes
    in one thread): the CPU it uses counts for that call's budget, never for this one's."""
    mine, theirs = _CURRENT.get(), context.get(_CURRENT)
    if mine is theirs:
        return context.run(work, *args)
    if mine is not None:
        mine._count_here()
    if theirs is not None:
        theirs._count_here(reset=True)
    try:
        return context.run(work, *args)
    finally:
        if theirs is not None:
            theirs._count_here()
        if mine is not None:
            mine._count_here(reset=True)


def current() -> Budget | None:
    """The budget applied to the running call, or None."""
    return _CURRENT.get()


def checkpoint() -> None:
    """Raise ``BudgetExceeded`` when the running call's budget is spent or stopped; nothing
    without a budget. Cheap enough for a loop that calls it every few thousand steps."""
    budget = _CURRENT.get()
    if budget is not None:
        budget.check()
