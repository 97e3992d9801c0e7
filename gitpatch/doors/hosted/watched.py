"""A TOML file the hosted service re-reads whenever it changes (credentials, space limits).

The file's (mtime, size, inode, mode) is checked on every use, which costs one ``stat``; when it
changed, the file is parsed again. A file that became malformed keeps the last good value and
is retried on the next use, so a half-written edit never changes what the service does; an
owner that must fail closed instead (the credentials) passes ``on_error``, whose answer then
stands until the file changes again. A deleted file is parsed as ``None`` (the owner decides
what that means).

Within ``checked_once()`` (the service enters it for each HTTP request) each file is checked
once: the first use of the request pays the ``stat``, its later uses (a call asks for its
space's limits several times) take what that one found. Under load the ``stat`` itself costs
little; letting go of the interpreter for it does, when a dozen threads wait to take it. A
change to the file is seen from the next request on.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
import tomllib
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any, Generic, TypeVar

__all__ = ["CheckedPerRequest", "WatchedFile", "checked_once"]

_T = TypeVar("_T")
_Stamp = tuple[int, int, int, int]

#: The files checked in the current request (``checked_once``): each one's value then.
_CHECKED: contextvars.ContextVar[dict[int, Any] | None] = contextvars.ContextVar(
    "gitpatch_watched_checked", default=None
)


@contextlib.contextmanager
def checked_once() -> Iterator[None]:
    """Inside, each ``WatchedFile`` is checked against its file at its first use only (one
    request: its calls, and the threads they hand work to with their context)."""
    token = _CHECKED.set({})
    try:
        yield
    finally:
        _CHECKED.reset(token)


class CheckedPerRequest:
    """ASGI middleware, first in line: each HTTP request checks each watched file once
    (``checked_once``). Anything else (the lifespan, which runs as long as the server and
    holds the SDK's session manager) is passed on outside any request's scope."""

    def __init__(self, app: Callable[..., Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with checked_once():
            await self.app(scope, receive, send)


class WatchedFile(Generic[_T]):
    """``parse(table)`` of the TOML file at ``path``, kept current (``table`` None: no file).

    The first read happens here and its errors propagate (a bad file stops the service at
    start); with ``required``, a missing file is an error then too (``FileNotFoundError``).
    Later, a file that cannot be read or parsed keeps the last good value, or, with
    ``on_error``, takes ``on_error(exc)`` as its value until it changes again.
    """

    def __init__(
        self,
        path: Path,
        parse: Callable[[dict[str, Any] | None], _T],
        *,
        required: bool = False,
        on_error: Callable[[Exception], _T] | None = None,
    ) -> None:
        self.path = path
        self._where = os.fspath(path)  # os.stat on a str: a third of Path.stat's cost
        self._parse = parse
        self._on_error = on_error
        self._lock = threading.Lock()
        self._seen = self._stamp()
        if required and self._seen is None:
            raise FileNotFoundError(f"no such file: {path}")
        self._value = parse(self._table())

    def _stamp(self) -> _Stamp | None:
        try:
            st = os.stat(self._where)
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode)

    def _table(self) -> dict[str, Any] | None:
        try:
            with self.path.open("rb") as f:
                return tomllib.load(f)
        except FileNotFoundError:
            return None

    def get(self) -> _T:
        """The value of the file as it is now (while it is malformed: the last good one, or
        what ``on_error`` made of it); inside ``checked_once``, as it was at its first use
        there."""
        checked = _CHECKED.get()
        if checked is not None and id(self) in checked:
            found: _T = checked[id(self)]
            return found
        stamp = self._stamp()
        with self._lock:
            if stamp != self._seen:
                try:
                    self._value = self._parse(None if stamp is None else self._table())
                    self._seen = stamp
                except (OSError, ValueError, tomllib.TOMLDecodeError) as exc:
                    if self._on_error is not None:
                        self._value, self._seen = self._on_error(exc), stamp
                    # else: keep the last good value; retried on the next use
            value = self._value
        if checked is not None:
            checked[id(self)] = value
        return value

    def peek(self) -> _T:
        """The value last read, without checking the file."""
        with self._lock:
            return self._value
