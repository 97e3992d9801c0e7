"""What a restarted ``gitpatch serve`` says, through the SDK's stdio client: a call retried
after a restart gets the whole original result; a warning about another session's work on
the same file ends the edit result that caused it, and is not told again after a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.doors.mcp.mcpkit import run, text_of
from tests.gitkit import git

pytestmark = pytest.mark.slow  # servers in processes of their own

CONFIG = "MAX_RETRIES = 1\nTIMEOUT = 10\n"
PATCH = "<<<<<<< SEARCH\nMAX_RETRIES = 1\n=======\nMAX_RETRIES = 3\n>>>>>>> REPLACE\n"
APPLY = (
    "*** Begin Patch\n*** Add File: new.txt\n+hi\n"
    "*** Update File: b.py\n@@\n-b = 1\n+b = 2\n*** End Patch\n"
)

CALLS: dict[str, dict[str, Any]] = {
    "patch": {"path": "config.py", "edits": PATCH},
    "apply_patch": {"patch": APPLY},
    "patch_resource": {
        "path": "config.py",
        "edits": [{"old_string": "TIMEOUT = 10", "new_string": "TIMEOUT = 20"}],
    },
}


FILES = {"config.py": CONFIG, "b.py": "b = 1\n"}
BRANCH = "main"


def _call(tool: str) -> Any:
    async def scenario(client: ClientSession) -> Any:
        return await client.call_tool(tool, CALLS[tool])

    return scenario


@pytest.mark.parametrize("tool", sorted(CALLS))
@pytest.mark.parametrize("mode", ["review", "auto"])
def test_a_call_retried_after_a_restart_gets_the_whole_original_result(
    repo: Path, tool: str, mode: str
) -> None:
    serve = ("--mode", mode, "--session", "fixer")
    first = run(repo, _call(tool), *serve)
    assert not first.is_error, text_of(first)
    refs = git(repo, "for-each-ref")
    again = run(repo, _call(tool), *serve)  # a new server process: nothing in memory
    assert not again.is_error, text_of(again)
    assert git(repo, "for-each-ref") == refs  # nothing changed again
    assert again.structured_content == {**first.structured_content, "already_applied": True}
    assert text_of(again).startswith("Already applied")
    assert text_of(again).endswith(f"The original result:\n{text_of(first)}")
    if mode == "auto":  # main is protected, edits alone made no worktree: none is named
        assert "worktree" not in again.structured_content
    if tool != "apply_patch":
        assert again.structured_content["id"] is not None


def _edit(old: str, new: str) -> dict[str, Any]:
    return {"path": "config.py", "edits": [{"old_string": old, "new_string": new}]}


def _calls(*calls: tuple[str, dict[str, Any]]) -> Any:
    async def scenario(client: ClientSession) -> list[Any]:
        return [await client.call_tool(name, args) for name, args in calls]

    return scenario


READ = ("read_file", {"path": "b.py"})


@pytest.mark.parametrize("mode", ["review", "auto"])
def test_another_sessions_work_is_told_once_at_the_end_also_across_restarts(
    repo: Path, mode: str
) -> None:
    x, y = ("--mode", mode, "--session", "x"), ("--mode", mode, "--session", "y")
    (mine,) = run(repo, _calls(("patch_resource", _edit("= 1\n", "= 2\n"))), *x)
    assert "Another session" not in text_of(mine)
    edit, later = run(repo, _calls(("patch_resource", _edit("= 10\n", "= 20\n")), READ), *y)
    assert not edit.is_error, text_of(edit)
    # the edit that made the overlap: its own result first, the warning ends it
    warning = text_of(edit).splitlines()[-1]
    assert warning.startswith(
        "Another session also changes config.py near your line 2: session x ("
    )
    assert not text_of(edit).startswith("Another session")
    assert edit.structured_content["notices"] == [warning]
    assert "Another session" not in text_of(later)
    (restarted,) = run(repo, _calls(READ), *y)  # a new server for y: told already
    assert "Another session" not in text_of(restarted)
    assert "notices" not in (restarted.structured_content or {})
    # x was never told: its next result starts with the news, once, across restarts too
    (news,) = run(repo, _calls(READ), *x)
    assert text_of(news).startswith(
        "Another session also changes config.py near your line 1: session y ("
    )
    (again,) = run(repo, _calls(READ), *x)
    assert "Another session" not in text_of(again)
