"""Each door speaks its own terms: no Python call in a CLI or MCP hint; what is in progress is
said as such (a rebase, a bisect), not "HEAD is detached"."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from mcp import ClientSession

from gitpatch.doors.cli import main
from tests.doors.mcp.mcpkit import run, text_of
from tests.gitkit import git, make_repo

PYTHON = re.compile(r"Workspace\.open|approve\('|proposals\(\)|undo\(\)|dirty='|revision=True")
EDIT = '[{"old_string": "one", "new_string": "ONE"}]'


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", {"a.txt": "one\n", "b.txt": "b\n"}, branch="main")


def cli(repo: Path, *args: str) -> Result:
    runner = CliRunner(env={"NO_COLOR": "1"})
    return runner.invoke(main, ["-C", str(repo), *args], catch_exceptions=False)


def test_cli_session_message_names_the_command(repo: Path) -> None:
    out = cli(repo, "edit", "a.txt", "--edits", EDIT)
    assert out.exit_code == 0, out.stderr
    assert "`gitpatch approve agent`" in out.stdout and not PYTHON.search(out.stdout)


def test_cli_proposal_not_found_names_the_command(repo: Path) -> None:
    out = cli(repo, "show", "0123456789ab")
    assert out.exit_code == 1 and out.stderr.startswith("proposal_not_found")
    assert "`gitpatch proposals`" in out.stderr and not PYTHON.search(out.stderr)
    js = cli(repo, "--json", "show", "0123456789ab")
    assert "gitpatch proposals" in js.stderr and not PYTHON.search(js.stderr)


def test_cli_detached_head_says_git_switch(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach")
    out = cli(repo, "edit", "a.txt", "--edits", EDIT)
    assert out.exit_code == 1 and out.stderr.startswith("repository_error")
    assert "git switch" in out.stderr and not PYTHON.search(out.stderr)


def test_cli_during_a_rebase_says_a_rebase_is_in_progress(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "a.txt").write_text("side\n")
    git(repo, "commit", "-q", "-am", "side")
    git(repo, "checkout", "-q", "main")
    (repo / "a.txt").write_text("main\n")
    git(repo, "commit", "-q", "-am", "main")
    git(repo, "checkout", "-q", "side")
    git(repo, "rebase", "main", check=False)  # stops on the conflict, HEAD detached
    out = cli(repo, "edit", "b.txt", "--edits", '[{"old_string": "b", "new_string": "B"}]')
    assert out.exit_code == 1 and out.stderr.startswith("operation_in_progress")
    assert "rebase is in progress" in out.stderr and "side" in out.stderr
    assert "git rebase --continue" in out.stderr and "detached" not in out.stderr
    assert "check out a branch" not in out.stderr.lower()


def test_cli_during_a_bisect_says_a_bisect_is_in_progress(repo: Path) -> None:
    for n in range(3):
        (repo / "b.txt").write_text(f"b{n}\n")
        git(repo, "commit", "-q", "-am", f"b{n}")
    git(repo, "bisect", "start", "HEAD", "HEAD~3")  # checks out a commit in between
    out = cli(repo, "edit", "a.txt", "--edits", EDIT)
    assert out.exit_code == 1 and out.stderr.startswith("operation_in_progress")
    assert "bisect is in progress" in out.stderr and "git bisect reset" in out.stderr


@pytest.mark.slow  # the MCP server in a process of its own
def test_mcp_texts_name_tools_and_commands_not_python(repo: Path) -> None:
    async def scenario(client: ClientSession) -> list[Any]:
        edited = await client.call_tool(
            "patch_resource",
            {"path": "a.txt", "edits": [{"old_string": "one", "new_string": "ONE"}]},
        )
        missing = await client.call_tool("show_proposal", {"id": "0123456789ab"})
        return [edited, missing]

    edited, missing = run(repo, scenario)
    assert not edited.is_error
    assert missing.is_error and "list_proposals" in text_of(missing)
    for result in (edited, missing):
        assert not PYTHON.search(text_of(result)), text_of(result)


@pytest.mark.slow  # the MCP server in a process of its own
def test_file_content_is_never_rewritten(repo: Path) -> None:
    """The mapping applies to gitpatch's own words, never to a file's content."""
    code = "items = ws.proposals()\nws.approve('agent')\n"
    (repo / "b.txt").write_text(code)
    git(repo, "commit", "-q", "-am", "code that looks like the API")
    out = cli(repo, "read", "b.txt")
    assert out.exit_code == 0 and "ws.proposals()" in out.stdout
    assert "approve('agent')" in out.stdout

    async def scenario(client: ClientSession) -> Any:
        return await client.call_tool("read_file", {"path": "b.txt"})

    read = run(repo, scenario)
    assert not read.is_error and "ws.proposals()" in text_of(read)
    assert "approve('agent')" in text_of(read)
