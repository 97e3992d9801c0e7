"""What a restarted ``gitpatch serve`` says, through the SDK's stdio client: a call retried
after a restart gets the whole original result; a warning about another session's work on
the same file ends the edit result that caused it, and is not told again after a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.doors.mcp.mcpkit import run, text_of
from tests.gitkit import git, make_repo

pytestmark = pytest.mark.slow  # servers in processes of their own

CONFIG = "MAX_RETRIES = 1\nTIMEOUT = 10\n"
PATCH = "<<<<<<< SEARCH\nMAX_RETRIES = 1\n=======\nMAX_RETRIES = 3\n>>>>>>> REPLACE\n"
APPLY = "*** Begin Patch\n*** Add File: new.txt\n+hi\n*** Update File: b.py\n@@\n-b = 1\n+b = 2\n*** End Patch\n"

CALLS: dict[str, dict[str, Any]] = {
    "patch": {"path": "config.py", "edits": PATCH},
    "apply_patch": {"patch": APPLY},
    "patch_resource": {
        "path": "config.py",
        "edits": [{"old_string": "TIMEOUT = 10", "new_string": "TIMEOUT = 20"}],
    },
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"config.py": CONFIG, "b.py": "b = 1\n"}, branch="main")


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
    if mode == "auto":  # main is protected: the session's worktree is named again
        assert again.structured_content["worktree"]
    if tool != "apply_patch":
        assert again.structured_content["id"] is not None
