"""The README's MCP client configs, parsed from README.md and started as a client would:
both forms (a global ``gitpatch``, a project virtualenv's path) for Claude Code and Codex."""

from __future__ import annotations

import os
import re
import shlex
import tomllib
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.doors.mcp.mcpkit import console_script
from tests.gitkit import GIT_ENV, make_repo

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.S)
VENV = "/path/to/project/.venv/bin/gitpatch"
REPO = "/path/to/repo"


def _blocks(lang: str) -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [body for kind, body in BLOCK.findall(text) if kind == lang]


def claude_commands() -> list[list[str]]:
    """The command and arguments of each ``claude mcp add gitpatch -- ...`` line."""
    lines = [line for body in _blocks("") for line in body.splitlines()]
    found = [shlex.split(line) for line in lines if line.startswith("claude mcp add gitpatch")]
    return [words[words.index("--") + 1 :] for words in found]


def codex_commands() -> list[list[str]]:
    """The command and arguments of each ``[mcp_servers.gitpatch]`` table."""
    tables = [tomllib.loads(body)["mcp_servers"]["gitpatch"] for body in _blocks("toml")]
    return [[table["command"], *table["args"]] for table in tables]


@pytest.mark.parametrize("configs", [claude_commands, codex_commands])
def test_both_forms_are_given(configs: object) -> None:
    commands = configs()  # type: ignore[operator]
    assert sorted(c[0] for c in commands) == sorted(["gitpatch", VENV])
    assert {tuple(c[1:]) for c in commands} == {("-C", REPO, "serve", "--mode", "review")}


def test_the_install_section_names_each_way() -> None:
    (install,) = [b for b in _blocks("") if "pip install" in b]
    for way in ("pip install", "uv tool install", "pipx install"):
        assert way in install, way
    assert ".venv/bin/gitpatch" in install


@pytest.mark.slow  # a server in a process of its own per config
@pytest.mark.parametrize(
    "command", [*claude_commands(), *codex_commands()], ids=lambda c: " ".join(c[:1])
)
def test_each_config_starts_a_server_on_the_repository(tmp_path: Path, command: list[str]) -> None:
    """A venv path is this test's virtualenv; a bare ``gitpatch`` is found on PATH, as a
    ``uv tool`` or ``pipx`` install puts it there."""
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    script = console_script()
    program = script if command[0] == VENV else command[0]
    args = [str(repo) if a == REPO else a for a in command[1:]]
    path = os.pathsep.join([str(Path(script).parent), os.environ.get("PATH", "")])
    params = StdioServerParameters(
        command=program, args=args, env={**GIT_ENV, "HOME": str(tmp_path), "PATH": path}
    )

    async def main() -> str:
        with anyio.fail_after(60), open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                result = await client.call_tool("read_file", {"path": "a.txt"})
                return str(result.structured_content["content"])

    assert anyio.run(main) == "a\n"
