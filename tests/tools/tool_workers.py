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
