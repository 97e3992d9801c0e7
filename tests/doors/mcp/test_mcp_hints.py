"""The tools' annotations over the real ``gitpatch serve`` and the SDK's stdio client: what
each tool does (reads, lands edits, repeats safely), as a client decides on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.doors.mcp.mcpkit import run
from tests.gitkit import make_repo

pytestmark = pytest.mark.slow  # a server in a process of its own

EDITS = ("patch", "apply_patch", "patch_resource")
READS = ("read_file", "list_proposals", "show_proposal")


async def _hints(client: ClientSession) -> dict[str, Any]:
    listed = await client.list_tools()
    return {t.name: t.annotations for t in listed.tools}


@pytest.mark.parametrize("mode", ["auto", "review"])
def test_each_tool_is_annotated_with_what_it_does(tmp_path: Path, mode: str) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    hints = run(repo, _hints, "--mode", mode)
    for name in EDITS:
        # a retried identical call is answered with the original result: no second change
        assert hints[name].idempotent_hint is True, name
        assert hints[name].read_only_hint is False, name
        # auto mode replaces files' content; review mode only adds a proposal branch
        assert hints[name].destructive_hint is (mode == "auto"), name
        assert hints[name].open_world_hint is False, name
    for name in READS:
        assert hints[name].read_only_hint is True, name
        assert hints[name].idempotent_hint is True, name
        assert hints[name].open_world_hint is False, name


def test_the_mode_of_the_config_decides_when_serve_names_none(tmp_path: Path) -> None:
    plain = make_repo(tmp_path / "plain", {"a.txt": "a\n"})
    config = {"a.txt": "a\n", ".gitpatch.toml": '[review]\nmode = "review"\n'}
    reviewed = make_repo(tmp_path / "reviewed", config)
    assert all(run(plain, _hints)[name].destructive_hint is True for name in EDITS)
    assert all(run(reviewed, _hints)[name].destructive_hint is False for name in EDITS)
