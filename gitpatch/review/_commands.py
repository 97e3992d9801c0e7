"""Running an agent's command in its session's worktree, then checkpointing what it changed.

``run`` is for the CLI (``gitpatch run -- CMD``): the command's output and exit status pass
straight through. ``run_captured`` is for the MCP ``run_command`` tool: a shell command line
with a timeout, its output capped to a head and a tail. Both run in the session's worktree
(made first when needed) and return the checkpoint's result with the command's. The process
environment is the caller's, minus git's repository variables (the command sees the
worktree's repository, never the person's).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitpatch.errors import InvalidArguments, ProposalNotFound
from gitpatch.review import _workbench as workbench

if TYPE_CHECKING:
    from gitpatch.review._checkpoints import CheckpointResult

__all__ = [
    "HEAD_BYTES",
    "TAIL_BYTES",
    "Checkpoint",
    "Prepare",
    "Ran",
    "capped",
    "run",
    "run_captured",
]

#: What ``run_captured`` keeps of a long output: its first and last bytes.
HEAD_BYTES = 8 * 1024
TAIL_BYTES = 8 * 1024
_GIT_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX")


@dataclass(frozen=True)
class Ran:
    """A command's outcome: its exit status (None: stopped at the timeout), its output (as
    shown: capped for ``run_captured``), the worktree it ran in and the checkpoint after it."""

    exit_code: int | None
    output: str
    worktree: str
    checkpoint: CheckpointResult
    made: str = ""


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in _GIT_VARS}


#: What the runners need of a Workspace: its session's worktree (made when needed, brought up
#: to date) and a checkpoint of it. The command itself runs outside the Workspace's calls.
Prepare = Callable[[], workbench.Bench]
Checkpoint = Callable[[str], "CheckpointResult"]


def run(prepare: Prepare, checkpoint: Checkpoint, argv: Sequence[str]) -> Ran:
    """Run ``argv`` in the session's worktree, its output going straight to ours; then
    checkpoint what it changed (the command line in the trailer)."""
    if not argv:
        raise InvalidArguments(
            "no command to run", hint="Pass it after --: gitpatch run -- pytest -q"
        )
    bench = prepare()
    try:
        code = subprocess.run(list(argv), cwd=bench.path, env=_env(), check=False).returncode
    except OSError as exc:
        raise InvalidArguments(
            f"cannot run {argv[0]!r}: {exc.strerror or exc}",
            hint="Check the command's name and that it is installed (on PATH).",
            details={"command": list(argv)},
        ) from exc
    _still_there(bench, code)
    result = checkpoint(shlex.join(argv))
    return Ran(code, "", str(bench.path), result, bench.made)


def run_captured(prepare: Prepare, checkpoint: Checkpoint, command: str, timeout: float) -> Ran:
    """Run the shell command line ``command`` in the session's worktree for at most
    ``timeout`` seconds (then its process group is killed), keep its output's head and tail,
    and checkpoint what it changed."""
    if not command.strip() or "\0" in command:
        raise InvalidArguments(
            "command must be a non-empty shell command line",
            hint="Pass the command as you would type it, e.g. 'pytest -q'.",
        )
    if not timeout > 0:
        raise InvalidArguments(
            f"timeout must be a positive number of seconds, got {timeout!r}",
            hint="Pass timeout_seconds=120, say.",
        )
    bench = prepare()
    proc = subprocess.Popen(
        ["/bin/sh", "-c", command],
        cwd=bench.path,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        code = None
    _still_there(bench, code)
    result = checkpoint(command)
    return Ran(code, capped(out), str(bench.path), result, bench.made)


def _still_there(bench: workbench.Bench, code: int | None) -> None:
    """Refuse to checkpoint a session that was ended while its command ran (its worktree is
    gone): a checkpoint would make the worktree again, or find nothing to read."""
    if (bench.path / ".git").exists():
        return
    status = "stopped at the timeout" if code is None else f"exited with {code}"
    raise ProposalNotFound(
        f"session {bench.session!r} was ended while the command ran (it {status}): its "
        f"worktree {bench.path} is gone",
        hint="Nothing was recorded, and the session is not made again (gitpatch sessions "
        "lists the sessions there are).",
        details={"session": bench.session, "worktree": str(bench.path), "exit_code": code},
    )


def capped(data: bytes) -> str:
    """``data`` as text, its middle left out (and said so) when it is over the head and tail."""
    if len(data) <= HEAD_BYTES + TAIL_BYTES:
        return data.decode("utf-8", "replace")
    head = data[:HEAD_BYTES].decode("utf-8", "replace")
    tail = data[-TAIL_BYTES:].decode("utf-8", "replace")
    skipped = len(data) - HEAD_BYTES - TAIL_BYTES
    return f"{head}\n[... {skipped} bytes of output left out ...]\n{tail}"
