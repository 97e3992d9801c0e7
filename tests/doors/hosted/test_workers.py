"""The service's worker pool and what the engine sends it: heavy work (decided cheaply) runs in
a worker with the same result or error, to the letter, as in the call's thread; light work
stays; a stopped budget kills the worker. Real forked processes, real repositories."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitpatch import engine
from gitpatch.core.budget import Budget
from gitpatch.doors.hosted import Credential, ResourceService, Spaces
from gitpatch.doors.hosted.workers import Pool
from gitpatch.engine.weight import heavy_files
from gitpatch.errors import BudgetExceeded, GitpatchError
from gitpatch.formats import patch_resource as edit_objects
from tests.doors.hosted.test_http_budget import A_LINES

ADA = Credential("0" * 64, user="ada", scopes=("read", "edit"))
BOB = Credential("1" * 64, user="bob", scopes=("read", "edit"))
SIMILAR = "".join(f"    total = total + value_{i % 97} * factor  # step\n" for i in range(8000))
HIT = "value_3 * factor  # step\n    total = total + value_4"
MISSING = "".join(f"    total = total + value_{i % 97} * factr  # step\n" for i in range(30))
SMALL = "".join(f"line {i}\n" for i in range(50))

#: (content, edits) the engine judges heavy, each with a different outcome.
HEAVY: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "replace_all": (SIMILAR, [{"old_string": "total", "new_string": "sum", "replace_all": True}]),
    "a miss": (SIMILAR, [{"old_string": MISSING, "new_string": "x"}]),
    "ambiguous": (SIMILAR * 3, [{"old_string": "total = total", "new_string": "t"}] * 9),
    "no change": (
        ("a" * 60 + "\n") * 500,
        [
            {"old_string": "a", "new_string": "b", "replace_all": True},
            {"old_string": "b", "new_string": "a", "replace_all": True},
        ],
    ),
    "100 insertions": (SIMILAR * 5, [{"after_line": n, "new_string": "x\n"} for n in range(100)]),
    "a miss after a hit": (
        SIMILAR,
        [
            {"old_string": HIT, "new_string": "v"},
            {"old_string": MISSING, "new_string": "x"},
        ],
    ),
}
#: (content, edits) that stay in the call's thread.
LIGHT: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "one insertion, small file": (SMALL, [{"after_line": 0, "new_string": "top\n"}]),
    "one exact replace, 900 KB": (
        A_LINES[:-61] + "b" * 60 + "\n",
        [{"old_string": "b" * 60, "new_string": "c"}],
    ),
    "a miss, small file": (SMALL, [{"old_string": "line 7\nline 9\n", "new_string": "x"}]),
    "replace_all, small file": (
        SMALL,
        [{"old_string": "line", "new_string": "row", "replace_all": True}],
    ),
}


@pytest.fixture(scope="module")
def pool() -> Iterator[Pool]:
    made = Pool(2)
    yield made
    made.close()


def _outcome(run: Any) -> Any:
    try:
        changeset = run()
    except GitpatchError as exc:
        return (type(exc), exc.code, exc.message, exc.hint, exc.details)
    changes = [(c.path, bytes(c.content or b""), c.source) for c in changeset.changes]
    return ("ok", changes, changeset.report)


@pytest.mark.parametrize("name", sorted(HEAVY))
def test_heavy_work_gives_the_same_result_in_a_worker(pool: Pool, name: str) -> None:
    content, edits = HEAVY[name]
    proposal = edit_objects.parse("f.txt", edits)
    snapshot = {"f.txt": content.encode()}
    assert heavy_files(proposal, snapshot) == snapshot
    here = _outcome(lambda: engine.apply(proposal, snapshot))
    jobs = pool.jobs
    with Budget(offload=pool.run).applied() as budget:
        there = _outcome(lambda: engine.apply(proposal, snapshot))
    assert pool.jobs == jobs + 1  # it ran in a worker
    assert there == here
    assert budget.cpu_used() > 0  # the worker's CPU counts for the call


@pytest.mark.parametrize("name", sorted(LIGHT))
def test_light_work_stays_in_the_calls_thread(pool: Pool, name: str) -> None:
    content, edits = LIGHT[name]
    proposal = edit_objects.parse("f.txt", edits)
    snapshot = {"f.txt": content.encode()}
    assert heavy_files(proposal, snapshot) is None
    jobs = pool.jobs
    with Budget(offload=pool.run).applied():
        _outcome(lambda: engine.apply(proposal, snapshot))
    assert pool.jobs == jobs


def test_the_service_answers_the_same_texts_either_way(pool: Pool, tmp_path: Path) -> None:
    # ada's calls offload their heavy work, bob's run it in their thread: same texts
    (tmp_path / "data").mkdir(mode=0o700)
    (tmp_path / "data" / "spaces.toml").write_text("[defaults]\nmax_file_bytes = 4194304\n")
    service = ResourceService(Spaces(tmp_path / "data"))
    for name, (content, edits) in sorted(HEAVY.items()):
        path = f"{name.replace(' ', '_')}.txt"
        texts = []
        for who, offload in ((ADA, pool.run), (BOB, None)):
            assert service.create_resource(who, path, content).ok
            jobs = pool.jobs
            with Budget(offload=offload).applied():
                result = service.patch_resource(who, path, edits)
            assert pool.jobs == jobs + (offload is not None), name
            after = service.read_resource(who, path).data["content"]
            texts.append((result.ok, result.code, _without_ids(str(result)), after))
        assert texts[0] == texts[1], name


def _without_ids(text: str) -> str:
    """A result's text without what differs between two spaces (ids, commits)."""
    return "\n".join(line for line in text.splitlines() if not line.startswith(("id:", "commit")))


def test_a_stopped_budget_kills_the_worker_at_once(pool: Pool) -> None:
    edits = HEAVY["no change"][1]
    proposal = edit_objects.parse("f.txt", edits * 50)  # minutes of work on 900 KB
    budget = Budget(600, 600, offload=pool.run)
    failed: list[BaseException] = []

    def call() -> None:
        with budget.applied():
            try:
                engine.apply(proposal, {"f.txt": A_LINES.encode()})
            except BudgetExceeded as exc:
                failed.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    busy = _running(pool)
    assert busy is not None
    budget.stop("its client cancelled it")
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert failed and "its client cancelled it" in failed[0].message
    assert busy not in pool.pids()
    assert not Path(f"/proc/{busy}").exists() or _zombie(busy)


def _zombie(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"


def _running(pool: Pool) -> int | None:
    """The worker running the job, once the pool has handed it one."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        busy = pool.busy()
        if busy:
            return busy[0]
        time.sleep(0.01)
    return None


def _spin() -> None:
    """Work that never reaches a checkpoint (as one long C call would not)."""
    while True:
        pass


@pytest.mark.slow  # a second or two of CPU before the kernel's limit ends the worker
def test_work_past_its_cpu_without_a_checkpoint_is_ended_by_rlimit_cpu(pool: Pool) -> None:
    budget = Budget(0.5, 600, offload=pool.run)
    with budget.applied(), pytest.raises(BudgetExceeded) as raised:
        pool.run(_spin)
    assert "CPU budget of 0.5 s" in raised.value.message
    assert pool.busy() == []
