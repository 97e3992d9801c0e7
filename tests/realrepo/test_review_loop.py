"""Issue 17's done-when: a scripted multi-step agent session over MCP stdio (the SDK's client)
in review mode, on a copy of a real project's sources (click, from this venv), with a person
reviewing by CLI: edits chained by version, a read showing the pending change, a rejection
with a reason the agent reads, a revision, approval of the rest. The final tree is exact, `git
fsck --strict` is clean and nothing of the person's is lost."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import click
import pytest
from mcp import ClientSession

from tests.doors.cli.clikit import gp_json, gp_ok
from tests.doors.mcp.mcpkit import run, text_of
from tests.gitkit import git, status_porcelain

pytestmark = pytest.mark.slow  # a server or browser in a process of its own

SESSION = "refactor-bot"
NOTE_V1 = "*** Begin Patch\n*** Add File: click/_notes.py\n+NOTES = ['v1']\n*** End Patch\n"
NOTE_V2 = "*** Begin Patch\n*** Add File: click/_notes.py\n+NOTES = ('v2',)\n*** End Patch\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """click's own sources in a repository on main, with a person's uncommitted work."""
    repo = tmp_path / "click-copy"
    source = Path(click.__file__).parent
    shutil.copytree(source, repo / "click", ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Test Person")
    git(repo, "config", "user.email", "person@example.com")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "click sources")
    # the person's own work: an uncommitted edit of a file the agent never touches, and a
    # new file nobody has added yet
    with (repo / "click/globals.py").open("a", encoding="utf-8") as fh:
        fh.write("# the person's note\n")
    (repo / "scratch.txt").write_text("person's scratch\n", encoding="utf-8")
    return repo


def _unique_line(text: str) -> str:
    """A long line that occurs once in ``text`` (what a model would quote)."""
    lines = text.splitlines()
    return next(line for line in lines if len(line.strip()) > 20 and lines.count(line) == 1)


def _insert(path: str, after: int, text: str, version: str | None) -> dict[str, Any]:
    args: dict[str, Any] = {"path": path, "edits": [{"after_line": after, "new_string": text}]}
    if version is not None:
        args["expected_version"] = version
    return args


def test_an_agent_and_a_person_go_round_the_review_loop(project: Path) -> None:
    exceptions = (project / "click/exceptions.py").read_text(encoding="utf-8")
    utils = (project / "click/utils.py").read_text(encoding="utf-8")
    start = git(project, "rev-parse", "HEAD").strip()
    quoted = _unique_line(exceptions)
    block = f"<<<<<<< SEARCH\n{quoted}\n=======\n{quoted}  # reviewed\n>>>>>>> REPLACE\n"
    ids: dict[str, str] = {}

    async def first_half(client: ClientSession) -> list[Any]:
        calls = [await client.call_tool("list_proposals", {})]
        read = await client.call_tool("read_file", {"path": "click/utils.py"})
        calls.append(read)
        one = await client.call_tool(
            "patch_resource",
            _insert("click/utils.py", 0, "# one\n", read.structured_content["version"]),
        )
        calls.append(one)
        two = await client.call_tool(
            "patch_resource",
            _insert("click/utils.py", 1, "# two\n", one.structured_content["version"]),
        )
        calls.append(two)
        calls.append(await client.call_tool("read_file", {"path": "click/utils.py", "limit": 3}))
        calls.append(await client.call_tool("apply_patch", {"patch": NOTE_V1}))
        calls.append(
            await client.call_tool("patch", {"path": "click/exceptions.py", "edits": block})
        )
        return calls

    calls = run(project, first_half, "--mode", "review", "--session", SESSION)
    assert [c.is_error for c in calls] == [False] * len(calls), [text_of(c) for c in calls]
    assert (
        calls[4].structured_content["content"]
        == "# one\n# two\n" + (utils.splitlines(keepends=True)[0])
    )
    ids["utils1"] = calls[2].structured_content["proposal_id"]
    ids["utils2"] = calls[3].structured_content["proposal_id"]
    ids["note"] = calls[5].structured_content["proposal_id"]
    ids["exc"] = calls[6].structured_content["proposal_id"]
    assert gp_json(project, "show", ids["exc"])["info"]["lands"] == [
        ids["utils1"],
        ids["utils2"],
        ids["note"],
    ]

    # the person rejects the middle proposal with a reason; the later one is re-based
    gp_ok(project, "reject", ids["note"], "--reason", "use a tuple", "--by", "Reviewer")

    async def second_half(client: ClientSession) -> list[Any]:
        calls = [await client.call_tool("list_proposals", {})]
        calls.append(await client.call_tool("show_proposal", {"id": ids["note"]}))
        calls.append(
            await client.call_tool("apply_patch", {"patch": NOTE_V2, "revises": ids["note"]})
        )
        calls.append(await client.call_tool("read_file", {"path": "click/exceptions.py"}))
        return calls

    later = run(project, second_half, "--mode", "review", "--session", SESSION)
    assert [c.is_error for c in later] == [False] * len(later), [text_of(c) for c in later]
    assert text_of(later[0]).startswith(f"Proposal {ids['note']} was rejected by Reviewer")
    assert f"Proposal {ids['exc']} was re-based" in text_of(later[0])
    assert later[1].structured_content["info"]["reason"] == "use a tuple"
    assert "use a tuple" in text_of(later[1])
    revision = later[2].structured_content["proposal_id"]
    assert f"{quoted}  # reviewed" in later[3].structured_content["content"]

    out = gp_ok(project, "approve", SESSION, "--by", "Reviewer")
    assert "4 proposals" in out
    expected = {
        "click/utils.py": "# one\n# two\n" + utils,
        "click/_notes.py": "NOTES = ('v2',)\n",
        "click/exceptions.py": exceptions.replace(quoted, f"{quoted}  # reviewed", 1),
    }
    for path, text in expected.items():
        assert git(project, "show", f"main:{path}") == text
        assert (project / path).read_text(encoding="utf-8") == text
    changed = git(project, "diff", "--name-only", start, "HEAD").split()
    assert sorted(changed) == sorted(expected)
    # the person's work is still theirs: uncommitted, untouched
    assert status_porcelain(project).splitlines() == [" M click/globals.py", "?? scratch.txt"]
    assert (
        (project / "click/globals.py").read_text(encoding="utf-8").endswith("# the person's note\n")
    )
    assert (project / "scratch.txt").read_text(encoding="utf-8") == "person's scratch\n"
    listed = {p["id"]: p for p in gp_json(project, "proposals", "--all")}
    assert listed[revision]["revises"] == ids["note"]
    assert listed[ids["note"]]["revised_by"] == revision
    assert {listed[i]["status"] for i in (ids["utils1"], ids["utils2"], ids["exc"])} == {"approved"}
    git(project, "fsck", "--strict", "--no-progress")
