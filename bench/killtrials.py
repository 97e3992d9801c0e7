"""Random-kill trials, as an agent harness kills tool processes: shared by the bench and tests.

A forked child lands auto-mode edits (one file, then several files with an add, a delete and
a move), puts up review proposals that it approves (fast-forward, or a 3-way merge when the
branch moved meanwhile; one hunk of a proposal, then the rest; two proposals in one queued
landing), and checkpoints what a "command" changed in a review session's worktree and
approves that, in a loop, on a repository whose branch is checked out. The parent
SIGKILLs it after a random delay, then opens a Workspace as the next process would and checks
that nobody is needed: the open succeeds, ``git fsck --strict`` and ``git status`` are clean,
disk equals the branch, no lock, temp, journal or owner record is left, and every proposal (ref
or landed commit) has its note, and the session's next checkpoint keeps what the command
last wrote in its worktree. The delay only varies where the kill lands; any moment must pass.

Not a benchmark itself (``bench/run.py`` runs only ``bench_*.py``); ``bench_faults`` runs 200
trials and ``tests/safety/test_faults.py`` 40.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import subprocess
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BRANCH = "refs/heads/work"
ENV = {
    "GIT_AUTHOR_NAME": "Kill Trial",
    "GIT_AUTHOR_EMAIL": "kill@example.com",
    "GIT_COMMITTER_NAME": "Kill Trial",
    "GIT_COMMITTER_EMAIL": "kill@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}
FILES = ("a.txt", "multi/b.txt", "multi/deep/c.txt", "review/r.txt", "review/h.txt", "review/q.txt")
#: The review session whose worktree a "command" changes each round, and the file it writes.
SESSION = "bench"
CHECKPOINTED = "gen/counter.txt"
TEMP_MARKERS = (".lock", ".gitpatch-tmp", "tmp_obj", "tmp_pack")


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **ENV, "HOME": str(repo)}
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=False
    )


def make_repo(root: Path) -> Path:
    """A repository with branch ``work`` checked out and the files the child edits."""
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "work")
    for key, value in (("user.name", "Kill Trial"), ("user.email", "kill@example.com")):
        _git(root, "config", key, value)
    _git(root, "config", "gc.auto", "0")
    for path in FILES:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(f"{path}\nn: 0\n" + "".join(f"line {i}\n" for i in range(20)))
    (root / "moving").mkdir()
    (root / "moving" / "m0.txt").write_text("moving 0\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "initial")
    return root


# -- the child --------------------------------------------------------------------------------


def _counter(text: str) -> int:
    return int(text.split("\n")[1].removeprefix("n: "))


def _bump(ws: Any, path: str) -> Any:
    """An UpdateFile raising ``path``'s counter by one, built from what is on the branch now."""
    from gitpatch.core.model import Replace, UpdateFile

    n = _counter(ws.read(path).content)
    return UpdateFile(path=path, edits=(Replace(old=f"n: {n}\n", new=f"n: {n + 1}\n"),))


def _multi(ws: Any, k: int) -> Any:
    """Several files at once: two updates, a move with an edit, an add and a delete."""
    from gitpatch.core.model import AddFile, DeleteFile, Proposal, Replace, UpdateFile

    ops: list[Any] = [_bump(ws, "multi/b.txt"), _bump(ws, "multi/deep/c.txt")]
    moving = next(p for p in _listing(ws) if p.startswith("moving/"))
    text = ws.read(moving).content
    ops.append(
        UpdateFile(
            path=moving, edits=(Replace(old=text, new=f"moved {k}\n"),), move_to=f"moving/m{k}.txt"
        )
    )
    added = [p for p in _listing(ws) if p.startswith("added/")]
    ops.extend(DeleteFile(path=p) for p in added)
    ops.append(AddFile(path=f"added/{k}.txt", content=f"added {k}\n"))
    return Proposal(operations=tuple(ops), format="patch_resource", tool="apply_patch")


def _two_hunks(ws: Any, k: int) -> Any:
    """review/h.txt's counter and its line 18, far apart: two hunks to approve one by one."""
    from gitpatch.core.model import Proposal, ReplaceLines, UpdateFile

    bump = _bump(ws, "review/h.txt")
    tail = ReplaceLines(start=18, end=18, new=f"tail {k}\n")
    op = UpdateFile(path="review/h.txt", edits=(*bump.edits, tail))
    return Proposal(operations=(op,), format="patch_resource")


def _hunks_and_queue(review: Any, k: int) -> None:
    """A per-hunk approval (hunk 1, then the rest) and a queued landing of two proposals."""
    from gitpatch.core.model import Proposal

    pid = review.propose(_two_hunks(review, k)).proposal_id
    review.approve(pid, by="Trial Reviewer", hunks="1")
    review.approve(pid, by="Trial Reviewer")
    queued = [
        review.propose(Proposal(operations=(_bump(review, p),), format="patch_resource"))
        for p in ("review/q.txt", "review/r.txt")
    ]
    review.approve([q.proposal_id for q in queued], by="Trial Reviewer")


def _listing(ws: Any) -> list[str]:
    tip = ws.plumbing.store.ref_target(BRANCH)
    return sorted(ws.plumbing.store.files(tip))


def child_loop(repo: str, conn: Any) -> None:
    """Land and approve until killed; report ``ready`` once the Workspaces are open."""
    try:
        from gitpatch.core.model import Proposal
        from gitpatch.porcelain.workspace import Workspace

        auto = Workspace.open(repo)
        review = Workspace.open(repo, mode="review")
        bench = Workspace.open(repo, mode="review", session=SESSION)
        where = bench.plumbing.session_worktree().path  # made before any kill: the bench's own cost
        conn.send("ready")
        for _ in range(100_000):
            _checkpointed(bench, review, where)
            auto.propose(Proposal(operations=(_bump(auto, "a.txt"),), format="patch_resource"))
            k = _counter(auto.read("a.txt").content)  # unique: it only grows
            auto.propose(_multi(auto, k))
            pid = review.propose(
                Proposal(operations=(_bump(review, "review/r.txt"),), format="patch_resource")
            ).proposal_id
            if k % 2 == 0:  # the branch moves first: the approval is a 3-way merge
                auto.propose(Proposal(operations=(_bump(auto, "a.txt"),), format="patch_resource"))
            review.approve(pid, by="Trial Reviewer")
            _hunks_and_queue(review, k)
    except BaseException:
        conn.send(traceback.format_exc())


def _checkpointed(bench: Any, review: Any, where: Path) -> None:
    """A command's change in the session's worktree (a counter in ``CHECKPOINTED``),
    checkpointed and approved."""
    path = where / CHECKPOINTED
    # a kill in the middle of the last write leaves it torn, as a killed command would: start over
    text = path.read_text() if path.exists() else ""
    k = _counter(text) + 1 if text.count("\n") == 2 else 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{CHECKPOINTED}\nn: {k}\n")
    made = bench.checkpoint("counter")
    if made.recorded:
        review.approve(made.proposal_id, by="Trial Reviewer")


# -- one trial --------------------------------------------------------------------------------


@dataclass
class Tally:
    """What the trials found: ``needed_person`` lists each trial a person would have to fix."""

    trials: int = 0
    needed_person: list[str] = field(default_factory=list)


def kill_once(repo: Path, delay: float) -> str | None:
    """Run the child, SIGKILL it ``delay`` seconds after it is ready; an error text if it
    failed on its own before the kill (a bug, not a kill)."""
    ctx = multiprocessing.get_context("fork")
    ours, theirs = ctx.Pipe()
    child = ctx.Process(target=child_loop, args=(str(repo), theirs))
    child.start()
    theirs.close()
    try:
        first = ours.recv()
        if first != "ready":
            return str(first)
        if ours.poll(delay):
            return str(ours.recv())
    finally:
        if child.pid is not None and child.is_alive():
            os.kill(child.pid, signal.SIGKILL)
        child.join()
        ours.close()
    return None


def problems_after_kill(repo: Path) -> list[str]:
    """Open as the next process would, then list what would need a person."""
    from gitpatch.errors import GitpatchError
    from gitpatch.porcelain.workspace import Workspace

    try:
        ws = Workspace.open(str(repo))
        ws.read("a.txt")
    except GitpatchError as exc:
        return [f"open refused: {exc.code}: {exc.message}"]
    out = _checkpoint_lost(repo)  # the session's next call: it finishes what the kill left
    fsck = _git(repo, "fsck", "--strict", "--no-dangling", "--no-progress")
    if fsck.returncode != 0 or fsck.stdout.strip() or fsck.stderr.strip():
        out.append(f"git fsck: {fsck.stdout}{fsck.stderr}")
    status = _git(repo, "status", "--porcelain").stdout
    if status:
        out.append(f"git status:\n{status}")
    out += _disk_mismatch(repo)
    out += [f"left behind: {p}" for p in leftovers(repo)]
    out += _notes_missing(ws)
    return out


def _checkpoint_lost(repo: Path) -> list[str]:
    """What the session's worktree holds that its next checkpoint would not keep: after it,
    the worktree is clean and its HEAD has the counter the "command" last wrote."""
    from gitpatch.errors import GitpatchError
    from gitpatch.porcelain.workspace import Workspace

    where = repo / ".git" / "gitpatch" / "worktrees" / SESSION
    if not (where / CHECKPOINTED).exists():
        return []
    wrote = (where / CHECKPOINTED).read_text()
    try:
        Workspace.open(str(repo), mode="review", session=SESSION).checkpoint("after a kill")
    except GitpatchError as exc:
        return [f"checkpoint refused after the kill: {exc.code}: {exc.message}"]
    out = []
    status = _git(where, "status", "--porcelain").stdout
    if status:
        out.append(f"session worktree not clean after its checkpoint:\n{status}")
    kept = _git(where, "show", f"HEAD:{CHECKPOINTED}").stdout
    if kept != wrote:
        out.append(f"the checkpoint lost the command's change: {wrote!r} != {kept!r}")
    return out


def leftovers(repo: Path) -> list[str]:
    """Lock, temp, journal and queue files and dead owners' records anywhere in the repository."""
    found: list[str] = []
    for path in _walk(repo):
        name = path.name
        if (
            any(m in name for m in TEMP_MARKERS)
            or name in ("journal.json", "queue.json")
            or _dead_record(path)
        ):
            found.append(str(path.relative_to(repo)))
    return found


def _dead_record(path: Path) -> bool:
    """An owner record of a process that is gone (a live process keeps its own)."""
    from gitpatch.safety.owners import Owner

    if path.parent.name != "owners":
        return False
    owner = Owner.from_tag(path.name.removesuffix(".json").rsplit("+", 1)[0])
    return owner is None or owner.dead()


def _walk(root: Path) -> Iterator[Path]:
    for folder, _dirs, names in os.walk(root):
        for name in names:
            yield Path(folder) / name


def _disk_mismatch(repo: Path) -> list[str]:
    listed = _git(repo, "ls-tree", "-r", "--name-only", "HEAD").stdout.split()
    disk = sorted(
        str(p.relative_to(repo)) for p in _walk(repo) if ".git" not in p.relative_to(repo).parts
    )
    out = [] if disk == sorted(listed) else [f"disk files {disk} != branch files {listed}"]
    for path in listed:
        want = _git(repo, "show", f"HEAD:{path}").stdout
        if (repo / path).exists() and (repo / path).read_text() != want:
            out.append(f"{path} on disk differs from the branch")
    return out


def _notes_missing(ws: Any) -> list[str]:
    from gitpatch.store import Store

    store: Store = ws.plumbing.store
    out: list[str] = []
    names = [n for n in store.ref_names("refs/heads/gitpatch/") if "/session/" not in n]
    tips = [(n, store.ref_target(n)) for n in names]
    branch = store.ref_target(BRANCH)
    assert branch is not None
    for commit in store.repo.walk(branch):
        if "Gitpatch-Proposal:" in commit.message:
            tips.append((f"commit on work {str(commit.id)[:12]}", commit.id))
    for name, tip in tips:
        if tip is not None and store.read_note(tip) is None:
            out.append(f"{name} has no note")
    return out


def run_trials(root: Path, trials: int, seed: int, most_delay: float = 0.25) -> Tally:
    """``trials`` kills on one repository (state carries over, as in real use)."""
    repo = make_repo(root / "repo")
    rng = random.Random(seed)
    tally = Tally()
    for trial in range(trials):
        failed = kill_once(repo, rng.uniform(0.0, most_delay))
        tally.trials += 1
        if failed is not None:
            tally.needed_person.append(
                f"trial {trial}: child failed before the kill:\n{failed[-900:]}"
            )
            continue
        problems = problems_after_kill(repo)
        if problems:
            tally.needed_person.append(f"trial {trial}: " + "; ".join(problems))
            repo = make_repo(root / f"repo{trial}")  # go on with a sound repository
    return tally
