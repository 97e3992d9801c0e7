"""Sessions through the real ``gitpatch serve`` and the SDK's stdio client: named by the
client, unique per live connection, resumed by name; overlaps flagged; retries idempotent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession

from tests.doors.cli.clikit import gp_json
from tests.doors.mcp.mcpkit import console_script, named_client, run, text_of
from tests.gitkit import git

pytestmark = pytest.mark.slow  # a server or browser in a process of its own

CONFIG = "MAX_RETRIES = 1\nTIMEOUT = 10\n"

REVIEW = ("--mode", "review")


FILES = {"config.py": CONFIG, "b.py": "b = 1\n"}


def _edit(old: str, new: str, path: str = "config.py") -> dict[str, Any]:
    return {"path": path, "edits": [{"old_string": old, "new_string": new}]}


def _sessions(repo: Path) -> dict[str, str]:
    """proposal id -> session, for the open proposals."""
    return {p["id"]: p["session"] for p in gp_json(repo, "proposals")}


def test_two_live_clients_of_one_name_get_two_sessions_and_see_each_other(repo: Path) -> None:
    async def main() -> Any:
        with anyio.fail_after(60):
            async with (
                named_client(repo, "Claude Code", *REVIEW) as one,
                named_client(repo, "Claude Code", *REVIEW) as two,
            ):
                first = await one.call_tool("patch_resource", _edit("= 1\n", "= 2\n"))
                second = await two.call_tool("patch_resource", _edit("= 10\n", "= 20\n"))
                later = await one.call_tool("read_file", {"path": "b.py"})
                mine = await one.call_tool("read_file", {"path": "config.py"})
                return first, second, later, mine

    first, second, later, mine = anyio.run(main)
    assert not first.is_error and not second.is_error, text_of(second)
    one, two = first.structured_content["proposal_id"], second.structured_content["proposal_id"]
    assert _sessions(repo) == {one: "claude-code", two: "claude-code-2"}
    # never a shared stack: each session read and built on the target, not on the other's work
    assert "MAX_RETRIES = 1" in git(repo, "show", f"gitpatch/{two}:config.py")
    assert "MAX_RETRIES = 2" in mine.structured_content["content"]
    assert "TIMEOUT = 10" in mine.structured_content["content"]
    # flagged in both sessions' results and in the review list
    # to the line: two changes next to each other merge with a conflict (git's rule)
    flag = (
        "Another session also changes config.py near your line 2: "
        f"session claude-code (proposal {one}) changes line 1."
    )
    assert flag in text_of(second)
    assert second.structured_content["notices"] == [flag]
    assert text_of(later).startswith(
        "Another session also changes config.py near your line 1: "
        f"session claude-code-2 (proposal {two}) changes line 2."
    )
    listed = {p["id"]: p for p in gp_json(repo, "proposals")}
    assert listed[one]["overlaps"] == [f"config.py: session claude-code-2 (proposal {two})"]


def test_a_restarted_agent_resumes_its_session_by_name(repo: Path) -> None:
    async def first(client: ClientSession) -> Any:
        return await client.call_tool("patch_resource", _edit("= 1\n", "= 2\n"))

    async def again(client: ClientSession) -> Any:
        read = await client.call_tool("read_file", {"path": "config.py"})
        edit = await client.call_tool(
            "patch_resource",
            {**_edit("= 10\n", "= 20\n"), "expected_version": read.structured_content["version"]},
        )
        return read, edit

    one = run(repo, first, *REVIEW, "--session", "fixer")
    read, edit = run(repo, again, *REVIEW, "--session", "fixer")
    assert "MAX_RETRIES = 2" in read.structured_content["content"]
    assert not edit.is_error, text_of(edit)
    pid = one.structured_content["proposal_id"]
    assert gp_json(repo, "show", edit.structured_content["proposal_id"])["info"]["lands"] == [pid]


def test_an_identical_call_replayed_after_it_applied_is_answered_already_applied(
    repo: Path,
) -> None:
    async def scenario(client: ClientSession) -> Any:
        one = await client.call_tool("patch_resource", _edit("= 1\n", "= 2\n"))
        two = await client.call_tool("patch_resource", _edit("= 1\n", "= 2\n"))
        return one, two

    one, two = run(repo, scenario, *REVIEW)
    assert not one.is_error and not two.is_error, text_of(two)
    assert text_of(two).startswith("Already applied")
    assert two.structured_content["already_applied"] is True
    assert two.structured_content["proposal_id"] == one.structured_content["proposal_id"]
    assert len(gp_json(repo, "proposals")) == 1


def test_an_identical_call_in_auto_mode_is_not_a_second_change(repo: Path) -> None:
    patch = "*** Begin Patch\n*** Add File: new.txt\n+hi\n*** End Patch\n"

    async def scenario(client: ClientSession) -> Any:
        one = await client.call_tool("apply_patch", {"patch": patch})
        two = await client.call_tool("apply_patch", {"patch": patch})
        return one, two

    before = git(repo, "rev-list", "--count", "HEAD")
    one, two = run(repo, scenario, "--mode", "auto")
    assert not one.is_error and not two.is_error, text_of(two)
    assert text_of(two).startswith("Already applied")
    assert int(git(repo, "rev-list", "--count", "HEAD")) == int(before) + 1


def test_an_invalid_session_name_is_refused_before_serving(repo: Path) -> None:
    from tests.doors.cli.clikit import gp

    out = gp(repo, "serve", "--session", "a/b")
    assert out.returncode == 1 and out.stderr.startswith("invalid_arguments:"), out.stderr


def test_a_call_retried_on_a_restarted_server_is_answered_already_applied(repo: Path) -> None:
    edit = {"path": "config.py", "edits": [{"after_line": 0, "new_string": "# top\n"}]}

    async def once(client: ClientSession) -> Any:
        return await client.call_tool("patch_resource", edit)

    one = run(repo, once, *REVIEW, "--session", "retry")
    two = run(repo, once, *REVIEW, "--session", "retry")
    assert not two.is_error, text_of(two)
    assert text_of(two).startswith("Already applied")
    assert two.structured_content["proposal_id"] == one.structured_content["proposal_id"]
    assert two.structured_content["version"] == one.structured_content["version"]
    assert len(gp_json(repo, "proposals")) == 1
    # a different call is a new change, stacked on the first
    three = run(
        repo,
        lambda c: c.call_tool("read_file", {"path": "config.py"}),
        "--mode",
        "review",
        "--session",
        "retry",
    )
    assert three.structured_content["content"].startswith("# top\n")


def test_an_explicit_session_held_by_a_live_server_is_refused(repo: Path) -> None:
    import subprocess

    from tests.gitkit import git_env

    async def scenario(client: ClientSession) -> Any:
        await client.call_tool("read_file", {"path": "b.py"})
        return subprocess.run(
            [console_script(), "-C", str(repo), "serve", "--session", "solo"],
            input="",
            capture_output=True,
            text=True,
            env=git_env(repo),
            timeout=30,
            check=False,
        )

    refs = git(repo, "for-each-ref")
    second = run(repo, scenario, "--session", "solo")
    assert second.returncode == 1, second.stderr
    assert second.stderr.startswith("invalid_arguments: session 'solo' is in use"), second.stderr
    assert git(repo, "for-each-ref") == refs
