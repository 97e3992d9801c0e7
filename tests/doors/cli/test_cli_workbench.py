"""The workbench commands through click's CliRunner: checkpoint (and its hook recipes'
input), sessions, session start / path / end (issue 25)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gitpatch.doors.cli import main
from tests.gitkit import git, repo_state

FILES = {"a.py": "A = 1\n", ".gitignore": "build/\n"}
BRANCH = "main"


def cli(where: Path, *args: str, input: str | None = None) -> Result:
    runner = CliRunner(env={"NO_COLOR": None})
    return runner.invoke(main, ["-C", str(where), *args], input=input, catch_exceptions=False)


def _start(repo: Path) -> Path:
    out = cli(repo, "--json", "session", "start", "bot")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["mcp"]["mcpServers"]["gitpatch"]["args"][-3:] == ["serve", "--session", "bot"]
    return Path(data["worktree"])


def test_claude_codes_hook_json_on_stdin_names_the_command(repo: Path) -> None:
    where = _start(repo)
    (where / "a.py").write_text("A = 2\n")
    event = {"cwd": str(where), "tool_name": "Bash", "tool_input": {"command": "black ."}}
    out = cli(repo, "checkpoint", "--hook-input", input=json.dumps(event))
    assert out.exit_code == 0, out.output
    context = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("Checkpointed what changed by `black .` as proposal")
    pid = context.split("as proposal ", 1)[1].split(" ", 1)[0]
    assert "Gitpatch-Command: black ." in git(repo, "log", "-1", "--format=%B", f"gitpatch/{pid}")
    again = cli(repo, "checkpoint", "--hook-input", input=json.dumps(event))
    assert (
        "no proposal was made"
        in json.loads(again.stdout)["hookSpecificOutput"]["additionalContext"]
    )


def test_codex_notify_passes_its_json_as_the_last_argument(repo: Path) -> None:
    where = _start(repo)
    (where / "gen.py").write_text("G = 1\n")
    event = json.dumps({"type": "agent-turn-complete", "turn-id": "1"})
    out = cli(where, "checkpoint", "--hook-input", event)
    assert out.exit_code == 0, out.output
    assert "gen.py (add)" in out.stdout


def test_sessions_lists_and_end_refuses_then_ends(repo: Path) -> None:
    where = _start(repo)
    assert cli(repo, "session", "path", "bot").stdout.strip() == str(where)
    (where / "a.py").write_text("A = 3\n")
    listed = json.loads(cli(repo, "--json", "sessions").stdout)["sessions"]
    assert [(s["name"], s["mode"], s["worktree"]) for s in listed] == [
        ("bot", "review", str(where))
    ]
    before = repo_state(repo)
    refused = cli(repo, "session", "end", "bot")
    assert refused.exit_code == 1 and "no checkpoint recorded" in refused.stderr
    assert refused.stderr.startswith("dirty_worktree:")
    assert repo_state(repo) == before and (where / "a.py").read_text() == "A = 3\n"
    pid = json.loads(cli(where, "--json", "checkpoint").stdout)["proposal_id"]
    assert "1 open" in cli(repo, "sessions").stdout
    assert cli(repo, "reject", pid, "--reason", "no").exit_code == 0
    assert (where / "a.py").read_text() == "A = 1\n"
    (where / "build").mkdir()
    (where / "build/out.o").write_bytes(b"\x7fELF")
    before = repo_state(repo)
    refused = cli(repo, "session", "end", "bot")
    assert refused.exit_code == 1 and refused.stderr.startswith("dirty_worktree:")
    assert "build/" in refused.stderr and "--force" in refused.stderr
    assert repo_state(repo) == before and (where / "build/out.o").read_bytes() == b"\x7fELF"
    ended = cli(repo, "session", "end", "bot", "--force")
    assert ended.exit_code == 0 and "removed its worktree" in ended.stdout
    assert "as --force asked: build/" in ended.stdout
    assert cli(repo, "sessions").stdout.strip() == "No sessions."


@pytest.mark.parametrize(
    ("args", "stdin", "words"),
    [
        (("checkpoint", "--hook-input"), "{not json", "not JSON"),
        (("checkpoint", "--hook-input"), "[1]", "not a JSON object"),
        (("checkpoint", "stray"), None, "only with --hook-input"),
        (("checkpoint",), None, "no session named"),
        (("run", "--session", "bot", "--", "/nonexistent/cmd"), None, "cannot run"),
        (("session", "end", "Bad/Name"), None, "invalid session name"),
    ],
)
def test_errors_have_a_code_and_change_nothing(
    repo: Path, args: tuple[str, ...], stdin: str | None, words: str
) -> None:
    _start(repo)
    before = repo_state(repo)
    out = cli(repo, *args, input=stdin)
    assert out.exit_code == 1
    assert out.stderr.startswith("invalid_arguments:") and words in out.stderr
    assert repo_state(repo) == before


def test_session_path_makes_an_auto_sessions_worktree_and_says_so(repo: Path) -> None:
    edit = "*** Begin Patch\n*** Update File: a.py\n@@\n-A = 1\n+A = 2\n*** End Patch\n"
    done = cli(repo, "--json", "apply-patch", "-", input=edit)  # main is protected
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["branch"] == "refs/heads/gitpatch/session/agent"
    assert not json.loads(done.stdout).get("worktree")  # an edit alone makes none
    where = repo / ".git/gitpatch/worktrees/agent"
    assert not where.exists()
    out = cli(repo, "session", "path", "agent")
    assert out.exit_code == 0 and out.stdout.strip() == str(where)
    assert out.stderr.startswith(f"Made the session's worktree at {where} (")
    assert (where / "a.py").read_text() == "A = 2\n"
    again = cli(repo, "session", "path", "agent")
    assert again.stdout.strip() == str(where) and again.stderr == ""
