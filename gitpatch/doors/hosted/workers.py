"""The service's heavy pure work in a small pool of worker processes, stopped by its budget.

A call's heavy steps are C calls that hold the interpreter for tens of milliseconds where no
checkpoint can let another call in: ``bytes.count`` and ``bytes.join`` over a large file,
building its lines, fuzzy matching a miss against every line, one RE2 search of a long line.
In the server's process they would make every other tenant's call wait at each step. So the
engine (``gitpatch.engine.weight`` decides what is heavy) and grep (``grepping``) hand such
work to ``Pool.run``, the ``offload`` of every call's budget (``calls.CallGate``):

- the work is a pure function of picklable values (a proposal and the file's bytes; a
  repository path, a commit and a pattern): it reads nothing the call did not name and
  writes nothing, so its result, or its error, is the same as in the call's own thread, and
  the write stays in the one write path;
- the call first becomes heavy (``Budget.become_heavy``: it takes one of its credential's
  heavy-call slots, or waits for one), then waits for an idle worker of the pool (``size``,
  one per core), asleep, within its wall time;
- a worker is forked from a forkserver that has the engine loaded, runs at ``nice`` 10, and
  runs each job under the call's budget (its checkpoints stop it with the call's own answer)
  with ``RLIMIT_CPU`` as the hard stop under them;
- the call's thread waits with its budget's eye open: a budget spent or stopped (the client
  went away or cancelled the call, the service drains) kills the worker at once, and the
  pool forks a new one when it next needs one. The worker's CPU counts for the call.

Workers serve one job at a time and end with the service (their pipe closes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import multiprocessing
import multiprocessing.connection
import os
import resource
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from gitpatch.core.budget import Budget, current
from gitpatch.errors import GitpatchError, InternalError, error_for_code

__all__ = ["NICE", "Pool", "pool"]

T = TypeVar("T")

#: Workers run at this niceness: the service's own threads get the cores first.
NICE = 10
#: How often a call waiting for (or on) a worker looks at its budget.
_POLL = 0.02

_CONTEXT: list[Any] = []
_CONTEXT_LOCK = threading.Lock()


def _context() -> Any:
    """The forkserver workers are forked from, with the work's modules loaded once."""
    with _CONTEXT_LOCK:
        if not _CONTEXT:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(
                ["__main__", "gitpatch.engine", "gitpatch.doors.hosted.grepping", __name__]
            )
            _CONTEXT.append(ctx)
        return _CONTEXT[0]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _serve(jobs: multiprocessing.connection.Connection) -> None:
    """A worker: run jobs until the service closes the pipe."""
    os.nice(NICE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGXCPU ends it without a core file
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    while True:
        try:
            work, args, cpu, wall, started = jobs.recv()
        except (EOFError, OSError):
            return
        before = _cpu()
        if cpu is not None:  # the hard stop under the checkpoints: SIGXCPU ends the worker
            limit = math.ceil(before + cpu) + 1
            if hard != resource.RLIM_INFINITY:
                limit = min(limit, hard)
            resource.setrlimit(resource.RLIMIT_CPU, (limit, hard))
        try:
            with Budget(cpu, wall, started=started).applied():
                reply: tuple[str, Any] = ("ok", work(*args))
        except GitpatchError as exc:
            reply = ("error", (exc.code, exc.message, exc.hint, exc.details))
        except Exception as exc:  # noqa: BLE001 - told to the call as an internal error
            reply = ("crash", f"{type(exc).__name__}: {exc}")
        jobs.send((*reply, _cpu() - before))


@dataclasses.dataclass
class _Worker:
    process: Any
    jobs: multiprocessing.connection.Connection

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.jobs.close()
        if self.process.is_alive():
            self.process.kill()
        self.process.join()


class Pool:
    """At most ``size`` worker processes, forked when first needed (or by ``warm``)."""

    def __init__(self, size: int | None = None) -> None:
        self.size = size or max(1, min(4, os.cpu_count() or 1))
        self._cond = threading.Condition()
        self._idle: list[_Worker] = []
        self._count = 0  # workers alive: idle or running a job
        self._alive: list[_Worker] = []
        self.jobs = 0  # jobs sent, for the service's tests and figures
        self.owner = os.getpid()

    def pids(self) -> list[int]:
        """The process ids of the workers alive now (idle or running a job)."""
        with self._cond:
            return [w.process.pid for w in self._alive]

    def busy(self) -> list[int]:
        """The process ids of the workers running a job now."""
        with self._cond:
            return [w.process.pid for w in self._alive if w not in self._idle]

    def close(self) -> None:
        """Kill the idle workers (those running a job end with it: their pipe is closed)."""
        with self._cond:
            idle, self._idle = self._idle, []
            self._count -= len(idle)
            for worker in idle:
                self._alive.remove(worker)
        for worker in idle:
            worker.kill()

    def warm(self) -> None:
        """Fork the workers now, in the background, so the first heavy call does not wait for
        the forkserver to load the engine (a second or more on a busy machine)."""

        def start() -> None:
            with self._cond:
                wanted = self.size - self._count
                self._count += wanted
            for _ in range(wanted):
                try:
                    worker = self._fork()
                except Exception:  # noqa: BLE001 - a worker is forked again when needed
                    self._give_back(None)
                    continue
                self._give_back(worker)

        threading.Thread(target=start, name="gitpatch-workers", daemon=True).start()

    def run(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` in a worker, under the running call's budget (module docstring);
        without a budget, here."""
        budget = current()
        if budget is None:
            return work(*args)
        budget.become_heavy()
        worker = self._take(budget)
        reply: tuple[str, Any, float] | None = None
        try:
            reply = self._job(worker, budget, work, args)
        finally:
            self._give_back(worker if reply is not None else None, dead=worker)
        kind, value, cpu = reply
        budget.charge(cpu)
        if kind == "ok":
            result: T = value
            return result
        if kind == "crash":
            raise InternalError(f"a worker process failed: {value}")
        code, message, hint, details = value
        if code == "budget_exceeded":
            budget.check()  # the call's own words (its CPU, counting the worker's, or its time)
            raise budget.error(str(details.get("reason", message)))
        raise error_for_code(code, message, hint, details)

    def _job(
        self, worker: _Worker, budget: Budget, work: Callable[..., Any], args: tuple[Any, ...]
    ) -> tuple[str, Any, float]:
        cpu = budget.cpu_seconds
        left = None if cpu is None else max(0.0, cpu - budget.cpu_used())
        self.jobs += 1
        try:
            worker.jobs.send((work, args, left, budget.wall_seconds, budget.started))
        except OSError:  # it died while idle (killed from outside): the call is not at fault
            raise InternalError("a worker process of the service ended unexpectedly") from None
        ready = [worker.jobs, worker.process.sentinel]
        while not multiprocessing.connection.wait(ready, _POLL):
            budget.check()  # spent or stopped: the caller's finally kills the worker
        budget.check()
        try:
            reply: tuple[str, Any, float] = worker.jobs.recv()
        except (EOFError, OSError):  # it died without an answer: its CPU limit
            raise budget.error(f"it used more than its CPU budget of {cpu:g} s") from None
        return reply

    def _take(self, budget: Budget) -> _Worker:
        with self._cond:
            while not self._idle and self._count >= self.size:
                self._cond.wait(_POLL)
                budget.check(cpu=False)
            if self._idle:
                return self._idle.pop()
            self._count += 1
        try:
            worker = self._fork()
        except BaseException:
            self._give_back(None)
            raise
        return worker

    def _fork(self) -> _Worker:
        ctx = _context()
        mine, theirs = ctx.Pipe(duplex=True)
        process = ctx.Process(target=_serve, args=(theirs,), daemon=True)
        process.start()
        theirs.close()
        worker = _Worker(process, mine)
        with self._cond:
            self._alive.append(worker)
        return worker

    def _give_back(self, worker: _Worker | None, dead: _Worker | None = None) -> None:
        """Make ``worker`` idle again; None: the worker (``dead``, if any) is gone."""
        if worker is None and dead is not None:
            dead.kill()
        with self._cond:
            if worker is None and dead in self._alive:
                self._alive.remove(dead)
            if worker is None:
                self._count -= 1
            else:
                self._idle.append(worker)
            self._cond.notify()


_POOL: list[Pool] = []
_POOL_LOCK = threading.Lock()


def pool() -> Pool:
    """This process's pool (made on first use; a forked process makes its own)."""
    with _POOL_LOCK:
        if not _POOL or _POOL[0].owner != os.getpid():
            _POOL[:] = [Pool()]
        return _POOL[0]
