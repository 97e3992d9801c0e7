"""Issue 25's done-when: an agent's whole workbench loop on a small Python project, in review
mode, as a harness drives it. The agent edits over MCP (the SDK's client over stdio, the
server started with the config `gitpatch session start` prints), runs the project's tests in
its worktree and sees its change, runs a formatter that rewrites three files and creates one,
and checkpoints through the Claude Code hook recipe's JSON. The person rejects the checkpoint
with a reason, and the agent's next result shows it; the worktree gets back exactly what the
checkpoint recorded, leaving `.venv/`, `build/` and an unrecorded file byte for byte. The
agent revises, a generator's checkpoint is accepted, and approval lands the edits and the
checkpoint; the person undoes the checkpoint and then that undo, moving only its file; the
person's own work stays byte for byte, and `git fsck --strict` is clean. Ending the session
refuses over a file no checkpoint has, and removes ignored output only with --force. The
same on a sparse checkout, an autocrlf repository and a linked worktree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.doors.cli.clikit import gp, gp_json, gp_ok
from tests.doors.mcp.mcpkit import console_script, text_of
from tests.gitkit import GIT_ENV, git, make_repo

pytestmark = pytest.mark.slow  # servers, console scripts and pytest in processes of their own

CORE = "def add(a, b):\n    return a - b\n\n\ndef mul(a,b):\n    return a*b\n"
PROJECT = {
    "calc/__init__.py": "from calc.core import add, mul\n",
    "calc/core.py": CORE,
    "calc/util.py": "def twice(x):\n    return x+x\n",
    "calc/text.py": "GREETING='hi'\n",
    "tests/test_core.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n",
    "README.md": "# calc\n",
    ".gitignore": ".venv/\nbuild/\n__pycache__/\n",
    # the project's "formatter": rewrites three files and creates one
    "tools/fmt.py": (
        "import pathlib\n"
        "for name in ('calc/core.py', 'calc/util.py', 'calc/text.py'):\n"
        "    p = pathlib.Path(name)\n"
        "    p.write_text(p.read_text().replace('a,b', 'a, b').replace('a*b', 'a * b')\n"
        "                 .replace('x+x', 'x + x').replace(\"GREETING='hi'\", 'GREETING = \"hi\"')"
        " + '# formatted\\n')\n"
        "pathlib.Path('calc/py.typed').write_text('')\n"
    ),
}
REASON = "do not reformat util.py and text.py, only core.py"
FIX = "<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"


def _project(tmp_path: Path, kind: str) -> tuple[Path, Path]:
    """(the repository, the person's checkout) set up as ``kind`` says."""
    repo = make_repo(tmp_path / "proj", PROJECT, branch="main")
    person = repo
    if kind == "sparse":
        git(repo, "sparse-checkout", "set", "calc", "tests", "tools")
    elif kind == "autocrlf":
        git(repo, "config", "core.autocrlf", "true")
        for name in PROJECT:
            (repo / name).unlink()
        git(repo, "checkout", "--", ".")
        assert b"\r\n" in (repo / "calc/core.py").read_bytes()
    elif kind == "linked":
        git(repo, "checkout", "-q", "-b", "other")
        person = tmp_path / "linked"
        git(repo, "worktree", "add", "-q", str(person), "main")
    # the person's own work, never to be read or touched
    with (person / "calc/__init__.py").open("a") as fh:
        fh.write("# the person's uncommitted note\n")
    (person / "scratch.txt").write_text("person's scratch\n")
    return repo, person


def _files(root: Path) -> dict[str, bytes]:
    out = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith(".git") and "__pycache__" not in rel:
            out[rel] = path.read_bytes()
    return out


def _sh(where: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **GIT_ENV, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(argv, cwd=where, env=env, capture_output=True, text=True, check=False)


def _hook(where: Path, command: str) -> dict[str, Any]:
    """What Claude Code's PostToolUse hook on Bash does: its JSON on stdin, cwd in the worktree."""
    event = {
        "session_id": "abc",
        "hook_event_name": "PostToolUse",
        "cwd": str(where),
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "format"},
        "tool_response": {"stdout": "", "stderr": ""},
    }
    done = subprocess.run(
        [console_script(), "checkpoint", "--hook-input"],
        cwd=where,
        input=json.dumps(event),
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV, "NO_COLOR": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", ["plain", "sparse", "autocrlf", "linked"])
def test_the_workbench_loop(tmp_path: Path, kind: str) -> None:
    repo, person = _project(tmp_path, kind)
    mine_before = _files(person)
    started = gp_json(person, "session", "start", "bot")
    where = Path(started["worktree"])
    args = started["mcp"]["mcpServers"]["gitpatch"]["args"]
    assert "Made the session's worktree" in started["made"]

    async def agent_first(client: ClientSession) -> dict[str, Any]:
        edit = await client.call_tool("patch", {"path": "calc/core.py", "edits": FIX})
        assert not edit.is_error, text_of(edit)
        assert edit.structured_content["worktree"] == str(where)
        assert f"The session's files are in {where}" in text_of(edit)
        tested = _sh(where, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")
        assert tested.returncode == 0, tested.stdout  # the change is there: add() adds
        # ignored folders a real session has, then the formatter
        (where / ".venv/lib").mkdir(parents=True)
        (where / ".venv/lib/site.py").write_bytes(b"venv\x00\xff")
        (where / "build").mkdir()
        (where / "build/calc.o").write_bytes(b"\x7fELF")
        assert _sh(where, sys.executable, "tools/fmt.py").returncode == 0
        answer = _hook(where, "python tools/fmt.py")
        context = answer["hookSpecificOutput"]["additionalContext"]
        assert "Checkpointed what changed by `python tools/fmt.py`" in context
        (where / "notes.md").write_bytes(b"agent notes, never recorded\r\n")
        listed = await client.call_tool("list_proposals", {})
        return {"context": context, "listed": listed.structured_content}

    first = _mcp(where, args, agent_first)
    open_ = [p for p in first["listed"]["proposals"] if p["status"] == "proposed"]
    checkpoint = next(p for p in open_ if p["tool"] == "checkpoint")
    assert set(checkpoint["files"]) == {
        "calc/core.py",
        "calc/util.py",
        "calc/text.py",
        "calc/py.typed",
    }
    log = git(repo, "log", "-1", "--format=%B", checkpoint["commit"])
    assert "Gitpatch-Command: python tools/fmt.py" in log

    gp_ok(person, "reject", checkpoint["id"], "--reason", REASON)
    assert not (where / "calc/py.typed").exists()
    assert "# formatted" not in (where / "calc/util.py").read_text()
    assert "return a + b" in (where / "calc/core.py").read_text()  # the edit stays
    assert (where / ".venv/lib/site.py").read_bytes() == b"venv\x00\xff"
    assert (where / "build/calc.o").read_bytes() == b"\x7fELF"
    assert (where / "notes.md").read_bytes() == b"agent notes, never recorded\r\n"
    (where / "notes.md").unlink()

    async def agent_second(client: ClientSession) -> str:
        listed = await client.call_tool("list_proposals", {})
        notices = listed.structured_content["notices"]
        assert any(REASON in n for n in notices), notices
        revised = await client.call_tool(
            "patch",
            {
                "path": "calc/core.py",
                "edits": "<<<<<<< SEARCH\ndef mul(a,b):\n    return a*b\n=======\n"
                "def mul(a, b):\n    return a * b\n>>>>>>> REPLACE\n",
                "revises": checkpoint["id"],
            },
        )
        assert not revised.is_error, text_of(revised)
        (where / "calc/VERSION").write_text("1.0\n")  # a generator's output
        made = await client.call_tool("checkpoint", {"command": "make version"})
        assert made.structured_content["recorded"], text_of(made)
        return str(made.structured_content["proposal_id"])

    generated = _mcp(where, args, agent_second)
    (where / "agent.log").write_bytes(b"never recorded\x00\r\n")
    gp_ok(person, "approve", "bot")
    landed = git(repo, "show", "main:calc/core.py").replace("\r\n", "\n")
    assert "return a + b" in landed and "def mul(a, b):" in landed
    assert git(repo, "show", "main:calc/VERSION") == "1.0\n"
    assert git(repo, "show", "main:calc/util.py") == PROJECT["calc/util.py"]

    # the person undoes the accepted checkpoint, then that undo: exactly its file moves
    undo = gp_json(person, "undo", generated)
    assert not (person / "calc/VERSION").exists() and not (where / "calc/VERSION").exists()
    _untouched(where)
    told = _mcp(where, args, _notices)
    assert any(f"Proposal {generated} was undone by" in n for n in told), told
    redo = gp_json(person, "undo", undo["version"][:12])
    assert "so its change is back" in redo["message"]
    assert (where / "calc/VERSION").read_text() == "1.0\n"
    assert (person / "calc/VERSION").read_bytes().replace(b"\r\n", b"\n") == b"1.0\n"
    _untouched(where)
    told = _mcp(where, args, _notices)
    assert any(f"Proposal {generated} is back (approved): its undo was undone" in n for n in told)
    # the person's own work, and every file the approval did not land, byte for byte
    after = _files(person)
    changed = {"calc/core.py", "calc/VERSION"}
    assert {k: v for k, v in after.items() if k not in changed} == {
        k: v for k, v in mine_before.items() if k not in changed
    }
    assert b"# the person's uncommitted note" in after["calc/__init__.py"]
    assert git(repo, "fsck", "--strict", "--no-progress") == ""
    # ending it: the agent's stray file is never discarded; ignored output only with --force
    refused = gp(person, "session", "end", "bot")
    assert refused.returncode == 1 and "agent.log" in refused.stderr
    (where / "agent.log").unlink()
    refused = gp(person, "session", "end", "bot")
    assert refused.returncode == 1 and refused.stderr.startswith("dirty_worktree:")
    assert ".venv/" in refused.stderr and "build/" in refused.stderr
    _untouched(where, stray=False)
    ended = gp(person, "session", "end", "bot", "--force")
    assert ended.returncode == 0 and ".venv/" in ended.stdout and "build/" in ended.stdout
    assert not where.exists()


async def _notices(client: ClientSession) -> list[str]:
    """What the agent's next call is told."""
    listed = await client.call_tool("list_proposals", {})
    return list(listed.structured_content["notices"])


def _untouched(where: Path, *, stray: bool = True) -> None:
    """The ignored folders, and the file no checkpoint recorded, byte for byte."""
    assert (where / ".venv/lib/site.py").read_bytes() == b"venv\x00\xff"
    assert (where / "build/calc.o").read_bytes() == b"\x7fELF"
    if stray:
        assert (where / "agent.log").read_bytes() == b"never recorded\x00\r\n"


def _mcp(where: Path, args: list[str], scenario: Any) -> Any:
    """Run ``scenario(client)`` against the server the printed MCP config starts."""
    params = StdioServerParameters(
        command=console_script(),
        args=args,
        env={**GIT_ENV, "HOME": str(where), "PATH": os.environ.get("PATH", "")},
        cwd=str(where),
    )

    async def main() -> Any:
        with anyio.fail_after(120), open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                return await scenario(client)

    return anyio.run(main)


def test_gitpatch_run_passes_output_and_status_through_then_checkpoints(tmp_path: Path) -> None:
    repo, person = _project(tmp_path, "plain")
    gp_ok(person, "session", "start", "bot")
    done = gp(
        person, "run", "--session", "bot", "--", "sh", "-c", "echo out; echo x > y.txt; exit 3"
    )
    assert done.returncode == 3
    assert done.stdout == "out\n"
    assert "Checkpointed what changed by `sh -c" in done.stderr and "y.txt (add)" in done.stderr
    assert not (person / "y.txt").exists()
    bad = gp(person, "checkpoint", "--session", "bot", "--hook-input", input="{not json")
    assert bad.returncode == 1 and bad.stderr.startswith("invalid_arguments:")


def test_run_command_is_served_only_when_allowed(tmp_path: Path) -> None:
    repo, person = _project(tmp_path, "plain")
    where = Path(gp_json(person, "session", "start", "bot")["worktree"])
    base = ["-C", str(where), "serve", "--session", "bot"]

    async def names(client: ClientSession) -> set[str]:
        return {t.name for t in (await client.list_tools()).tools}

    assert "run_command" not in _mcp(where, base, names)
    assert "checkpoint" in _mcp(where, base, names)

    async def run_it(client: ClientSession) -> Any:
        return await client.call_tool(
            "run_command",
            {"command": "python3 -c \"print('x' * 40000)\"; echo gen > gen.txt; exit 2"},
        )

    ran = _mcp(where, [*base, "--allow-run"], run_it)
    data = ran.structured_content
    assert data["exit_code"] == 2
    assert "bytes of output left out" in data["output"] and len(data["output"]) < 20000
    assert data["checkpoint"]["recorded"]
    assert "gen.txt (add)" in text_of(ran)

    async def too_slow(client: ClientSession) -> Any:
        return await client.call_tool("run_command", {"command": "sleep 30", "timeout_seconds": 1})

    slow = _mcp(where, [*base, "--allow-run"], too_slow)
    assert slow.structured_content["exit_code"] is None
    assert "timeout" in text_of(slow)
    refused = gp(person, "serve", "--http", "127.0.0.1:0", "--allow-run")
    assert refused.returncode != 0
