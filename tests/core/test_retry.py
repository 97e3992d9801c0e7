"""The one retry helper: what it retries, how often, and what it raises at the end."""

from __future__ import annotations

import pytest

import gitpatch.core.retry
from gitpatch.core.retry import lost_race, retry
from gitpatch.errors import ConcurrentUpdate, RepositoryError


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    waits: list[int] = []
    monkeypatch.setattr(
        gitpatch.core.retry, "backoff", lambda attempt, cap=0.0: waits.append(attempt)
    )
    return waits


def failing(times: int, exc: BaseException) -> tuple[list[int], object]:
    calls: list[int] = []

    def action() -> str:
        calls.append(len(calls))
        if len(calls) <= times:
            raise exc
        return "done"

    return calls, action


def test_retries_a_lost_race_until_it_succeeds(no_sleep: list[int]) -> None:
    calls, action = failing(3, ConcurrentUpdate("moved"))
    assert retry(action, attempts=5, catch=ConcurrentUpdate, when=lost_race) == "done"  # type: ignore[arg-type]
    assert len(calls) == 4 and no_sleep == [0, 1, 2]


def test_a_held_lock_is_not_a_lost_race() -> None:
    calls, action = failing(1, ConcurrentUpdate("busy", reason="locked"))
    with pytest.raises(ConcurrentUpdate) as err:
        retry(action, attempts=5, catch=ConcurrentUpdate, when=lost_race)  # type: ignore[arg-type]
    assert err.value.reason == "locked" and len(calls) == 1


def test_other_errors_pass_through_at_once() -> None:
    calls, action = failing(1, RepositoryError("broken"))
    with pytest.raises(RepositoryError):
        retry(action, attempts=5, catch=ConcurrentUpdate)  # type: ignore[arg-type]
    assert len(calls) == 1


def test_after_the_last_attempt_the_last_error_or_exhausted() -> None:
    calls, action = failing(9, ConcurrentUpdate("moved"))
    with pytest.raises(ConcurrentUpdate, match="moved"):
        retry(action, attempts=3, catch=ConcurrentUpdate)  # type: ignore[arg-type]
    assert len(calls) == 3
    with pytest.raises(RepositoryError, match="gave up") as err:
        retry(
            action,  # type: ignore[arg-type]
            attempts=2,
            catch=ConcurrentUpdate,
            exhausted=lambda exc: RepositoryError(f"gave up after {exc.message}"),
        )
    assert isinstance(err.value.__cause__, ConcurrentUpdate)


def test_os_errors_can_be_retried_too() -> None:
    calls, action = failing(2, OSError("index.lock"))
    assert retry(action, attempts=3, catch=OSError) == "done"  # type: ignore[arg-type]
    assert len(calls) == 3


def test_no_attempt_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        retry(lambda: 1, attempts=0, catch=OSError)
