"""Issue 17 through the real ``gitpatch serve --mode review`` and the SDK's stdio client:
a session's proposals stack, and the reviewer's words reach the agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.doors.cli.clikit import gp_json, gp_ok
from tests.doors.mcp.mcpkit import run, text_of
from tests.gitkit import git

pytestmark = pytest.mark.slow  # a server or git's hooks in processes of their own

CONFIG = "MAX_RETRIES = 1\nTIMEOUT = 10\nHOST = 'localhost'\n"


FILES = {"config.py": CONFIG, "other.py": "x = 1\n"}


def _replace(old: str, new: str) -> list[dict[str, Any]]:
    return [{"old_string": old, "new_string": new}]


def test_review_mode_chains_two_edits_of_one_file_by_version(repo: Path) -> None:
    """Failure 1: the second edit passing the first edit's version is not a conflict, and
    read_file shows the pending change."""

    async def scenario(client: ClientSession) -> Any:
        read = await client.call_tool("read_file", {"path": "config.py"})
        v0 = read.structured_content["version"]
        one = await client.call_tool(
            "patch_resource",
            {"path": "config.py", "edits": _replace("= 1\n", "= 3\n"), "expected_version": v0},
        )
        v1 = one.structured_content["version"]
        again = await client.call_tool("read_file", {"path": "config.py"})
        two = await client.call_tool(
            "patch_resource",
            {"path": "config.py", "edits": _replace("= 10\n", "= 20\n"), "expected_version": v1},
        )
        return one, again, two

    one, again, two = run(repo, scenario, "--mode", "review")
    assert not one.is_error, text_of(one)
    assert not two.is_error, text_of(two)
    assert "MAX_RETRIES = 3" in again.structured_content["content"]
    assert again.structured_content["version"] == one.structured_content["version"]
    # nothing on disk moved; the second proposal stacks on the first
    assert (repo / "config.py").read_text() == CONFIG
    first, second = one.structured_content["proposal_id"], two.structured_content["proposal_id"]
    parent = git(repo, "rev-parse", f"gitpatch/{second}^").strip()
    assert parent == git(repo, "rev-parse", f"gitpatch/{first}").strip()
    shown = gp_json(repo, "show", second)
    assert shown["info"]["lands"] == [first]
    assert "+TIMEOUT = 20" in shown["diff"] and "-MAX_RETRIES = 1" not in shown["diff"]


def test_reject_reason_reaches_the_agent_and_a_revision_goes_through(repo: Path) -> None:
    """Failure 2: who rejected and why are in show_proposal and list_proposals (text and
    structuredContent), the next result starts with a notice, and ``revises`` works."""
    edits = _replace("HOST = 'localhost'", "HOST = '0.0.0.0'")

    async def propose(client: ClientSession) -> Any:
        return await client.call_tool("patch_resource", {"path": "config.py", "edits": edits})

    first = run(repo, propose, "--mode", "review", "--session", "bot")
    pid = first.structured_content["proposal_id"]
    gp_ok(repo, "reject", pid, "--reason", "never bind all interfaces", "--by", "Rev")

    async def follow_up(client: ClientSession) -> Any:
        listed = await client.call_tool("list_proposals", {})
        shown = await client.call_tool("show_proposal", {"id": pid})
        replay = await client.call_tool("patch_resource", {"path": "config.py", "edits": edits})
        revised = await client.call_tool(
            "patch_resource", {"path": "config.py", "edits": edits, "revises": pid}
        )
        return listed, shown, replay, revised

    listed, shown, replay, revised = run(repo, follow_up, "--mode", "review", "--session", "bot")
    assert text_of(listed).startswith(f"Proposal {pid} was rejected by Rev")
    assert "never bind all interfaces" in text_of(listed)
    (item,) = [p for p in listed.structured_content["proposals"] if p["id"] == pid]
    assert item["status"] == "rejected" and item["reason"] == "never bind all interfaces"
    assert item["decided_by"] == "Rev" and item["decided_at"]
    assert "never bind all interfaces" in text_of(shown) and "Rev" in text_of(shown)
    assert shown.structured_content["info"]["reason"] == "never bind all interfaces"
    assert replay.is_error and "revises" in text_of(replay)
    assert not revised.is_error, text_of(revised)
    new = revised.structured_content["proposal_id"]
    assert gp_json(repo, "show", new)["info"]["revises"] == pid


def test_revises_naming_no_proposal_is_invalid_params_and_changes_nothing(repo: Path) -> None:
    from mcp.shared.exceptions import MCPError
    from mcp_types import INVALID_PARAMS

    from tests.doors.mcp.mcpkit import repo_state

    args = {"path": "config.py", "edits": _replace("= 1\n", "= 2\n"), "revises": "0123456789ab"}

    async def scenario(client: ClientSession) -> Any:
        try:
            await client.call_tool("patch_resource", args)
        except MCPError as exc:
            return exc
        return None

    before = repo_state(repo)
    error = run(repo, scenario, "--mode", "review", "--session", "bot")
    assert isinstance(error, MCPError) and error.code == INVALID_PARAMS
    assert "revises='0123456789ab' names no proposal" in str(error)
    assert repo_state(repo) == before
