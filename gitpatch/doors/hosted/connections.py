"""How many connections a client may hold before it has sent a request: the bookkeeping.

``Guard`` counts a process's open connections, oldest first, per client address and in all;
past a cap it closes the oldest connection that has no request running (``drop``), never one
whose request is running. The cap in all is the descriptor limit minus a reserve
(``reserve_for``) kept for the service's own files. ``AcceptErrorFilter`` keeps the
``socket.accept() out of system resource`` log line to one a minute. The HTTP side (timers,
uvicorn's protocol) is ``gitpatch.doors.mcp``'s; a connection here is anything with
``busy()`` and ``drop()``.
"""

from __future__ import annotations

import dataclasses
import logging
import resource
import time
from collections import OrderedDict
from typing import Any

__all__ = ["LOG_EVERY", "AcceptErrorFilter", "Guard", "reserve_for"]

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
