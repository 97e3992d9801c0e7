"""What one call costs in steps: the doors ask the Workspace once per question.

One MCP edit looks for other sessions' work on its files once; one CLI approval looks its id up
once and builds no diff just to say what else it lands. Counted by wrapping the step (the
real one still runs), on real repositories. And one MCP edit enters exactly the modules that
docs/architecture.md's walk-through names (recorded with a profiler hook).
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from gitpatch.doors.cli import main
from gitpatch.doors.mcp import build_server, workspace_tools
from gitpatch.porcelain import Workspace
from gitpatch.review import lifecycle, series
from tests.gitkit import git, make_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"a.txt": "a1\na2\n", "b.txt": "b1\n"})


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Any, str], list[int]]]:
    """``counted(module, name)``: a list that grows by one per call of ``module.name``."""

    def count(module: Any, name: str) -> list[int]:
        real = getattr(module, name)
        calls: list[int] = []

        def wrapper(*args: Any, **kw: Any) -> Any:
            calls.append(1)
            return real(*args, **kw)

        monkeypatch.setattr(module, name, wrapper)
        return calls

    yield count


def test_one_mcp_edit_looks_for_other_sessions_work_once(
    repo: Path, counted: Callable[[Any, str], list[int]]
) -> None:
    other = Workspace.open(repo, mode="review", session="other")
    mine = other.apply([{"old_string": "a1", "new_string": "A1"}], path="a.txt").proposal_id
    looked = counted(series, "overlaps")

    async def call() -> Any:
        toolset = workspace_tools(str(repo), "review", "me")
        async with Client(build_server(toolset)) as client:
            args = {"path": "a.txt", "edits": [{"old_string": "a2", "new_string": "A2"}]}
            return await client.call_tool("patch_resource", args)

    result = anyio.run(call)
    assert not result.is_error
    assert looked == [1]
    flag = (
        "Another session also changes a.txt near your line 2: "
        f"session other (proposal {mine}) changes line 1."
    )
    assert result.structured_content["notices"] == [flag]


def test_one_mcp_edit_normalises_its_path_once(
    repo: Path, counted: Callable[[Any, str], list[int]]
) -> None:
    """The tool resolves the path (policy needs its name before parsing) with the
    Workspace's own normaliser, and marks the proposal of those keys normalised: the
    Workspace's edge and the engine trust the mark (``Proposal.normalized``)."""
    from gitpatch.core import paths
    from gitpatch.porcelain import Plumbing
    from gitpatch.tools.storage import base

    tool, again = counted(Plumbing, "normalize"), counted(paths, "normalize")
    plain = counted(base, "normalize")  # a plain storage's normaliser

    async def call() -> Any:
        async with Client(build_server(workspace_tools(str(repo), "auto", "me"))) as client:
            block = "<<<<<<< SEARCH\na1\n=======\nA1\n>>>>>>> REPLACE\n"
            return await client.call_tool("patch", {"path": "a.txt", "edits": block})

    result = anyio.run(call)
    assert not result.is_error
    assert (tool, again, plain) == ([1], [], [])
    assert git(repo, "show", "HEAD:a.txt") == "A1\na2\n"


def test_one_result_type_from_the_tool_to_the_door_and_errors_converted_once(
    repo: Path, counted: Callable[[Any, str], list[int]]
) -> None:
    """The edit handlers hand the tool's own ``ToolResult`` to the door (a door's own
    ``Reply`` is one too); a refused edit becomes a result once, in the tool layer."""
    from gitpatch.errors import GitpatchError
    from gitpatch.tools import ToolResult
    from gitpatch.tools.definitions import PatchArgs

    toolset = workspace_tools(str(repo), "auto", "me")
    block = "<<<<<<< SEARCH\nnot there\n=======\nX\n>>>>>>> REPLACE\n"
    converted = counted(GitpatchError, "to_dict")  # what the tools' one conversion calls
    refused = toolset.handlers["patch"](PatchArgs(path="a.txt", edits=block))
    assert type(refused) is ToolResult and refused.code == "match_not_found"
    assert converted == [1]

    async def call() -> Any:
        async with Client(build_server(toolset)) as client:
            return await client.call_tool("patch", {"path": "a.txt", "edits": block})

    result = anyio.run(call)
    assert result.is_error and converted == [1, 1]
    assert result.content[0].text == f"match_not_found: {refused.text}"
    assert git(repo, "show", "HEAD:a.txt") == "a1\na2\n"


def test_one_mcp_edit_validates_its_arguments_once_and_recovers_once(
    repo: Path, counted: Callable[[Any, str], list[int]]
) -> None:
    """The door validates the arguments once (its middleware; the handler takes that model),
    and recovery from a killed process runs once per call, not once per Workspace verb the
    door runs (notices, replay check, propose, overlaps)."""
    from gitpatch.store import Store
    from gitpatch.tools.definitions import PatchArgs

    recovered, validated = counted(Store, "recover"), counted(PatchArgs, "model_validate")

    async def call() -> Any:
        async with Client(build_server(workspace_tools(str(repo), "auto", "me"))) as client:
            block = "<<<<<<< SEARCH\na1\n=======\nA1\n>>>>>>> REPLACE\n"
            first = await client.call_tool("patch", {"path": "a.txt", "edits": block})
            recovered.clear()
            validated.clear()
            block = "<<<<<<< SEARCH\na2\n=======\nA2\n>>>>>>> REPLACE\n"
            return first, await client.call_tool("patch", {"path": "a.txt", "edits": block})

    first, second = anyio.run(call)
    assert not first.is_error and not second.is_error
    assert (recovered, validated) == ([1], [1])
    assert git(repo, "show", "HEAD:a.txt") == "A1\nA2\n"


def test_one_cli_approval_looks_its_id_up_once_and_builds_no_diff(
    repo: Path, counted: Callable[[Any, str], list[int]]
) -> None:
    ws = Workspace.open(repo, mode="review", session="bot")
    below = ws.apply([{"old_string": "a1", "new_string": "A1"}], path="a.txt").proposal_id
    top = ws.apply([{"old_string": "b1", "new_string": "B1"}], path="b.txt").proposal_id
    found, shown = counted(lifecycle, "find"), counted(lifecycle, "show")
    runner = CliRunner(env={"NO_COLOR": None})
    out = runner.invoke(main, ["-C", str(repo), "approve", top, "--by", "Rev"])
    assert out.exit_code == 0, out.stderr
    assert f"approving {top} also lands the open proposals beneath it: {below}" in out.stderr
    assert (found, shown) == ([1], [])
    assert git(repo, "show", "work:a.txt") == "A1\na2\n"
    assert git(repo, "show", "work:b.txt") == "B1\n"


ROOT = Path(__file__).resolve().parents[2]


def _walk_through() -> tuple[int, set[str]]:
    """docs/architecture.md's count and the modules its walk-through of one MCP edit names."""
    doc = ROOT.joinpath("docs", "architecture.md").read_text(encoding="utf-8")
    section = doc.split("\n## One MCP edit, walked through\n", 1)[1].split("\n## ", 1)[0]
    count = int(re.search(r"enters (\d+) gitpatch modules", section).group(1))  # type: ignore[union-attr]
    block = section.split("```", 2)[1]
    names = set(re.findall(r"\b(gitpatch(?:\.[A-Za-z_]+)*)", block))
    return count, names


def _entered_by_one_edit(repo: Path) -> set[str]:
    """The gitpatch modules whose code runs during one MCP ``patch`` call in auto mode (the
    second of two, so first-use imports and caches do not count)."""
    entered: set[str] = set()

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event == "call":
            name = frame.f_globals.get("__name__", "")
            if name.startswith("gitpatch"):
                entered.add(name)

    def block(old: str, new: str) -> str:
        return f"<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"

    async def calls() -> Any:
        async with Client(build_server(workspace_tools(str(repo), "auto"))) as client:
            await client.call_tool("patch", {"path": "a.txt", "edits": block("a1", "A1")})
            entered.clear()
            result = await client.call_tool("patch", {"path": "a.txt", "edits": block("a2", "A2")})
            profiler_off()
            return result

    def profiler_off() -> None:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]

    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        result = anyio.run(calls)
    finally:
        profiler_off()
    assert not result.is_error
    return entered


def test_one_mcp_edit_enters_the_modules_the_walk_through_names(repo: Path) -> None:
    count, named = _walk_through()
    entered = _entered_by_one_edit(repo)
    assert sorted(entered) == sorted(named), "update docs/architecture.md's walk-through"
    assert len(named) == count
