"""Separate processes editing one repository at once: nothing lost, nothing half-done.

Each worker is a real process (``spawn``) with its own Workspace, as separate agents would be.
Events are ordered only by barriers; the checks hold whatever the interleaving was.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from tests.gitkit import git, head, make_repo
from tests.safety import workers
from tests.safety.proofkit import (
    assert_fsck_clean,
    assert_status_clean,
    disk_files,
    proposal_trailers,
    tree_files,
)

#: eight processes at once (load): `make test-fast` leaves these out (`-m "not slow"`).
pytestmark = pytest.mark.slow

WORKERS = 8
PER_WORKER = 50
BRANCH = "refs/heads/work"
RESULT_TIMEOUT = 600.0  # a guard against a hung child, never used to order events


def _run_workers(target: Any, args_for: Any) -> list[tuple[Any, ...]]:
    """Start one spawned process per worker, collect one report from each, join them all."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=target, args=args_for(w, barrier, queue), daemon=True)
        for w in range(WORKERS)
    ]
    for proc in procs:
        proc.start()
    try:
        reports = [queue.get(timeout=RESULT_TIMEOUT) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=60)
            if proc.is_alive():
                proc.kill()
    crashed = [r for r in reports if r[0] == "crash"]
    assert not crashed, "a worker crashed:\n" + "\n".join(str(r[2:]) for r in crashed)
    assert all(proc.exitcode == 0 for proc in procs), [p.exitcode for p in procs]
    return sorted(reports, key=lambda r: int(r[1]))


def _own_files_repo(root: Path, branch: str = "work", per_worker: int = PER_WORKER) -> Path:
    files = {
        f"w{w}/f{i:02d}.txt": f"file {w}-{i}\nvalue 0\n".encode()
        for w in range(WORKERS)
        for i in range(0, per_worker, 2)
    }
    return make_repo(root, files, branch=branch)


def test_eight_processes_different_files_all_land(tmp_path: Path) -> None:
    """8 processes x 50 proposals on their own files: 400 commits, every change present."""
    repo = _own_files_repo(tmp_path / "repo")
    base = head(repo)
    reports = _run_workers(workers.edit_own_files, lambda w, b, q: (str(repo), w, PER_WORKER, b, q))
    _check_own_files(repo, base, BRANCH, reports, PER_WORKER)


def test_eight_processes_race_to_start_one_session(tmp_path: Path) -> None:
    """On protected main, 8 processes open at once: one session branch, every change on it;
    half of them ask for its worktree after their first edit, while the others land theirs
    (on the branch alone until it exists, then there): every change is in it."""
    per_worker = 4
    repo = _own_files_repo(tmp_path / "repo", branch="main", per_worker=per_worker)
    base = head(repo)
    reports = _run_workers(
        workers.edit_own_files,
        lambda w, b, q: (str(repo), w, per_worker, b, q, True, 1 if w % 2 else None),
    )
    session = "refs/heads/gitpatch/session/agent"
    place = repo / ".git" / "gitpatch" / "worktrees" / "agent"  # the session's own worktree
    _check_own_files(repo, base, session, reports, per_worker, disk=place)
    assert head(repo, "refs/heads/main") == base, "an agent commit landed on protected main"
    assert git(repo, "symbolic-ref", "HEAD").strip() == "refs/heads/main", "HEAD was switched"
    assert_status_clean(repo)
    assert git(repo, "worktree", "list", "--porcelain").count("branch " + session) == 1
    sessions = git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/gitpatch/session/")
    assert sessions.split() == [session]


def _check_own_files(
    repo: Path,
    base: str,
    branch: str,
    reports: list[tuple[Any, ...]],
    per_worker: int,
    disk: Path | None = None,
) -> None:
    """Every proposal landed once, as one commit changing one file, and all are on disk."""
    errors = [(r[1], e) for r in reports for e in r[3]]
    assert not errors, f"proposals that did not land: {errors[:10]}"
    landed = {pid: (r[1], index, version) for r in reports for index, pid, version in r[2]}
    assert len(landed) == WORKERS * per_worker, "proposal ids must be unique"

    commits = proposal_trailers(repo, base, branch)
    assert len(commits) == WORKERS * per_worker
    assert git(repo, "rev-list", "--merges", f"{base}..{branch}") == ""
    trailers = {pid: c for c, pid in commits}
    assert set(trailers) == set(landed)
    for pid, (_worker, _index, version) in landed.items():
        assert trailers[pid] == version, f"result version of {pid} is not its commit"
    _assert_one_file_per_commit(repo, base, branch)

    expected = tree_files(repo, base)
    for w in range(WORKERS):
        for i in range(per_worker):
            if i % 2 == 0:
                expected[f"w{w}/f{i:02d}.txt"] = f"file {w}-{i}\nvalue {w}-{i}\n".encode()
            else:
                expected[f"w{w}/new{i:02d}.txt"] = f"added by {w}-{i}\n".encode()
    assert tree_files(repo, branch) == expected, "an update was lost on the branch"
    on_disk = {k: v for k, v in disk_files(disk or repo).items() if k != ".git"}
    assert on_disk == expected, "the working tree does not hold every change"
    assert_status_clean(disk or repo)
    assert_fsck_clean(repo)


def _assert_one_file_per_commit(repo: Path, base: str, branch: str) -> None:
    log = git(repo, "log", "--format=@%H", "--name-only", f"{base}..{branch}")
    per_commit: dict[str, list[str]] = {}
    current = ""
    for line in log.splitlines():
        if line.startswith("@"):
            current = line[1:]
            per_commit[current] = []
        elif line:
            per_commit[current].append(line)
    wrong = {c: files for c, files in per_commit.items() if len(files) != 1}
    assert not wrong, f"commits that do not change exactly one file: {wrong}"


def _shared_repo(root: Path) -> Path:
    return make_repo(root, {workers.SHARED_PATH: workers.SHARED_INITIAL.encode(), "x": b"x\n"})


def _check_replay(repo: Path, base: str, reports: list[tuple[Any, ...]]) -> int:
    """Every outcome is a landing or a conflict; the landed ones replay to the final content."""
    landed: dict[str, tuple[int, int, str]] = {}
    for _status, worker, outcomes, _tb in reports:
        for code, round_, detail, seen in outcomes:
            assert code in ("landed", "resource_conflict"), (worker, round_, code, detail)
            if code == "landed":
                landed[detail] = (worker, round_, seen)
    commits = proposal_trailers(repo, base, BRANCH)
    assert len(commits) == len(landed), "landed proposals and new commits differ"
    content = workers.SHARED_INITIAL
    for commit, pid in commits:
        assert pid in landed, f"commit {commit} carries an unknown proposal id {pid!r}"
        worker, round_, seen = landed[pid]
        assert seen == content, f"{pid} landed on content it had not read"
        content = workers.bump(content, worker, round_)
    final = tree_files(repo, BRANCH)
    assert final[workers.SHARED_PATH].decode() == content
    assert disk_files(repo) == final
    assert_status_clean(repo)
    assert_fsck_clean(repo)
    return len(landed)


def test_eight_processes_same_file_with_expected_version(tmp_path: Path) -> None:
    """8 processes read, edit and propose the same file with the version they read.

    First in lockstep (all read, then all propose: exactly one lands per round), then running
    free; every proposal lands or gets resource_conflict, and the landed ones, replayed in
    commit order, give exactly the final content.
    """
    repo = _shared_repo(tmp_path / "repo")
    base = head(repo)
    lockstep, free = 4, 8
    reports = _run_workers(
        workers.edit_shared_file, lambda w, b, q: (str(repo), w, lockstep, free, b, q)
    )
    assert _check_replay(repo, base, reports) >= lockstep + 1
    for round_ in range(lockstep):
        codes = sorted(o[0] for r in reports for o in r[2] if o[1] == round_)
        assert codes == ["landed"] + ["resource_conflict"] * (WORKERS - 1), (round_, codes)
    free_landed = [o for r in reports for o in r[2] if o[1] >= lockstep and o[0] == "landed"]
    assert free_landed, "no free-running proposal landed"
