"""A person's save a land set aside in ``.git/gitpatch/saves/`` is told: the agent's call result
ends with a notice naming the file and where the save was kept (MCP), the CLI command whose land
set it aside says so on stderr, ``gitpatch log`` mentions it and ``gitpatch saves`` lists it
with how to take it back.

The late save is staged as ``test_save_review_mends`` stages one: at the land's crash point
``index.written`` (its files renamed, the branch not yet moved) a write reaches the replaced
file, kept until the land is over, through a descriptor opened before the rename, and the
person saves the path again with a change that cannot merge with it. The land then keeps the
first in ``.git/gitpatch/saves/``. In process the crash point is the test's own function; the
MCP server stops itself there (``GITPATCH_CRASH_HOW=pause``) until the test has written. A land
killed there leaves the same to the next call's recovery, whose result tells it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from mcp import ClientSession

from gitpatch.doors.cli import main
from tests.doors.mcp.mcpkit import run, session
from tests.gitkit import git, make_repo
from tests.safety.proofkit import killed_at

BODY = "".join(f"line {i}\n" for i in range(1, 6))
PATCH = "*** Begin Patch\n*** Update File: a.txt\n@@\n-line 2\n+LINE 2 by agent\n*** End Patch\n"
LATE = BODY.replace("line 2\n", "line 2 by the old descriptor\n")
AGAIN = BODY.replace("line 2\n", "LINE 2 by agent\nx\n").replace("3", "Z")


def _repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {"a.txt": BODY})
    os.utime(repo / "a.txt", (1, 1))  # settled: the land compares identities
    return repo


def _late_saves(repo: Path) -> None:
    """At ``index.written``: a write to the replaced file (kept until the land is over) and a
    save at its path that cannot merge with it."""
    kept = list((repo / ".git/gitpatch/tmp").glob(".kept.*"))
    assert len(kept) == 1
    kept[0].write_text(LATE)
    (repo / "a.txt").write_text(AGAIN)


def _cli(repo: Path, *args: str, input: str | None = None) -> tuple[int, str, str]:
    out = CliRunner().invoke(main, ["-C", str(repo), *args], input=input)
    return out.exit_code, out.stdout, out.stderr


def _saved(repo: Path) -> Path:
    aside = list((repo / ".git/gitpatch/saves").iterdir())
    assert len(aside) == 1 and aside[0].read_text() == LATE
    return aside[0]


def test_the_cli_says_where_a_save_its_land_set_aside_went_and_lists_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(tmp_path)

    def at(point: str) -> None:
        if point == "index.written":
            _late_saves(repo)

    monkeypatch.setattr("gitpatch.checkout.worktree.crashpoint", at)
    code, _out, err = _cli(repo, "apply-patch", "-", input=PATCH)
    monkeypatch.undo()
    assert code == 0, err
    saved = _saved(repo)
    assert "LINE 2 by agent" in git(repo, "show", "work:a.txt")
    assert (repo / "a.txt").read_text() == AGAIN  # the person's last save, unstaged
    assert err.count("notice: ") == 1
    assert "A person's save of a.txt reached it while gitpatch's change landed" in err
    assert f"the save was kept as {saved}, and a.txt was left as it is (`gitpatch saves`" in err

    code, out, _err = _cli(repo, "saves")
    assert code == 0
    assert f"a.txt (in {repo})\n      {saved}\n      diff {saved} {repo / 'a.txt'}\n" in out
    assert "To take a save back: copy what you want" in out
    code, out, _err = _cli(repo, "--json", "saves")
    listed = json.loads(out)
    assert [(s["path"], s["file"], s["worktree"]) for s in listed] == [
        ("a.txt", str(saved), str(repo))
    ]
    code, out, _err = _cli(repo, "log")
    assert out.rstrip().endswith("Saves set aside by a land: 1 (see gitpatch saves).")
    # told once: the next command says nothing of it, the listing keeps it
    code, _out, err = _cli(repo, "read", "a.txt")
    assert code == 0 and "notice:" not in err and saved.exists()


def test_the_review_page_says_where_a_save_its_approval_set_aside_went(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The review page's approve answers with the same notice (``notices``), which the page
    shows after the result."""
    from gitpatch import Workspace
    from tests.doors.web.webkit import client

    repo = _repo(tmp_path)
    agent = Workspace.open(repo, mode="review")
    pid = agent.apply(
        "<<<<<<< SEARCH\nline 2\n=======\nLINE 2 by agent\n>>>>>>> REPLACE\n", path="a.txt"
    ).proposal_id
    web, access = client(repo)

    def at(point: str) -> None:
        if point == "index.written":
            _late_saves(repo)

    monkeypatch.setattr("gitpatch.checkout.worktree.crashpoint", at)
    answer = web.post(
        f"/api/proposals/{pid}/approve",
        json={"by": "Ada"},
        headers={"X-Gitpatch-Token": access.token},
    )
    monkeypatch.undo()
    assert answer.status_code == 200, answer.text
    saved = _saved(repo)
    notices = answer.json()["notices"]
    assert len(notices) == 1 and f"the save was kept as {saved}, and a.txt was left" in notices[0]
    assert "LINE 2 by agent" in git(repo, "show", "work:a.txt")
    assert (repo / "a.txt").read_text() == AGAIN  # the person's last save, unstaged


def test_no_saves_set_aside_says_so(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    assert _cli(repo, "saves")[1] == "No saves set aside.\n"
    assert "saves" not in _cli(repo, "log")[1]


def _stopped(repo: Path) -> int | None:
    """The pid of the ``gitpatch serve`` on ``repo`` once it has stopped itself, else None."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"serve" in argv and str(repo).encode() in argv and state == "T":
            return int(entry)
    return None


@pytest.mark.slow  # a server in a process of its own
def test_the_agents_result_names_the_save_its_edit_set_aside(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    results: list[object] = []
    pause = {"GITPATCH_CRASH_AT": "index.written", "GITPATCH_CRASH_HOW": "pause"}

    async def scenario() -> None:
        with anyio.fail_after(60):
            async with session(repo, env=pause) as client:
                async with anyio.create_task_group() as calls:

                    async def edit() -> None:
                        results.append(await client.call_tool("apply_patch", {"patch": PATCH}))

                    calls.start_soon(edit)
                    # the server stops itself at the crash point: waiting for that is the
                    # synchronisation (a state, not a time)
                    while (pid := _stopped(repo)) is None:
                        await anyio.sleep(0.01)
                    _late_saves(repo)
                    os.kill(pid, signal.SIGCONT)
                results.append(await client.call_tool("read_file", {"path": "a.txt"}))

    anyio.run(scenario)
    saved = _saved(repo)
    edit, read = results
    data = edit.structured_content  # type: ignore[attr-defined]
    assert edit.is_error is False  # type: ignore[attr-defined]
    notices = data["notices"]
    assert len(notices) == 1 and notices[0].startswith("A person's save of a.txt reached it")
    assert f"the save was kept as {saved}, and a.txt was left as it is" in notices[0]
    assert edit.content[-1].text.endswith(notices[0])  # type: ignore[attr-defined]
    assert "notices" not in (read.structured_content or {})  # type: ignore[attr-defined]
    assert "LINE 2 by agent" in git(repo, "show", "work:a.txt")


@pytest.mark.slow  # a server in a process of its own
def test_the_first_call_after_a_killed_land_names_the_save_its_recovery_set_aside(
    tmp_path: Path,
) -> None:
    """A land killed at ``index.written``, a late write in the file it replaced and a save at
    its path that cannot merge with it: the next MCP call's recovery sets the first aside, and
    that call's result says so."""
    repo = _repo(tmp_path)
    agent = f"from gitpatch import Workspace; Workspace.open({str(repo)!r}).apply({PATCH!r})"
    assert killed_at([sys.executable, "-c", agent], dict(os.environ), "index.written") == -9
    _late_saves(repo)

    async def scenario(client: ClientSession) -> object:
        return await client.call_tool("read_file", {"path": "a.txt"})

    read = run(repo, scenario)
    saved = _saved(repo)
    notices = read.structured_content["notices"]  # type: ignore[attr-defined]
    assert len(notices) == 1 and notices[0].startswith("A person's save of a.txt reached it")
    assert f"the save was kept as {saved}, and a.txt was left as it is" in notices[0]
    assert (repo / "a.txt").read_text() == AGAIN
    assert "LINE 2 by agent" not in git(repo, "show", "work:a.txt")  # killed before it moved
