"""Child-process bodies for the concurrency and crash proofs.

They live in an importable module (not in a test file) so the ``spawn`` start method can find
them by name. Each child opens its own Workspace, as separate agent processes would, and reports
through a queue or a pipe; nothing here relies on timing to order events.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from typing import Any

from gitpatch.core.model import AddFile, DeleteFile, Proposal, Replace, UpdateFile
from gitpatch.errors import GitpatchError

SHARED_PATH = "shared/counter.txt"
SHARED_INITIAL = "count: 0\nlog:\nEND\n"

BARRIER_TIMEOUT = 300.0  # only a guard against a hung sibling, never used to order events


# --- different files -------------------------------------------------------------------------


def own_file_proposal(worker: int, index: int) -> Proposal:
    """Proposal ``index`` of ``worker``: even ones edit an existing file, odd ones add a file."""
    if index % 2 == 0:
        path = f"w{worker}/f{index:02d}.txt"
        edit = Replace(old="value 0\n", new=f"value {worker}-{index}\n")
        op: AddFile | UpdateFile = UpdateFile(path=path, edits=(edit,))
    else:
        path = f"w{worker}/new{index:02d}.txt"
        op = AddFile(path=path, content=f"added by {worker}-{index}\n")
    return Proposal(operations=(op,), format="patch_resource", tool="proof")


def edit_own_files(
    repo: str,
    worker: int,
    count: int,
    barrier: Any,
    queue: Any,
    race_open: bool = False,
    make_at: int | None = None,
) -> None:
    """Land ``count`` proposals on files only this worker touches; report ids and errors.

    ``race_open``: all workers open their Workspace at once (the barrier is before the open),
    which on a protected branch makes them race to start the same session branch.
    ``make_at``: before that proposal, ask for the session's worktree (made by whichever
    worker asks first, while the others land edits).
    """
    landed: list[tuple[int, str, str]] = []
    errors: list[tuple[int, str, str]] = []
    try:
        from gitpatch.porcelain.workspace import Workspace

        if race_open:
            barrier.wait(BARRIER_TIMEOUT)
        ws = Workspace.open(repo)
        if not race_open:
            barrier.wait(BARRIER_TIMEOUT)
        for index in range(count):
            if index == make_at:
                ws.plumbing.session_worktree()
            try:
                result = ws.propose(own_file_proposal(worker, index))
            except GitpatchError as exc:
                errors.append((index, exc.code, exc.message))
            else:
                landed.append((index, result.proposal_id, result.version))
        queue.put(("ok", worker, landed, errors))
    except BaseException:
        queue.put(("crash", worker, traceback.format_exc(), errors))


# --- one shared file -------------------------------------------------------------------------


def bump(content: str, worker: int, round_: int) -> str:
    """What worker ``worker`` in round ``round_`` turns ``content`` into (the replay rule)."""
    count = _count(content)
    return content.replace(f"count: {count}\n", f"count: {count + 1}\n", 1).replace(
        "END\n", f"w{worker} r{round_}\nEND\n", 1
    )


def bump_proposal(content: str, worker: int, round_: int) -> Proposal:
    """The same change as ``bump``, as two anchored replaces on the shared file."""
    count = _count(content)
    edits = (
        Replace(old=f"count: {count}\n", new=f"count: {count + 1}\n"),
        Replace(old="END\n", new=f"w{worker} r{round_}\nEND\n"),
    )
    return Proposal(
        operations=(UpdateFile(path=SHARED_PATH, edits=edits),),
        format="patch_resource",
        tool="proof",
    )


def _count(content: str) -> int:
    first = content.split("\n", 1)[0]
    return int(first.removeprefix("count: "))


def edit_shared_file(
    repo: str, worker: int, lockstep: int, free: int, barrier: Any, queue: Any
) -> None:
    """Read, edit and propose with the version read, ``lockstep + free`` times; report outcomes.

    In the first ``lockstep`` rounds every worker reads before anyone proposes (two barrier
    waits per round), so each of those rounds has exactly one winner; in the ``free`` rounds
    after them the workers run free and interleave as they may.
    """
    outcomes: list[tuple[str, int, str, str]] = []
    try:
        from gitpatch.porcelain.workspace import Workspace

        ws = Workspace.open(repo)
        barrier.wait(BARRIER_TIMEOUT)
        for round_ in range(lockstep + free):
            if round_ < lockstep:
                barrier.wait(BARRIER_TIMEOUT)
            seen = ws.read(SHARED_PATH)
            if round_ < lockstep:
                barrier.wait(BARRIER_TIMEOUT)
            proposal = bump_proposal(seen.content, worker, round_)
            try:
                result = ws.propose(proposal, expected_version=seen.version)
            except GitpatchError as exc:
                outcomes.append((exc.code, round_, exc.message, seen.content))
            else:
                outcomes.append(("landed", round_, result.proposal_id, seen.content))
        queue.put(("ok", worker, outcomes, ""))
    except BaseException:
        queue.put(("crash", worker, outcomes, traceback.format_exc()))


# --- crash trials ----------------------------------------------------------------------------

CRASH_FIXED = ("a.txt", "dir/b.txt", "dir/sub/c.txt")


def crash_state(step: int) -> dict[str, bytes]:
    """The complete tree after ``step`` proposals of the crash child (step 0 = initial)."""
    filler = "".join(f"line {n}\n" for n in range(40))
    state = {path: f"{path} step {step}\n{filler}".encode() for path in CRASH_FIXED}
    state[f"moving/{step}.txt"] = f"moved step {step}\n".encode()
    if step % 2 == 1:
        state[f"extra/{step}.txt"] = f"extra {step}\n".encode()
    return state


def crash_proposal(step: int) -> Proposal:
    """Turn ``crash_state(step - 1)`` into ``crash_state(step)``: updates, a move, add/delete."""
    edits = (Replace(old=f" step {step - 1}\n", new=f" step {step}\n"),)
    ops: list[AddFile | DeleteFile | UpdateFile] = [
        UpdateFile(path=path, edits=edits) for path in CRASH_FIXED
    ]
    ops.append(
        UpdateFile(
            path=f"moving/{step - 1}.txt",
            edits=(Replace(old=f"step {step - 1}\n", new=f"step {step}\n"),),
            move_to=f"moving/{step}.txt",
        )
    )
    if step % 2 == 1:
        ops.append(AddFile(path=f"extra/{step}.txt", content=f"extra {step}\n"))
    else:
        ops.append(DeleteFile(path=f"extra/{step - 1}.txt"))
    return Proposal(operations=tuple(ops), format="patch_resource", tool="proof")


_HOOKED = ("replace", "rename", "fsync", "unlink", "remove", "rmdir")


def _install_hooks(report: Callable[[str], None]) -> None:
    """Make every file-system step of interest pause at a handshake with the parent."""
    for name in _HOOKED:
        real = getattr(os, name)

        def hooked(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            report(_name)
            return _real(*args, **kwargs)

        setattr(os, name, hooked)


def crash_child(repo: str, first_step: int, conn: Any, handshake: bool) -> None:
    """Apply steps ``first_step``, ``first_step + 1``, ... until killed.

    With ``handshake`` every hooked file-system call and every finished proposal sends an event
    and waits for the parent's go-ahead, so the parent can kill it at an exact point. Without it
    the child only reports finished proposals and runs on.
    """

    def report(event: str) -> None:
        conn.send(("event", event))
        if handshake:
            conn.recv()

    try:
        from gitpatch.porcelain.workspace import Workspace

        ws = Workspace.open(repo)
        if handshake:
            _install_hooks(report)
        for step in range(first_step, first_step + 500):
            ws.propose(crash_proposal(step))
            report(f"done {step}")
        conn.send(("finished", ""))
    except BaseException:
        conn.send(("error", traceback.format_exc()))


def approve_child(repo: str, proposal_id: str, conn: Any, handshake: bool) -> None:
    """Approve one proposal (a person's call that lands on the checked-out target) until killed.

    Same protocol as ``crash_child``: with ``handshake`` every hooked file-system call waits
    for the parent's go-ahead; the end is reported as a ``done`` event.
    """

    def report(event: str) -> None:
        conn.send(("event", event))
        if handshake:
            conn.recv()

    try:
        from gitpatch.porcelain.workspace import Workspace

        ws = Workspace.open(repo, mode="review")
        if handshake:
            _install_hooks(report)
        ws.approve(proposal_id, by="Crash Reviewer")
        report("done approve")
        conn.send(("finished", ""))
    except BaseException:
        conn.send(("error", traceback.format_exc()))
