"""SIGKILL in the middle of auto-apply: git stays sound and the next call recovers.

A forked child applies multi-file proposals (updates, a move, an add or a delete) in a loop. The
parent kills it either at an exact file-system step (the child pauses at each hooked call until
told to go on) or after a random short delay (which only varies where the kill lands). Whatever
the moment, the checks are the same, so passing never depends on timing.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import random
import signal
import time
from pathlib import Path

import pygit2
import pytest

from tests.gitkit import git, head, make_repo, status_porcelain
from tests.ownerkit import killed_holding
from tests.safety import workers
from tests.safety.proofkit import disk_files, fsck_problems

#: SIGKILLs: `make test-fast` leaves these out (`-m "not slow"`).
pytestmark = pytest.mark.slow

TRIALS = 110
SEED = 20261130
BRANCH = "refs/heads/work"


def _step_of(tree: dict[str, bytes]) -> int:
    """Which complete state a tree is; fails if it is a mix of two steps."""
    first = tree["a.txt"].split(b"\n", 1)[0]
    step = int(first.rsplit(b" ", 1)[1])
    assert tree == workers.crash_state(step), f"tree is not a complete step {step}"
    return step


def _tree_files(tree: pygit2.Tree, prefix: str = "") -> dict[str, bytes]:
    """Every blob under ``tree`` by path, read in-process: a trial reads many trees."""
    out: dict[str, bytes] = {}
    for entry in tree:
        path = f"{prefix}{entry.name}"
        if entry.type_str == "tree":
            out.update(_tree_files(entry, f"{path}/"))
        else:
            out[path] = entry.data
    return out


def _commits_since(repo: pygit2.Repository, since: str, tip: str) -> list[pygit2.Commit]:
    """First-parent commits after ``since`` up to ``tip`` (a kill never makes merges)."""
    out: list[pygit2.Commit] = []
    commit = repo[tip]
    while str(commit.id) != since:
        out.append(commit)
        assert len(commit.parents) == 1, f"unexpected merge or root {commit.id}"
        commit = commit.parents[0]
    return out


def _kill_child(
    repo: Path, first_step: int, rng: random.Random, approve: str = "", most: int = 40
) -> str:
    """Run one child from ``first_step`` (or approving ``approve``) and SIGKILL it.

    Returns where the kill was aimed; ``most`` bounds the event number a handshake kill aims at.
    """
    ctx = multiprocessing.get_context("fork")
    ours, theirs = ctx.Pipe()
    handshake = rng.random() < 0.6
    if approve:
        target, args = workers.approve_child, (str(repo), approve, theirs, handshake)
    else:
        target, args = workers.crash_child, (str(repo), first_step, theirs, handshake)
    child = ctx.Process(target=target, args=args)
    child.start()
    theirs.close()
    try:
        where = _wait_for_kill_point(ours, handshake, rng, most, runs_on=not approve)
    finally:
        if child.pid is not None and child.is_alive():
            os.kill(child.pid, signal.SIGKILL)
        child.join()
        ours.close()
    return where


def _wait_for_kill_point(
    conn: multiprocessing.connection.Connection,
    handshake: bool,
    rng: random.Random,
    most: int,
    *,
    runs_on: bool,
) -> str:
    if handshake:
        target = rng.randint(1, most)
        for seen in range(1, target + 1):
            kind, detail = conn.recv()
            if kind == "finished":  # a short job (one approve) can end before the target
                return f"after the child finished (event {seen})"
            assert kind == "event", f"child stopped early ({kind}):\n{detail}"
            if seen == target:
                return f"at {detail} (event {seen})"
            conn.send("go")
    done = rng.randint(0, 2) if runs_on else 0  # one approve has no second proposal
    for _ in range(done):
        kind, detail = conn.recv()
        assert kind == "event", f"child stopped early ({kind}):\n{detail}"
    # The delay only moves the kill around inside libgit2 and the writes; any moment must pass.
    time.sleep(rng.uniform(0, 0.03))
    return f"after {done} proposals + delay"


def _check_crashed_state(repo: Path, since: str, where: str) -> tuple[int, bool]:
    """The state a kill leaves: fsck clean, whole commits, each file at the branch's step or
    the next one (a land writes files and index before its branch moves, as git does).

    Only the commits made after ``since`` (the tip before this trial) are walked. Returns the
    branch's step and whether the kill left the disk ahead of the branch (recovery must put
    those files back).
    """
    problems = fsck_problems(repo)
    assert not problems, f"git fsck after a kill {where}:\n{problems}"
    git_repo = pygit2.Repository(str(repo))
    tip = str(git_repo.references[BRANCH].target)
    step = _step_of(_tree_files(git_repo[tip].tree))
    for commit in _commits_since(git_repo, since, tip):
        _step_of(_tree_files(commit.tree))
        assert "Gitpatch-Proposal: " in commit.message, f"{commit.id} has no proposal trailer"
    now, ahead = workers.crash_state(step), workers.crash_state(step + 1)
    disk = disk_files(repo)
    for path in set(now) | set(ahead):
        assert disk.get(path) in (now.get(path), ahead.get(path)), (
            f"{path} is neither its content at the branch nor the next land's after a kill "
            f"{where}: {disk.get(path)!r}"
        )
    apart = any(disk.get(p) != now.get(p) for p in set(now) | set(ahead))
    return step, apart


def _recover_and_check(repo: Path, step: int, land_next: bool) -> int:
    from gitpatch.porcelain.workspace import Workspace

    ws = Workspace.open(str(repo))
    seen = ws.read("a.txt")
    assert seen.content.encode() == workers.crash_state(step)["a.txt"]
    if land_next:
        step += 1
        result = ws.propose(workers.crash_proposal(step))
        assert result.version == str(pygit2.Repository(str(repo)).references[BRANCH].target)
    del ws
    assert disk_files(repo) == workers.crash_state(step), "recovery left the tree incomplete"
    assert status_porcelain(repo) == "", f"git status after recovery:\n{status_porcelain(repo)}"
    assert not (repo / ".git" / "gitpatch" / "journal.json").exists()
    locks = [str(p) for p in (repo / ".git").rglob("*.lock") if p.name != "land.lock"]
    assert not locks, f"lock files left after recovery: {locks}"
    _assert_every_proposal_has_its_note(repo)
    return step


def _assert_every_proposal_has_its_note(repo: Path) -> None:
    """A kill between the branch's and the notes' lock renames is repaired by recovery."""
    from gitpatch.store import Store

    store = Store.open(str(repo))
    tip = store.ref_target(BRANCH)
    assert tip is not None
    for commit in store.repo.walk(tip):
        if "Gitpatch-Proposal:" in commit.message:
            assert store.read_note(commit.id) is not None, f"no note on {commit.id}"


def test_sigkill_during_auto_apply_always_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """>= 100 kills at varied moments: every one leaves a sound repository that recovers."""
    repo = make_repo(tmp_path / "repo", workers.crash_state(0))
    base = head(repo)
    rng = random.Random(SEED)
    step = 0
    kills: list[str] = []
    ahead = 0
    for trial in range(TRIALS):
        before = str(pygit2.Repository(str(repo)).references[BRANCH].target)
        where = _kill_child(repo, step + 1, rng)
        kills.append(where)
        step, disk_ahead = _check_crashed_state(repo, before, f"{where} in trial {trial}")
        ahead += disk_ahead
        step = _recover_and_check(repo, step, land_next=trial % 5 == 0)
    assert step > TRIALS // 5, "the kills never let a proposal land"
    assert sum(k.startswith("at ") for k in kills) >= TRIALS // 3
    # Exact kill points are chosen by a seeded generator, so this does not depend on timing:
    # many kills must land after files were written and before the branch moved.
    assert ahead >= TRIALS // 10, f"only {ahead} kills left the disk ahead of the branch"
    assert fsck_problems(repo) == ""
    assert git(repo, "rev-list", "--merges", f"{base}..{BRANCH}") == ""


def test_lock_files_of_a_dead_process_are_removed(tmp_path: Path) -> None:
    """``*.lock`` files (ref and index) a killed owner took do not block the next call."""
    from gitpatch.porcelain.workspace import Workspace

    repo = make_repo(tmp_path / "repo", workers.crash_state(0))
    stale = [repo / ".git" / "index.lock", repo / ".git" / "refs" / "heads" / "work.lock"]
    killed_holding(repo / ".git", stale)
    ws = Workspace.open(str(repo))
    result = ws.propose(workers.crash_proposal(1))
    assert result.version == head(repo, BRANCH)
    assert not [p for p in stale if p.exists()]
    assert disk_files(repo) == workers.crash_state(1)
    assert status_porcelain(repo) == ""


APPROVE_TRIALS = 30


def test_sigkill_during_approve_always_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person's approve (fast-forward of checked-out main + disk + notes) killed anywhere."""
    from gitpatch.porcelain.workspace import Workspace

    repo = make_repo(tmp_path / "repo", workers.crash_state(0), branch="main")
    rng = random.Random(SEED + 1)
    approved_by_child = apart = 0
    for step in range(APPROVE_TRIALS):
        ws = Workspace.open(str(repo), mode="review")
        pid = ws.propose(workers.crash_proposal(step + 1)).proposal_id
        del ws
        before = head(repo, "refs/heads/main")
        # an approve passes ~36 hooked steps, main moving after the files and index (~20)
        where = _kill_child(repo, 0, rng, approve=pid, most=36)
        after, disk_apart = _check_main_after_kill(
            repo, before, step, f"{where} in approve trial {step}"
        )
        approved_by_child += after > step
        apart += disk_apart
        ws = Workspace.open(str(repo), mode="review")
        ws.proposals()  # any call recovers
        if after == step:
            ws.approve(pid, by="Calm Reviewer")
        del ws
        want = workers.crash_state(step + 1)
        assert tree_of_main(repo) == want
        assert disk_files(repo) == want, f"disk after {where}"
        assert status_porcelain(repo) == "", f"git status after {where}:\n{status_porcelain(repo)}"
        assert not (repo / ".git" / "gitpatch" / "journal.json").exists()
    assert 0 < approved_by_child < APPROVE_TRIALS
    # Seeded exact kill points: several must fall between the files written and main moving.
    assert apart >= APPROVE_TRIALS // 10, f"only {apart} kills left the disk apart from main"
    assert fsck_problems(repo) == ""


def tree_of_main(repo: Path) -> dict[str, bytes]:
    """The tree of ``main``, read in-process."""
    git_repo = pygit2.Repository(str(repo))
    return _tree_files(git_repo.revparse_single("refs/heads/main").peel(pygit2.Tree))


def _check_main_after_kill(repo: Path, before: str, step: int, where: str) -> tuple[int, bool]:
    """fsck clean, main at step or step + 1 (complete), each file old or new.

    Returns main's step and whether the disk was left apart from main (ahead of it: a land
    writes files and index before main moves).
    """
    problems = fsck_problems(repo)
    assert not problems, f"git fsck after a kill {where}:\n{problems}"
    now = _step_of(tree_of_main(repo))
    assert now in (step, step + 1), f"main jumped to step {now} from {step} ({where})"
    assert (now == step) == (head(repo, "refs/heads/main") == before)
    old, new = workers.crash_state(step), workers.crash_state(step + 1)
    disk = disk_files(repo)
    for path in set(old) | set(new):
        assert disk.get(path) in (old.get(path), new.get(path)), (
            f"{path} is neither its old nor its new content after a kill {where}"
        )
    return now, disk != workers.crash_state(now)
