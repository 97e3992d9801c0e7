"""The budget per call: what stops a call, how it follows the call into threads, and that a
call over it changes nothing in the checkouts people have (the library's own use)."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.core.budget import HEAVY, Budget, checkpoint, current, run_as
from gitpatch.core.model import Proposal, Replace, UpdateFile
from gitpatch.errors import BudgetExceeded, StagedChanges
from tests.gitkit import git, make_repo, repo_state


def _spin(seconds: float) -> None:
    """Burn CPU for ``seconds`` of this thread's CPU time, passing checkpoints."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        checkpoint()


def test_without_a_budget_checkpoints_do_nothing() -> None:
    assert current() is None
    _spin(0.01)


def test_a_spent_wall_budget_stops_the_call_and_keeps_stopping_it() -> None:
    budget = Budget(wall_seconds=0.0)
    time.sleep(0.001)
    with pytest.raises(BudgetExceeded) as caught, budget.applied():
        checkpoint()
    assert caught.value.code == "budget_exceeded"
    assert "wall-time budget of 0 s" in caught.value.message
    assert "narrower edit" in (caught.value.hint or "")
    with pytest.raises(BudgetExceeded):  # code that swallowed it meets it again
        budget.check()
    assert current() is None


def test_a_cpu_budget_counts_the_call_s_threads() -> None:
    budget = Budget(cpu_seconds=0.05)
    with budget.applied(), pytest.raises(BudgetExceeded) as caught:
        _spin(1.0)
    assert "CPU budget of 0.05 s" in caught.value.message
    assert 0.05 < budget.cpu_used() < 1.0


def test_a_stop_from_outside_ends_the_call_at_its_next_checkpoint() -> None:
    budget = Budget()
    stopped = threading.Timer(0.05, budget.stop, ("its client went away",))
    stopped.start()
    with budget.applied(), pytest.raises(BudgetExceeded) as caught:
        while True:
            checkpoint()
            time.sleep(0.001)
    stopped.join()
    assert caught.value.message.endswith("its client went away")
    assert caught.value.details["reason"] == "its client went away"


def test_the_budget_follows_the_call_into_threads() -> None:
    budget = Budget(wall_seconds=60)
    seen: list[Budget | None] = []

    async def main() -> None:
        with budget.applied():
            await asyncio.to_thread(lambda: seen.append(current()))
            context = contextvars.copy_context()
        worker = threading.Thread(target=context.run, args=(lambda: seen.append(current()),))
        worker.start()
        worker.join()
        seen.append(current())

    asyncio.run(main())
    assert seen == [budget, budget, None]


def test_work_done_in_one_thread_for_another_call_counts_for_that_call() -> None:
    """A batch runner builds other calls' changes in its own thread (``run_as``): their CPU is
    theirs, not the runner's, so the runner's call is never stopped for another's work."""
    runner, other = Budget(cpu_seconds=60), Budget(cpu_seconds=60)
    with other.applied():
        theirs = contextvars.copy_context()
    with runner.applied():
        _spin(0.02)
        run_as(theirs, _spin, 0.2)
        _spin(0.02)
    assert other.cpu_used() >= 0.2
    assert runner.cpu_used() < 0.15
    with runner.applied():  # its own context: counted as its own
        run_as(contextvars.copy_context(), _spin, 0.2)
    assert runner.cpu_used() >= 0.2


def test_a_heavy_call_is_told_once_and_pauses() -> None:
    told: list[float] = []
    budget = Budget(cpu_seconds=10, share=0.001, on_heavy=lambda: told.append(time.thread_time()))
    with budget.applied():
        start = time.monotonic()
        _spin(HEAVY * 3)
        took = time.monotonic() - start
    assert len(told) == 1
    assert took > HEAVY * 3  # the pauses are wall time, not CPU time


# -- the library: a call over its budget changes nothing ------------------------------------------

FLIPS = (Replace("a", "b", replace_all=True), Replace("b", "a", replace_all=True)) * 200
TEXT = ("a" * 60 + "\n") * 3000


@pytest.mark.parametrize("setting", ["plain", "autocrlf", "staged", "worktree", "sparse"])
def test_a_workspace_call_over_its_budget_changes_nothing(tmp_path: Path, setting: str) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": TEXT, "d/x.txt": "x\n", "s.txt": "s\n"})
    where = repo
    if setting == "autocrlf":
        git(repo, "config", "core.autocrlf", "true")
        git(repo, "rm", "-q", "--cached", "a.txt")
        git(repo, "reset", "-q", "--hard")
    elif setting == "staged":  # staged work on another file stays staged
        (repo / "s.txt").write_text("staged\n")
        git(repo, "add", "s.txt")
    elif setting == "worktree":
        where = tmp_path / "linked"
        git(repo, "worktree", "add", "-q", "-b", "side", str(where))
    elif setting == "sparse":
        git(repo, "sparse-checkout", "set", "d")
    before = repo_state(where)
    ws = Workspace.open(where)
    with Budget(cpu_seconds=0.05).applied(), pytest.raises(BudgetExceeded):
        ws.propose(Proposal((UpdateFile("a.txt", FLIPS),), "patch_resource"))
    assert repo_state(where) == before
    ws.propose(Proposal((UpdateFile("a.txt", FLIPS[:1]),), "patch_resource"))  # no budget
    assert git(where, "show", "HEAD:a.txt") == TEXT.replace("a", "b")


def test_staged_work_on_the_file_is_still_refused_first(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": TEXT})
    (repo / "a.txt").write_text("b" + TEXT[1:])
    git(repo, "add", "a.txt")
    before = repo_state(repo)
    with Budget(cpu_seconds=60).applied(), pytest.raises(StagedChanges):
        Workspace.open(repo).propose(Proposal((UpdateFile("a.txt", FLIPS[:1]),), "x"))
    assert repo_state(repo) == before
