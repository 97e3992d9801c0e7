"""The ``gitpatch`` command through click's CliRunner, on real repositories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gitpatch.doors.cli import main
from gitpatch.workspace import config
from tests.doors.mcp.mcpkit import repo_state
from tests.gitkit import git, head

CONFIG = "MAX_RETRIES = 1\nTIMEOUT = 10\n"
SR = "<<<<<<< SEARCH\nMAX_RETRIES = 1\n=======\nMAX_RETRIES = 3\n>>>>>>> REPLACE\n"
ADD = "*** Begin Patch\n*** Add File: docs/NOTES.md\n+note\n*** End Patch\n"


FILES = {"app/config.py": CONFIG, "README.md": "hello\n"}


def cli(repo: Path, *args: str, input: str | None = None) -> Result:
    """``gitpatch -C repo *args`` in process."""
    runner = CliRunner(env={"NO_COLOR": None})
    return runner.invoke(main, ["-C", str(repo), *args], input=input, catch_exceptions=False)


def ok(repo: Path, *args: str, input: str | None = None) -> str:
    result = cli(repo, *args, input=input)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def as_json(repo: Path, *args: str, input: str | None = None) -> Any:
    return json.loads(ok(repo, "--json", *args, input=input))


def test_read_numbers_lines_and_prints_the_version(repo: Path) -> None:
    out = ok(repo, "read", "app/config.py")
    assert out.splitlines()[:2] == ["     1\tMAX_RETRIES = 1", "     2\tTIMEOUT = 10"]
    assert f"version {head(repo)}" in out
    part = as_json(repo, "read", "app/config.py", "--offset", "2", "--limit", "1")
    assert part["lines"] == ["TIMEOUT = 10"] and part["offset"] == 2
    assert part["total_lines"] == 2


def test_patch_from_stdin_and_from_a_file(repo: Path, tmp_path: Path) -> None:
    out = ok(repo, "patch", "app/config.py", "-", input=SR)
    assert out.startswith("Applied app/config.py on refs/heads/work.")
    assert (repo / "app/config.py").read_text() == "MAX_RETRIES = 3\nTIMEOUT = 10\n"
    blocks = tmp_path / "edit.txt"
    blocks.write_text(SR.replace("1", "3", 1).replace("= 3\n>>>", "= 4\n>>>"))
    ok(repo, "patch", "app/config.py", str(blocks))
    assert (repo / "app/config.py").read_text().startswith("MAX_RETRIES = 4")
    assert git(repo, "status", "--porcelain") == ""


def test_edit_with_json_at_file_and_expected_version(repo: Path, tmp_path: Path) -> None:
    version = head(repo)
    edits = json.dumps([{"old_string": "TIMEOUT = 10", "new_string": "TIMEOUT = 20"}])
    result = as_json(repo, "edit", "app/config.py", "--edits", edits, "--expected-version", version)
    assert result["status"] == "applied"
    at_file = tmp_path / "edits.json"
    at_file.write_text(json.dumps([{"after_line": 0, "new_string": "# top\n"}]))
    ok(repo, "edit", "app/config.py", "--edits", f"@{at_file}")
    assert (repo / "app/config.py").read_text() == "# top\nMAX_RETRIES = 1\nTIMEOUT = 20\n"
    before = repo_state(repo)
    stale = cli(repo, "edit", "app/config.py", "--edits", edits, "--expected-version", version)
    assert stale.exit_code == 1
    assert stale.stderr.startswith("resource_conflict: ")
    assert repo_state(repo) == before


def test_apply_detects_a_git_diff(repo: Path) -> None:
    (repo / "README.md").write_text("hello world\n")
    diff = git(repo, "diff")
    git(repo, "checkout", "--", "README.md")
    out = ok(repo, "apply", "-", input=diff)
    assert "README.md" in out
    assert (repo / "README.md").read_text() == "hello world\n"
    tool = git(repo, "log", "-1", "--format=%(trailers:key=Gitpatch-Tool,valueonly)").strip()
    assert tool == "apply_diff"


def test_apply_detects_apply_patch_and_search_replace(repo: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "1.patch", tmp_path / "2.txt"
    first.write_text(ADD)
    second.write_text("app/config.py\n" + SR)
    ok(repo, "apply", str(first), str(second))
    assert (repo / "docs/NOTES.md").read_text() == "note\n"
    assert (repo / "app/config.py").read_text().startswith("MAX_RETRIES = 3")
    refused = cli(repo, "apply", "-", input="just some words\n")
    assert refused.exit_code == 1 and refused.stderr.startswith("invalid_patch: ")


def test_dry_run_prints_the_diff_and_changes_nothing(repo: Path) -> None:
    before = repo_state(repo)
    out = ok(repo, "patch", "app/config.py", "--dry-run", "-", input=SR)
    assert "-MAX_RETRIES = 1\n+MAX_RETRIES = 3" in out
    out = ok(repo, "apply-patch", "--dry-run", "-", input=ADD)
    assert "+++ b/docs/NOTES.md" in out and "+note" in out
    assert repo_state(repo) == before


def test_review_flow_proposals_show_approve_reject_undo_log(repo: Path) -> None:
    first = as_json(repo, "apply-patch", "--review", "-", input=ADD)["proposal_id"]
    second = as_json(repo, "patch", "app/config.py", "--review", "-", input=SR)["proposal_id"]
    assert not (repo / "docs/NOTES.md").exists()
    table = ok(repo, "proposals")
    assert table.splitlines()[0].split() == ["ID", "STATUS", "TARGET", "FILES", "+/-", "AGE"]
    assert f"{first}  proposed  work" in table and "+1/-0" in table and "+1/-1" in table
    shown = ok(repo, "show", first)
    assert "1 file(s) changed, +1 -0" in shown and "+note" in shown
    assert "+note" not in ok(repo, "show", first, "--stat")

    assert "Approved proposal" in ok(repo, "approve", first, "--by", "Ada")
    assert (repo / "docs/NOTES.md").read_text() == "note\n"
    rejected = ok(repo, "reject", second, "--reason", "keep one retry", "--by", "Ada")
    assert "Rejected proposal" in rejected
    assert ok(repo, "proposals").startswith("No open proposals.")
    closed = {p["id"]: p["status"] for p in as_json(repo, "proposals", "--all")}
    assert closed == {first: "approved", second: "rejected"}
    again = cli(repo, "approve", second)
    assert again.exit_code == 1 and again.stderr.startswith("proposal_closed: ")

    assert first in ok(repo, "log")
    assert "Undid proposal" in ok(repo, "undo")
    assert not (repo / "docs/NOTES.md").exists()


def test_exit_codes_zero_one_two(repo: Path) -> None:
    assert cli(repo, "read", "README.md").exit_code == 0
    refused = cli(repo, "read", "missing.txt")
    assert refused.exit_code == 1
    first, second = refused.stderr.splitlines()[:2]
    assert first.startswith("resource_not_found: ") and second.startswith("hint: ")
    assert cli(repo, "read").exit_code == 2  # missing argument
    assert cli(repo, "read", "README.md", "--offset", "0").exit_code == 2
    assert cli(repo, "frobnicate").exit_code == 2
    assert cli(repo, "approve").exit_code == 2  # neither ID nor --range


def test_json_errors_go_to_stderr_as_json(repo: Path) -> None:
    result = cli(repo, "--json", "show", "0123456789ab")
    assert result.exit_code == 1 and result.stdout == ""
    assert json.loads(result.stderr)["error"]["code"] == "proposal_not_found"


def test_not_a_repository_is_refused(tmp_path: Path) -> None:
    result = cli(tmp_path, "proposals")
    assert result.exit_code == 1 and result.stderr.startswith("repository_error: ")


def test_paths_are_relative_to_the_current_directory_like_git(repo: Path) -> None:
    out = ok(repo / "app", "read", "config.py")
    assert "MAX_RETRIES = 1" in out


def test_schema_in_three_formats() -> None:
    runner = CliRunner()
    for fmt, key in (("mcp", "inputSchema"), ("anthropic", "input_schema")):
        tools = json.loads(runner.invoke(main, ["schema", "--format", fmt]).stdout)
        assert [t["name"] for t in tools][:3] == ["patch", "apply_patch", "patch_resource"]
        assert all(key in t for t in tools)
    openai = json.loads(runner.invoke(main, ["schema", "--format", "openai"]).stdout)
    assert openai[0]["type"] == "function" and "parameters" in openai[0]["function"]
    assert not {"approve", "reject"} & {t["function"]["name"] for t in openai}


def test_init_writes_the_commented_defaults_once(repo: Path) -> None:
    ok(repo, "init")
    written = (repo / config.FILENAME).read_text()
    assert written == config.TEMPLATE
    loaded = config.load(repo)
    assert (loaded.mode, loaded.protected, loaded.allow, loaded.deny) == (
        "auto",
        ("main", "master"),
        None,
        (),
    )
    again = cli(repo, "init")
    assert again.exit_code == 1 and again.stderr.startswith("invalid_arguments: ")
    assert ok(repo, "init", "--force")


def test_the_config_file_sets_the_mode(repo: Path) -> None:
    (repo / config.FILENAME).write_text('[review]\nmode = "review"\n')
    git(repo, "add", config.FILENAME)
    git(repo, "commit", "-qm", "config")
    result = as_json(repo, "patch", "app/config.py", "-", input=SR)
    assert result["status"] == "proposed"
    assert (repo / "app/config.py").read_text() == CONFIG
    (repo / config.FILENAME).write_text('[review]\nmode = "sometimes"\n')
    bad = cli(repo, "read", "README.md")
    assert bad.exit_code == 1 and "mode must be" in bad.stderr


def test_an_unexpected_error_is_internal_error_without_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gitpatch.tools import definitions as tooldefs

    def broken(_fmt: str = "mcp") -> list[dict[str, Any]]:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(tooldefs, "definitions", broken)
    monkeypatch.delenv("GITPATCH_DEBUG", raising=False)
    result = CliRunner().invoke(main, ["schema"], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.stderr.startswith("internal_error: an unexpected error occurred")
    assert "secret detail" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["edit", "app/config.py", "--edits", "[{not json"], "invalid_arguments"),
        (["edit", "app/config.py", "--edits", "@missing.json"], "invalid_arguments"),
        (["edit", "app/config.py", "--edits", "[]"], "empty_edits"),
        (["approve", "--range", "main"], "invalid_arguments"),
        (["approve", "--range", "nosuch..work"], "repository_error"),
        (["reject", "0123456789ab", "--reason", "no"], "proposal_not_found"),
        (["patch", "../outside.txt", "-"], "path_unsafe"),
    ],
)
def test_refusals_change_nothing(repo: Path, args: list[str], code: str) -> None:
    before = repo_state(repo)
    result = cli(repo, *args, input=SR)
    assert result.exit_code == 1, result.stderr
    assert result.stderr.startswith(f"{code}: "), result.stderr
    assert repo_state(repo) == before
