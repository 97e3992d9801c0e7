"""grep_resource's search: RE2 over the lines of a space's resources, stoppable by a budget.

RE2 matches in time linear in the line, but a pattern such as ``(a?){400}a{400}c`` still
costs about a second per 50,000-character line, inside one C call that no checkpoint can
interrupt. So a call that carries a budget (``gitpatch.core.budget``: the hosted service's
calls) searches in a process of its own, forked from a forkserver that has this module
loaded: the process checks the budget between lines and files, its CPU is capped by
``RLIMIT_CPU``, and the call kills it the moment its wall time is spent or it is stopped
(client gone, service shutting down). Without a budget (the library) the search runs in
the calling thread. Either way the patterns and results are the same: RE2 syntax, matched
per line, at most ``MAX_GREP_MATCHES`` lines.
"""

from __future__ import annotations

import math
import multiprocessing
import multiprocessing.connection
import os
import resource
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

import pygit2
import re2

from gitpatch.core.budget import Budget, checkpoint, current
from gitpatch.core.text import Document
from gitpatch.errors import GitpatchError, InvalidArguments
from gitpatch.store import Store

__all__ = ["INLINE_COST", "MAX_GREP_MATCHES", "as_text", "compile_pattern", "grep", "warm"]

#: grep_resource reports at most this many matching lines.
MAX_GREP_MATCHES = 500

Matches = tuple[list[dict[str, Any]], bool]


class _Pattern(Protocol):
    def search(self, text: str) -> object: ...


def compile_pattern(pattern: str) -> _Pattern:
    """``pattern`` compiled by RE2, whose matching time is linear in the text: a tenant's
    ``^(a+)+$`` cannot stall the service the way a backtracking engine lets it."""
    if not isinstance(pattern, str) or not pattern or len(pattern) > 1000:
        raise InvalidArguments(
            "pattern must be a non-empty regular expression of at most 1000 characters",
            hint="Pass a regular expression (RE2 syntax), e.g. 'version: \\d+'.",
        )
    options = re2.Options()
    options.log_errors = False  # a tenant's bad pattern is their error, not the server log's
    try:
        compiled: _Pattern = re2.compile(pattern, options=options)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else exc
        raise InvalidArguments(
            f"pattern is not a valid regular expression: {reason}",
            hint="Patterns use RE2 syntax: no backreferences (\\1) or lookaround ((?=...), "
            "(?<=...)); escape special characters (for a literal dot, write \\.).",
            details={"pattern": pattern},
        ) from None
    return compiled


def as_text(data: bytes) -> str | None:
    """``data`` as text, or None when it is not (binary, undecodable)."""
    try:
        return Document.from_bytes(data).text
    except GitpatchError:
        return None


def _paths(store: Store, head: pygit2.Oid, base: str) -> list[str]:
    return sorted(p for p in store.files(head) if not base or p == base or p.startswith(base + "/"))


def _read(store: Store, head: pygit2.Oid, paths: list[str]) -> Iterator[tuple[str, bytes]]:
    for path in paths:
        checkpoint()
        yield path, store.read(head, path) or b""


def _scan(files: Iterable[tuple[str, bytes]], regex: _Pattern) -> Matches:
    matches: list[dict[str, Any]] = []
    for path, data in files:
        text = as_text(data)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if not number & 255 or len(line) > 4096:
                checkpoint()
            if regex.search(line):
                if len(matches) == MAX_GREP_MATCHES:
                    return matches, True
                matches.append({"path": path, "line": number, "text": line})
    return matches, False


#: A search whose worst case (bytes x the pattern's RE2 program size) is at most this runs in
#: the calling thread even under a budget: about 20 ms at RE2's slowest here, less than
#: starting a process would cost.
INLINE_COST = 2_000_000


def grep(store: Store, head: pygit2.Oid, pattern: str, base: str) -> Matches:
    """Lines of the text files at or below ``base`` in ``head``'s tree matching ``pattern``
    (path, 1-based line number, text), and whether there were more than the limit."""
    regex = compile_pattern(pattern)
    paths = _paths(store, head, base)
    budget = current()
    if budget is None:
        return _scan(_read(store, head, paths), regex)
    size = max(1, int(getattr(regex, "programsize", 1)))
    read: list[tuple[str, bytes]] = []
    cost = 0
    for path, data in _read(store, head, paths):
        cost += len(data) * size
        if cost > INLINE_COST:
            return _in_process(budget, store.git_dir, head, pattern, base)
        read.append((path, data))
    return _scan(read, regex)


# -- the search's own process --------------------------------------------------------------------

_CONTEXT: list[Any] = []
_CONTEXT_LOCK = threading.Lock()


def _context() -> Any:
    with _CONTEXT_LOCK:
        if not _CONTEXT:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["__main__", __name__])
            _CONTEXT.append(ctx)
        return _CONTEXT[0]


def warm() -> None:
    """Start the forkserver now (in the background), so the first search that needs a
    process of its own does not pay for loading the modules (seconds on a busy machine)."""
    import multiprocessing.forkserver

    def start() -> None:
        _context()
        multiprocessing.forkserver.ensure_running()

    threading.Thread(target=start, name="gitpatch-grep-forkserver", daemon=True).start()


def _child(
    out: multiprocessing.connection.Connection,
    repo: str,
    head: str,
    pattern: str,
    base: str,
    cpu: float | None,
    wall: float | None,
) -> None:
    """Search in this process and send ("ok", matches) or ("error", the error's fields)."""
    os.nice(10)  # a long search yields the cores to the service's other calls
    if cpu is not None:  # the hard stop under the cooperative one
        limit = math.ceil(cpu) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 1))
    try:
        with Budget(cpu, wall).applied():
            store, commit = Store.open(repo), pygit2.Oid(hex=head)
            found = _scan(
                _read(store, commit, _paths(store, commit, base)), compile_pattern(pattern)
            )
        out.send(("ok", found))
    except GitpatchError as exc:
        out.send(("error", (exc.code, exc.message, exc.hint, exc.details)))
    finally:
        out.close()


def _in_process(budget: Budget, repo: Path, head: pygit2.Oid, pattern: str, base: str) -> Matches:
    ctx = _context()
    budget.check()
    left = budget.wall_left()
    cpu = budget.cpu_seconds
    cpu_left = None if cpu is None else max(0.0, cpu - budget.cpu_used())
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=_child,
        args=(send, str(repo), str(head), pattern, base, cpu_left, left),
        daemon=True,
    )
    proc.start()
    send.close()
    try:
        while not multiprocessing.connection.wait([receive, proc.sentinel], 0.02):
            budget.check()  # the wall time, or a stop from outside: the finally kills it
        budget.check()
        if not receive.poll(0):  # it died without an answer: killed by its CPU limit
            raise budget.error("its search used more than its CPU budget")
        try:
            kind, value = receive.recv()
        except EOFError:  # killed by its CPU limit after the poll saw the pipe close
            raise budget.error("its search used more than its CPU budget") from None
    finally:
        receive.close()
        if proc.is_alive():
            proc.kill()
        proc.join()
    if kind == "error":
        code, message, hint, details = value
        if code == "budget_exceeded":
            raise budget.error(details.get("reason", message))
        raise GitpatchError(code, message, hint, details)
    matches, truncated = value
    return matches, truncated
