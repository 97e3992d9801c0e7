"""One ``.gitpatch.toml`` (and git config beside it) read the same way by every door.

Python (``Workspace.open`` and the tools over it), the CLI and the MCP server resolve the
settings through ``gitpatch.workspace.config.settings``: the same mode, the same protected
branches (git config over the file), the same tool rules (``[policy]`` and ``gitpatch.tool*``
together). CLI edits are a person's and skip the tool rules (docs/decisions.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from gitpatch import Workspace, patch_resource_tool
from gitpatch.doors.cli import main
from gitpatch.doors.mcp import build_server, workspace_tools
from gitpatch.tools.storage.workspace import WorkspaceStorage
from gitpatch.workspace.config import settings
from tests.gitkit import git, make_repo

TOML = """\
[review]
mode = "review"
protected = ["trunk"]

[policy]
deny = ["secret.txt"]
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    files = {"a.txt": "a1\n", "b.txt": "b1\n", "secret.txt": "s1\n", ".gitpatch.toml": TOML}
    root = make_repo(tmp_path / "repo", files)
    git(root, "config", "gitpatch.protected", "release")
    git(root, "config", "gitpatch.toolAsk", "a.txt")
    return root


def _edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"path": path, "edits": [{"old_string": old, "new_string": new}]}


def _python(repo: Path) -> dict[str, Any]:
    ws = Workspace.open(repo)
    storage = WorkspaceStorage.of(ws)
    tool = patch_resource_tool(storage, storage)
    return {
        "mode": ws.mode,
        "protected": sorted(ws.plumbing.context.protected),
        "status": ws.apply([{"old_string": "b1", "new_string": "B1"}], path="b.txt").status,
        "secret": tool(**_edit("secret.txt", "s1", "S1")).code,
        "asked": tool(**_edit("a.txt", "a1", "A1")).code,
    }


def _mcp(repo: Path) -> dict[str, Any]:
    async def call() -> list[Any]:
        async with Client(build_server(workspace_tools(str(repo)))) as client:
            return [
                await client.call_tool("patch_resource", _edit("b.txt", "b1", "B1")),
                await client.call_tool("patch_resource", _edit("secret.txt", "s1", "S1")),
                await client.call_tool("patch_resource", _edit("a.txt", "a1", "A1")),
            ]

    edit, secret, asked = anyio.run(call)
    return {
        "status": _held(repo, edit.structured_content["proposal_id"]),
        "secret": secret.content[0].text.split(":", 1)[0],
        "asked": asked.content[0].text.split(":", 1)[0],
    }


def _held(repo: Path, pid: str) -> str:
    """``proposed`` when the change waits on its proposal branch, else ``applied``."""
    found = git(repo, "rev-parse", "--verify", "-q", f"refs/heads/gitpatch/{pid}", check=False)
    return "proposed" if found.strip() else "applied"


def _cli(repo: Path) -> dict[str, Any]:
    patch = "*** Begin Patch\n*** Update File: b.txt\n@@\n-b1\n+B1\n*** End Patch\n"
    runner = CliRunner(env={"NO_COLOR": None})
    out = runner.invoke(main, ["-C", str(repo), "--json", "apply-patch", "-"], input=patch)
    assert out.exit_code == 0, out.stderr
    return {"status": json.loads(out.stdout)["status"]}


def test_one_toml_gives_one_answer_through_python_the_cli_and_mcp(repo: Path) -> None:
    resolved = settings(Workspace.open(repo).plumbing.store)
    assert (resolved.mode, resolved.protected, resolved.dirty) == ("review", ("release",), "carry")
    python, mcp, cli = _python(repo), _mcp(repo), _cli(repo)
    assert python == {
        "mode": "review",
        "protected": ["refs/heads/release"],
        "status": "proposed",
        "secret": "forbidden",
        "asked": "approval_required",
    }
    assert mcp == {key: python[key] for key in ("status", "secret", "asked")}
    assert cli == {"status": python["status"]}
    assert git(repo, "show", "HEAD:b.txt") == "b1\n"  # review mode: nothing landed
