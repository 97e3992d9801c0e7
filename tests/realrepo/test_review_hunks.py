"""Issue 27's done-when over MCP stdio (the SDK's client) on a copy of click's sources: an agent
proposes a three-hunk change; the person approves hunk 1, rejects hunk 2 with a reason, edits
hunk 3 and approves it (by CLI); the branch holds exactly hunk 1 and the person's hunk 3; the
agent's next result names the rejected hunk with its reason and shows the person's edit; the
agent revises hunk 2 and its approval lands it. The person's checkout and uncommitted work
stay as they were throughout, and `git fsck --strict` is clean."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.doors.cli.clikit import gp_json, gp_ok
from tests.doors.mcp.mcpkit import run, text_of
from tests.gitkit import git, status_porcelain
from tests.realrepo.test_review_loop import project  # noqa: F401 (the fixture)
from tests.safety.proofkit import fsck_problems

pytestmark = pytest.mark.slow  # a server in a process of its own

SESSION = "hunk-bot"
FILE = "click/termui.py"
REVIEWER = "Rae Viewer <rae@example.com>"


def three_lines(text: str) -> list[str]:
    """Three long lines, each once in ``text``, far apart (each edit its own hunk)."""
    lines = text.splitlines()
    unique = [
        line
        for line in lines
        if len(line.strip()) > 25 and lines.count(line) == 1 and "#" not in line
    ]
    return [unique[len(unique) // 10], unique[len(unique) // 2], unique[9 * len(unique) // 10]]


def person_sees(repo: Path) -> dict[str, str]:
    """What the person has: status, and their own files' bytes."""
    return {
        "status": status_porcelain(repo),
        "globals": (repo / "click/globals.py").read_text(encoding="utf-8"),
        "scratch": (repo / "scratch.txt").read_text(encoding="utf-8"),
        "HEAD": git(repo, "symbolic-ref", "HEAD"),
    }


def test_hunks_go_round_the_review_loop(project: Path) -> None:  # noqa: F811
    original = (project / FILE).read_text(encoding="utf-8")
    one, two, three = three_lines(original)
    mine = person_sees(project)
    ids: dict[str, str] = {}

    async def propose(client: ClientSession) -> Any:
        edits = [{"old_string": q, "new_string": f"{q}  # agent"} for q in (one, two, three)]
        made = await client.call_tool("patch_resource", {"path": FILE, "edits": edits})
        made_id = made.structured_content["proposal_id"]
        shown = await client.call_tool("show_proposal", {"id": made_id})
        return made, shown

    made, shown = run(project, propose, "--mode", "review", "--session", SESSION)
    assert not made.is_error, text_of(made)
    pid = ids["pid"] = made.structured_content["proposal_id"]
    hunks = shown.structured_content["hunks"]
    assert [(h["id"], h["number"], h["verdict"]) for h in hunks] == [
        (f"{FILE}:1", 1, "open"),
        (f"{FILE}:2", 2, "open"),
        (f"{FILE}:3", 3, "open"),
    ]
    assert f"+{two}  # agent" in hunks[1]["lines"]
    # the CLI numbers them alike
    assert [h["id"] for h in gp_json(project, "show", pid)["hunks"]] == [h["id"] for h in hunks]
    assert person_sees(project) == mine

    # the person: hunk 1 in, hunk 2 out with a reason, hunk 3 edited then in
    gp_ok(project, "approve", pid, "--hunks", "1", "--by", REVIEWER)
    assert person_sees(project) == mine
    reason = "no comments here"
    gp_ok(project, "reject", pid, "--hunks", f"{FILE}:2", "--reason", reason, "--by", REVIEWER)
    theirs = f"{three}  # agent"
    fixed = f"{three}  # reviewed by a person"
    patch = f"--- a/{FILE}\n+++ b/{FILE}\n@@\n-{theirs}\n+{fixed}\n"  # on the proposal
    gp_ok(project, "amend", pid, "--patch", "-", "--by", REVIEWER, input=patch)
    assert person_sees(project) == mine
    gp_ok(project, "approve", pid, "--hunks", "3", "--by", REVIEWER)
    want = original.replace(one, f"{one}  # agent", 1).replace(three, fixed, 1)
    assert git(project, "show", f"main:{FILE}") == want
    assert (project / FILE).read_text(encoding="utf-8") == want
    assert git(project, "diff", "--name-only", "HEAD~2", "HEAD").split() == [FILE]
    assert person_sees(project) == mine

    async def learn_and_revise(client: ClientSession) -> list[Any]:
        calls = [await client.call_tool("read_file", {"path": FILE, "limit": 1})]
        calls.append(await client.call_tool("show_proposal", {"id": pid}))
        calls.append(
            await client.call_tool(
                "patch_resource",
                {
                    "path": FILE,
                    "edits": [{"old_string": two, "new_string": f"{two}  "}],
                    "revises": pid,
                },
            )
        )
        return calls

    calls = run(project, learn_and_revise, "--mode", "review", "--session", SESSION)
    assert [c.is_error for c in calls] == [False] * 3, [text_of(c) for c in calls]
    told = "\n".join(calls[0].structured_content["notices"])
    assert f"Hunk 2 ({FILE}:2) of proposal {pid} was rejected by {REVIEWER}" in told
    assert "no comments here" in told and f"+{two}  # agent" in told
    assert f"{REVIEWER} edited proposal {pid}" in told
    assert f"-{theirs}" in told and f"+{fixed}" in told
    verdicts = {h["id"]: (h["verdict"], h["reason"]) for h in calls[1].structured_content["hunks"]}
    assert verdicts[f"{FILE}:2"] == ("rejected", "no comments here")
    assert verdicts[f"{FILE}:1"][0] == verdicts[f"{FILE}:3"][0] == "approved"
    assert calls[1].structured_content["amendments"][0]["by"] == REVIEWER
    revision = calls[2].structured_content["proposal_id"]
    assert gp_json(project, "show", revision)["info"]["revises"] == pid

    gp_ok(project, "approve", revision, "--by", REVIEWER)
    final = want.replace(two, f"{two}  ", 1)
    assert git(project, "show", f"main:{FILE}") == final
    assert (project / FILE).read_text(encoding="utf-8") == final
    assert person_sees(project) == mine
    assert fsck_problems(project) == ""

    # the agent has no verdict of its own to give
    async def tools(client: ClientSession) -> set[str]:
        return {t.name for t in (await client.list_tools()).tools}

    names = run(project, tools, "--mode", "review", "--session", SESSION)
    assert not names & {"approve", "reject", "amend", "comment"}
