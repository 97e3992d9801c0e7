"""The one retry helper: run an action again, after a jittered backoff, when it lost a race.

Every retry loop in gitpatch (a proposal losing the branch's compare-and-swap, the notes ref
moving under a transaction, a review step, a session switch, a busy git lock file) goes through
``retry``; only the number of attempts and what counts as worth retrying differ. A lost
compare-and-swap is worth retrying (``lost_race``); a lock another process holds is not, at
that level, since ``gitpatch.store`` has already waited for it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from gitpatch.errors import ConcurrentUpdate

__all__ = ["backoff", "lost_race", "retry"]

T = TypeVar("T")
E = TypeVar("E", bound=BaseException)

#: The longest single wait between two attempts, in seconds.
MAX_DELAY = 0.05


def backoff(attempt: int, cap: float = MAX_DELAY) -> float:
    """Sleep a jittered, exponentially growing delay (capped at ``cap`` seconds); return it."""
    delay: float = min(cap, 0.0005 * 2**attempt) * (0.5 + random.random())
    time.sleep(delay)
    return delay


def lost_race(exc: ConcurrentUpdate) -> bool:
    """True for a compare-and-swap lost to another writer (not a held lock)."""
    return exc.reason != "locked"


def retry(
    action: Callable[[], T],
    *,
    attempts: int,
    catch: type[E],
    when: Callable[[E], bool] = lambda _exc: True,
    exhausted: Callable[[E], BaseException] | None = None,
    cap: float = MAX_DELAY,
) -> T:
    """Run ``action`` up to ``attempts`` times while it raises ``catch`` and ``when(exc)`` holds.

    Other errors, and ``catch`` errors ``when`` declines, propagate at once. After the last
    attempt, ``exhausted(last_error)`` is raised when given, else the last error itself.
    """
    for attempt in range(attempts):
        try:
            return action()
        except catch as exc:
            if not when(exc):
                raise
            if attempt == attempts - 1:
                if exhausted is None:
                    raise
                raise exhausted(exc) from exc
            backoff(attempt, cap)
    raise ValueError(f"retry needs at least one attempt, got {attempts}")
