"""Two agents at once in auto mode on a protected main, over MCP stdio (the SDK's client):
each edits on its session branch alone until its first checkpoint makes its own linked
worktree, and works there from then on; the person's HEAD, index and uncommitted edits are
untouched throughout, and approving carries the agents' changes into the person's edits."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession

from tests.doors.mcp.mcpkit import console_script, named_client, session, text_of
from tests.gitkit import GIT_ENV, git, make_repo

pytestmark = pytest.mark.slow  # a server or git's hooks in processes of their own

APP = "".join(f"value_{i} = {i}\n" for i in range(1, 21))


def person_state(repo: Path) -> dict[str, Any]:
    """What belongs to the person: HEAD, the index file, git status, their files' bytes."""
    return {
        "head": git(repo, "symbolic-ref", "HEAD").strip(),
        "main": git(repo, "rev-parse", "main").strip(),
        "index": (repo / ".git" / "index").read_bytes(),
        "status": git(repo, "status", "--porcelain"),
        "files": {p: (repo / p).read_bytes() for p in ("app.py", "notes.txt", "staged.txt")},
    }


def patch(old: str, new: str) -> str:
    return f"<<<<<<< SEARCH\n{old}=======\n{new}>>>>>>> REPLACE\n"


async def agent(
    client: ClientSession, name: str, line: int, repo: Path, before: dict[str, Any]
) -> list[str]:
    """Three calls of one agent; after each, the person's state is as it was."""
    texts = []
    read = await client.call_tool("read_file", {"path": "app.py"})
    assert not read.is_error, text_of(read)
    assert f"value_{line} = {line}" in text_of(read)
    calls: list[tuple[str, dict[str, Any]]] = [
        (
            "patch",
            {
                "path": "app.py",
                "edits": patch(f"value_{line} = {line}\n", f"value_{line} = '{name}'\n"),
            },
        ),
        (
            "apply_patch",
            {"patch": f"*** Begin Patch\n*** Add File: {name}.txt\n+by {name}\n*** End Patch\n"},
        ),
    ]
    for tool, args in calls:
        result = await client.call_tool(tool, args)
        assert not result.is_error, text_of(result)
        texts.append(text_of(result))
        assert person_state(repo) == before, f"{name}'s {tool} touched the person's checkout"
    return texts


def approve(repo: Path, name: str) -> str:
    env = {**GIT_ENV, "HOME": str(repo), "PATH": os.environ.get("PATH", "")}
    done = subprocess.run(
        [console_script(), "-C", str(repo), "approve", name, "--by", "Ada"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_two_sessions_on_protected_main_leave_the_person_alone(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"app.py": APP, "notes.txt": "mine\n", "staged.txt": "s\n"},
        branch="main",
    )
    (repo / "notes.txt").write_text("mine\nnot committed\n")
    (repo / "staged.txt").write_text("s\nstaged\n")
    git(repo, "add", "staged.txt")
    (repo / "app.py").write_text(APP + "# the person's own line\n")
    before = person_state(repo)
    results: dict[str, list[str]] = {}
    structured: dict[str, dict[str, Any]] = {}
    made_text: dict[str, str] = {}

    async def main() -> None:
        async def run(name: str, line: int) -> None:
            client_name = f"harness-{name}"
            async with named_client(
                repo, client_name, "--mode", "auto", "--session", name
            ) as client:
                results[name] = await agent(client, name, line, repo, before)
                read = await client.call_tool("read_file", {"path": f"{name}.txt"})
                assert text_of(read).count(f"by {name}") == 1
                made = await client.call_tool("checkpoint", {})
                assert not made.is_error, text_of(made)
                made_text[name] = text_of(made)
                again = await client.call_tool(
                    "patch", {"path": f"{name}.txt", "edits": patch(f"by {name}\n", "made\n")}
                )
                assert not again.is_error, text_of(again)
                structured[name] = again.structured_content or {}

        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                group.start_soon(run, "one", 3)
                group.start_soon(run, "two", 12)

    anyio.run(main)
    assert person_state(repo) == before
    for name in ("one", "two"):
        place = repo / ".git" / "gitpatch" / "worktrees" / name
        first = results[name][0]
        # the other session's edit of the same file may be flagged first (one line per file)
        body = [line for line in first.splitlines() if not line.startswith("Another session")]
        assert body[0] == "Applied 1 edit to app.py.", first
        assert f"gitpatch/session/{name} (main is protected)" in first
        assert "The session's files are in" not in first  # edits alone make no worktree
        assert made_text[name].startswith(f"Made the session's worktree at {place} (")
        assert "Nothing changed" in made_text[name]
        assert structured[name]["worktree"] == str(place)
        assert (place / f"{name}.txt").read_text() == "made\n"
        assert git(place, "status", "--porcelain") == ""
        log = git(repo, "log", "-1", "--format=%an|%cn|%B", f"gitpatch/session/{name}")
        # authored by the agent (its client's name and session), committed by the person
        assert log.startswith(f"harness-{name} (gitpatch session {name})|Test Person|")
        assert f"Gitpatch-Session: {name}" in log
    assert "value_12 = 12" in (repo / ".git/gitpatch/worktrees/one/app.py").read_text()

    # the person approves both, from their checkout: their edits stay uncommitted
    approve(repo, "one")
    approve(repo, "two")
    app = (repo / "app.py").read_text()
    assert "value_3 = 'one'" in app and "value_12 = 'two'" in app
    assert app.endswith("# the person's own line\n")
    assert "# the person's own line" not in git(repo, "show", "main:app.py")
    assert git(repo, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git(repo, "status", "--porcelain") == " M app.py\n M notes.txt\nM  staged.txt\n"
    assert git(repo, "show", ":staged.txt") == "s\nstaged\n"
    fsck = git(repo, "fsck", "--strict", "--no-dangling", "--no-progress")
    assert "error" not in fsck and "missing" not in fsck


def test_the_persons_uncommitted_work_stays_theirs_over_mcp(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": APP, "notes.txt": "mine\n"}, branch="work")
    (repo / "app.py").write_text(APP.replace("value_1 = 1\n", "value_1 = 'the person'\n"))
    (repo / "notes.txt").write_text("mine\nnot committed\n")

    async def scenario(client: ClientSession) -> list[Any]:
        edit = patch("value_15 = 15\n", "value_15 = 'agent'\n")
        gone = "*** Begin Patch\n*** Delete File: notes.txt\n*** End Patch\n"
        clash = patch("value_1 = 'the person'\nvalue_2 = 2\n", "value_1 = 1\nvalue_2 = 'x'\n")
        return [
            await client.call_tool("patch", {"path": "app.py", "edits": edit}),
            await client.call_tool("apply_patch", {"patch": gone}),
            await client.call_tool("patch", {"path": "app.py", "edits": clash}),
        ]

    async def main() -> list[Any]:
        with anyio.fail_after(60):
            async with session(repo, "--mode", "auto") as client:
                return await scenario(client)

    done, deleted, clashed = anyio.run(main)
    assert not done.is_error, text_of(done)
    assert "app.py had the person's uncommitted changes: they stay uncommitted" in text_of(done)
    assert git(repo, "show", "HEAD:app.py") == APP.replace("value_15 = 15", "value_15 = 'agent'")
    assert "Record uncommitted" not in git(repo, "log", "--format=%s")
    assert git(repo, "status", "--porcelain") == " M app.py\n M notes.txt\n"
    assert "value_1 = 'the person'" in (repo / "app.py").read_text()
    assert (done.structured_content or {})["carried"] == ["app.py"]
    assert deleted.is_error and text_of(deleted).startswith("dirty_worktree")
    assert (repo / "notes.txt").read_text() == "mine\nnot committed\n"
    assert clashed.is_error and "line 1" in text_of(clashed), text_of(clashed)


def test_review_mode_results_say_proposed_over_mcp(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": APP}, branch="work")

    async def main() -> Any:
        with anyio.fail_after(60):
            async with session(repo, "--mode", "review") as client:
                edit = patch("value_3 = 3\n", "value_3 = 'three'\n")
                return await client.call_tool("patch", {"path": "app.py", "edits": edit})

    result = anyio.run(main)
    assert not result.is_error
    assert text_of(result).startswith("Proposed 1 edit to app.py."), text_of(result)
    assert result.structured_content["status"] == "proposed"
    assert (repo / "app.py").read_text() == APP
