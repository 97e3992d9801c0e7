"""``gitpatch serve --cpu-seconds``: the stdio server runs each call under a budget when told
(none by default), through the SDK's own client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.doors.cli.clikit import gp
from tests.doors.mcp.mcpkit import repo_state, run, text_of
from tests.gitkit import make_repo

pytestmark = pytest.mark.slow

TEXT = ("a" * 60 + "\n") * 3000
FLIP = [
    {"old_string": "a", "new_string": "b", "replace_all": True},
    {"old_string": "b", "new_string": "a", "replace_all": True},
]


def test_a_call_past_the_stdio_budget_is_budget_exceeded_and_changes_nothing(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": TEXT})
    before = repo_state(repo)

    async def scenario(client: ClientSession) -> tuple[Any, Any]:
        heavy = await client.call_tool("patch_resource", {"path": "a.txt", "edits": FLIP * 200})
        light = await client.call_tool("read_file", {"path": "a.txt", "limit": 1})
        return heavy, light

    heavy, light = run(repo, scenario, "--cpu-seconds", "0.1", "--wall-seconds", "30")
    assert heavy.is_error and heavy.meta["code"] == "budget_exceeded", text_of(heavy)
    assert "CPU budget of 0.1 s" in text_of(heavy)
    assert not light.is_error  # the next call has a budget of its own
    assert repo_state(repo) == before


def test_the_budget_options_are_refused_with_http(tmp_path: Path) -> None:
    result = gp(tmp_path, "serve", "--http", "127.0.0.1:0", "--cpu-seconds", "1")
    assert result.returncode != 0
    assert "credentials file" in result.stderr + result.stdout
