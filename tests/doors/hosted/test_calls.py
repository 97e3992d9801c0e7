"""The budget of the service's calls without a server: the credential's fields, the gate's
heavy-call slots and stops, and grep under a budget (its own process)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import anyio
import pytest

from gitpatch.core.budget import HEAVY, Budget, checkpoint
from gitpatch.doors.hosted import Credential, ResourceService, Spaces, add_credential
from gitpatch.doors.hosted.calls import (
    DEFAULT_CPU_SECONDS,
    DEFAULT_WALL_SECONDS,
    CallGate,
    Request,
)
from gitpatch.doors.hosted.credentials import CredentialFile, load_credentials
from gitpatch.errors import BudgetExceeded
from tests.doors.hosted.svckit import space_refs

ADA = Credential("0" * 64, user="ada", scopes=("read", "edit"))


def _with_budget(path: Path, lines: str) -> str:
    token, _ = add_credential(path, user="ada", organization=None)
    path.write_text(path.read_text().replace('user = "ada"\n', f'user = "ada"\n{lines}\n'))
    return token


def test_a_credential_carries_its_budget(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    token = _with_budget(path, "cpu_seconds = 0.5\nwall_seconds = 3")
    cred = CredentialFile(path).lookup(token)
    assert cred is not None and (cred.cpu_seconds, cred.wall_seconds) == (0.5, 3.0)
    other, _ = add_credential(path, user="bob", organization=None)
    cred = CredentialFile(path).lookup(other)
    assert cred is not None and (cred.cpu_seconds, cred.wall_seconds) == (None, None)


@pytest.mark.parametrize("value", ["0", "-1", "true", '"2"', "nan"])
def test_a_bad_budget_is_refused(tmp_path: Path, value: str) -> None:
    path = tmp_path / "c.toml"
    _with_budget(path, f"cpu_seconds = {value}")
    with pytest.raises(ValueError, match="cpu_seconds must be a positive number"):
        load_credentials(path)


def _gate(slots: int = 1) -> CallGate:
    return CallGate(lambda owner: slots)


def test_a_call_gets_the_default_budget_or_its_credential_s() -> None:
    async def main() -> list[Budget]:
        gate = _gate()
        async with gate.call("a", None, None, None) as default:
            pass
        async with gate.call("a", 0.5, 1.0, None) as own:
            pass
        return [default, own]

    default, own = anyio.run(main)
    assert (default.cpu_seconds, default.wall_seconds) == (
        DEFAULT_CPU_SECONDS,
        DEFAULT_WALL_SECONDS,
    )
    assert (own.cpu_seconds, own.wall_seconds) == (0.5, 1.0)


def _heavy_then(budget: Budget, release: threading.Event, out: list[str]) -> None:
    try:
        with budget.applied():
            end = time.thread_time() + HEAVY * 2
            while time.thread_time() < end:
                checkpoint()
            out.append("heavy")
            release.wait(30)
    except BudgetExceeded as exc:
        out.append(str(exc.details["reason"]))


def test_one_heavy_call_per_credential_runs_the_others_wait_and_a_drain_stops_them() -> None:
    """A second heavy call of the same credential waits for the first one's slot; another
    credential's does not; draining stops the waiting one (and refuses new ones)."""
    gate = _gate()
    release = threading.Event()
    outcomes: dict[str, list[str]] = {"first": [], "second": [], "other": []}

    async def one(name: str, owner: str) -> None:
        async with gate.call(owner, 60, 60, None) as budget:
            await anyio.to_thread.run_sync(_heavy_then, budget, release, outcomes[name])

    async def main() -> None:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(one, "first", "ada")
                while not outcomes["first"]:
                    await anyio.sleep(0.01)
                group.start_soon(one, "second", "ada")
                group.start_soon(one, "other", "bob")
                while not outcomes["other"]:
                    await anyio.sleep(0.01)
                assert outcomes["second"] == []  # waiting for ada's slot
                gate.drain()
                while not outcomes["second"]:
                    await anyio.sleep(0.01)
                release.set()
            with pytest.raises(BudgetExceeded):  # no new call once draining
                async with gate.call("ada", 60, 60, None):
                    pass

    anyio.run(main)
    assert outcomes == {
        "first": ["heavy"],
        "second": ["the service is shutting down"],
        "other": ["heavy"],
    }
    assert gate.in_flight() == 0


def test_a_request_whose_client_went_away_stops_its_calls() -> None:
    request = Request()
    early, late = Budget(), Budget()
    request.add(early)
    request.went_away()
    request.add(late)
    for budget in (early, late):
        assert budget.stopped == "its client went away"
        with pytest.raises(BudgetExceeded):
            budget.check()


@pytest.mark.slow  # it starts the forkserver and a search process
def test_a_grep_past_its_budget_is_stopped_in_a_worker(tmp_path: Path) -> None:
    service = ResourceService(Spaces(tmp_path / "data"))
    service.create_resource(ADA, "a.txt", ("a" * 50000 + "\n") * 10)
    service.create_resource(ADA, "b.txt", "hello\nworld\n")
    before = space_refs(tmp_path / "data")
    # the CPU budget stops it: a wall budget it could meet first (its niced worker gets
    # little CPU on a loaded machine: 30 s passed with 0.08 s of CPU used) is for a broken run
    with Budget(cpu_seconds=0.5, wall_seconds=600).applied() as budget:
        slow = service.grep_resource(ADA, "(a?){400}a{400}c")
    with Budget(cpu_seconds=0.5, wall_seconds=30).applied():
        quick = service.grep_resource(ADA, "wor", "b.txt")  # under the inline cost
    assert slow.code == "budget_exceeded", str(slow)
    assert budget.cpu_used() > 0.5  # the worker's CPU counts for the call
    assert str(quick).startswith("b.txt:2:world")
    unbounded = service.grep_resource(ADA, "wor")  # the library: no budget, no process
    assert unbounded.data["matches"] == [{"path": "b.txt", "line": 2, "text": "world"}]
    assert space_refs(tmp_path / "data") == before
