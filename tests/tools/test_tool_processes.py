"""Separate processes, each with its own tools over its own Workspace, on one file at once:
every call lands or gets ``resource_conflict``; what landed is exactly what is in the file.
Ordered by a barrier only."""

from __future__ import annotations

import multiprocessing

import pytest

from tests.gitkit import git, make_repo, status_porcelain
from tests.tools import tool_workers

#: processes racing (load): `make test-fast` leaves these out (`-m "not slow"`).
pytestmark = pytest.mark.slow

WORKERS = 3
PER_WORKER = 6


def test_processes_lose_no_update_through_the_tools(tmp_path) -> None:
    repo = make_repo(tmp_path / "r", {"log.txt": "start\n"})
    ctx = multiprocessing.get_context("spawn")
    barrier, queue = ctx.Barrier(WORKERS), ctx.Queue()
    procs = [
        ctx.Process(
            target=tool_workers.append_through_tools,
            args=(str(repo), w, PER_WORKER, barrier, queue),
            daemon=True,
        )
        for w in range(WORKERS)
    ]
    for proc in procs:
        proc.start()
    try:
        reports = [queue.get(timeout=600) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=60)
            if proc.is_alive():
                proc.kill()
    assert all(r[0] == "ok" for r in reports), [r[2] for r in reports if r[0] != "ok"]
    outcomes = [o for r in reports for o in r[2]]
    assert {code for _line, code in outcomes} <= {None, "resource_conflict"}
    landed = sorted(line for line, code in outcomes if code is None)
    lines = (repo / "log.txt").read_text().splitlines()
    assert lines[0] == "start" and sorted(lines[1:]) == landed and landed
    assert status_porcelain(repo) == ""
    git(repo, "fsck", "--strict")
