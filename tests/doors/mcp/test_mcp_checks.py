"""The project's checks for an agent through the real ``gitpatch serve`` (SDK stdio client):
``run_checks`` on its own stack before it asks, and what it is told when an approval's checks
fail (the check, its exit code and the end of its output) in its next result and in
``show_proposal``; clashes with another session's lines flagged when it proposes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.doors.cli.clikit import gp
from tests.doors.mcp.mcpkit import named_client, text_of
from tests.review.checkskit import checked_repo

pytestmark = pytest.mark.slow  # a server in a process of its own

REVIEW = ("--mode", "review")


def _edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"path": path, "edits": [{"old_string": old, "new_string": new}]}


def test_an_agent_runs_the_checks_and_hears_why_an_approval_failed(tmp_path: Path) -> None:
    repo, log = checked_repo(tmp_path / "repo")

    async def main() -> tuple[Any, ...]:
        with anyio.fail_after(120):
            async with named_client(repo, "bot", *REVIEW) as bot:
                made = await bot.call_tool("patch_resource", _edit("b.txt", "1\n", "9\n"))
                checked = await bot.call_tool("run_checks", {})
                pid = made.structured_content["proposal_id"]
                refused = gp(repo, "approve", "bot", "--by", "Pat")
                told = await bot.call_tool("list_proposals", {})
                shown = await bot.call_tool("show_proposal", {"id": pid})
                return checked, refused, told, shown

    checked, refused, told, shown = anyio.run(main)
    assert not checked.is_error
    data = checked.structured_content
    assert data["passed"] is False and data["runs"][0]["exit_code"] == 1
    assert "exit code 1; the output ends:\nsum is 10" in text_of(checked)
    assert refused.returncode == 1 and "\nchecks_failed: " in refused.stderr
    assert "output ends:\nsum is 10\n" in refused.stderr
    notice = told.structured_content["notices"][0]
    assert "failed the checks" in notice and "sum is 10" in notice
    assert text_of(told).startswith(notice)
    info = shown.structured_content["info"]
    assert info["status"] == "checks_failed" and info["checks"]["runs"][0]["output"] == "sum is 10"
    assert not log.exists()  # the check that logs never ran: the first one failed


def test_a_clash_with_another_sessions_lines_is_flagged_when_proposed(tmp_path: Path) -> None:
    repo, _log = checked_repo(tmp_path / "repo")

    async def main() -> tuple[Any, Any]:
        with anyio.fail_after(120):
            async with (
                named_client(repo, "ann", *REVIEW) as ann,
                named_client(repo, "ben", *REVIEW) as ben,
            ):
                first = await ann.call_tool("patch_resource", _edit("c.txt", "two\n", "2\n"))
                apart = await ben.call_tool("patch_resource", _edit("c.txt", "five\n", "5\n"))
                near = await ben.call_tool("patch_resource", _edit("c.txt", "three\n", "3\n"))
                return first, apart, near

    first, apart, near = anyio.run(main)
    ann_id = first.structured_content["proposal_id"]
    assert "notices" not in apart.structured_content  # line 5 is far from line 2: no clash
    assert near.structured_content["notices"] == [
        "Another session also changes c.txt near your line 3: "
        f"session ann (proposal {ann_id}) changes line 2."
    ]
