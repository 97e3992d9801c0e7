"""Child-process bodies for the tool concurrency proof (importable, for ``spawn``)."""

from __future__ import annotations

import traceback
from typing import Any

BARRIER_TIMEOUT = 300.0  # only a guard against a hung sibling, never used to order events


def append_through_tools(repo: str, worker: int, count: int, barrier: Any, queue: Any) -> None:
    """Read, then patch_resource with the version read, ``count`` times; report each outcome."""
    try:
        from gitpatch import MountedFilesystem, Workspace, patch_resource_tool, read_tool

        fs = MountedFilesystem({"/workspace": Workspace.open(repo)})
        read, patch = read_tool(fs), patch_resource_tool(fs, fs)
        outcomes: list[tuple[str, str | None]] = []
        barrier.wait(BARRIER_TIMEOUT)
        for index in range(count):
            line = f"{worker}-{index}"
            version = read(path="log.txt").data["version"]
            res = patch(
                path="log.txt",
                edits=[{"after_line": 1, "new_string": line + "\n"}],
                expected_version=version,
            )
            outcomes.append((line, res.code))
        queue.put(("ok", worker, outcomes))
    except BaseException:
        queue.put(("crash", worker, traceback.format_exc()))


_HOOKED = ("replace", "rename", "fsync", "unlink")


def mixed_patch(step: int) -> str:
    """An apply_patch moving the branch file ``a.txt`` and the scratch file to ``step``."""
    return (
        "*** Begin Patch\n"
        f"*** Update File: a.txt\n@@\n-a step {step - 1}\n+a step {step}\n"
        f"*** Update File: work://s1/plan.md\n@@\n-plan step {step - 1}\n+plan step {step}\n"
        "*** End Patch"
    )


def mixed_child(repo: str, step: int, conn: Any) -> None:
    """Apply ``mixed_patch(step)`` through the tool, pausing at every hooked file-system call
    until the parent says go (so the parent can SIGKILL it at an exact point)."""
    import os

    def report(event: str) -> None:
        conn.send(("event", event))
        conn.recv()

    try:
        from gitpatch import MountedFilesystem, Workspace, apply_patch_tool

        fs = MountedFilesystem({"/workspace": Workspace.open(repo)})
        tool = apply_patch_tool(fs, fs)
        for name in _HOOKED:
            real = getattr(os, name)

            def hooked(*args: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
                report(_name)
                return _real(*args, **kw)

            setattr(os, name, hooked)
        res = tool(patch=mixed_patch(step))
        conn.send(("finished", str(res)))
    except BaseException:
        conn.send(("error", traceback.format_exc()))
