"""grep_resource's search: RE2 over the lines of a space's resources, stoppable by a budget.

RE2 matches in time linear in the line, but a pattern such as ``(a?){400}a{400}c`` still
costs about a second per 50,000-character line, inside one C call that no checkpoint can
interrupt. So a costly search of a call that carries a budget (``gitpatch.core.budget``: the
hosted service's calls) runs in one of the service's worker processes (``workers``): it
checks the budget between lines and files there, its CPU is capped by ``RLIMIT_CPU``, and
the call kills it the moment its wall time is spent or it is stopped (client gone, call
cancelled, service shutting down). Without a budget (the library) the search runs in the
calling thread. Either way the patterns and results are the same: RE2 syntax, matched
per line, at most ``MAX_GREP_MATCHES`` lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import pygit2
import re2

from gitpatch.core.budget import checkpoint, current
from gitpatch.core.text import Document
from gitpatch.doors.hosted.workers import pool
from gitpatch.errors import GitpatchError, InvalidArguments
from gitpatch.store import Store

__all__ = ["INLINE_COST", "MAX_GREP_MATCHES", "as_text", "compile_pattern", "grep"]

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
            return pool().run(_search, str(store.git_dir), str(head), pattern, base)
        read.append((path, data))
    return _scan(read, regex)


def _search(repo: str, head: str, pattern: str, base: str) -> Matches:
    """The search in a worker process (``workers.Pool.run``): the repository opened there."""
    store, commit = Store.open(repo), pygit2.Oid(hex=head)
    return _scan(_read(store, commit, _paths(store, commit, base)), compile_pattern(pattern))
