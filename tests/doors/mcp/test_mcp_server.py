"""The real MCP server (``gitpatch serve``) through the SDK's own client over stdio."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from gitpatch.doors.mcp import OUTPUTS
from gitpatch.tools import definitions as tooldefs
from tests.doors.cli.clikit import gp_json, gp_ok
from tests.doors.mcp.mcpkit import console_script, repo_state, run, text_of
from tests.gitkit import git, make_repo

#: a gitpatch serve process per test: `make test-fast` leaves these out.
pytestmark = pytest.mark.slow

CONFIG = "MAX_RETRIES = 1\nTIMEOUT = 10\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    files = {"app/config.py": CONFIG, "README.md": "hello\n", "locked.txt": "keep\n"}
    files[".gitpatch.toml"] = '[policy]\ndeny = ["locked.txt"]\n'
    return make_repo(tmp_path / "repo", files)


def test_lists_the_six_tools_with_the_models_schemas_and_no_approval_tool(repo: Path) -> None:
    async def scenario(client: ClientSession) -> Any:
        return (await client.list_tools()).tools

    tools = {t.name: t for t in run(repo, scenario)}
    assert set(tools) == {t.name for t in tooldefs.TOOLS}
    assert not {"approve", "reject"} & set(tools)
    for tool in tooldefs.TOOLS:
        listed = tools[tool.name]
        schema = tool.args.model_json_schema()
        assert listed.input_schema["properties"] == schema["properties"]
        assert sorted(listed.input_schema.get("required", [])) == sorted(schema.get("required", []))
        assert listed.output_schema is not None
        assert (
            listed.output_schema["properties"]
            == OUTPUTS[tool.name].model_json_schema()["properties"]
        )
        assert listed.description == tooldefs.description(tool.name)


def test_a_successful_edit_lands_and_carries_structured_content(repo: Path) -> None:
    edits = "<<<<<<< SEARCH\nMAX_RETRIES = 1\n=======\nMAX_RETRIES = 3\n>>>>>>> REPLACE\n"

    async def scenario(client: ClientSession) -> Any:
        read = await client.call_tool("read_file", {"path": "app/config.py"})
        edit = await client.call_tool("patch", {"path": "app/config.py", "edits": edits})
        return read, edit

    read, edit = run(repo, scenario)
    assert not read.is_error and "     1\tMAX_RETRIES = 1" in text_of(read)
    assert read.structured_content["content"] == CONFIG
    assert not edit.is_error, text_of(edit)
    assert text_of(edit).startswith("Applied 1 edit to app/config.py.")
    data = OUTPUTS["patch"].model_validate(edit.structured_content)
    assert data.version == git(repo, "rev-parse", "HEAD").strip()
    assert (repo / "app/config.py").read_text() == "MAX_RETRIES = 3\nTIMEOUT = 10\n"
    assert git(repo, "status", "--porcelain") == ""


def _error_calls(repo: Path) -> list[tuple[str, dict[str, Any], str]]:
    old = git(repo, "rev-parse", "HEAD").strip()
    return [
        (
            "patch",
            {
                "path": "app/config.py",
                "edits": "<<<<<<< SEARCH\nnope\n=======\nx\n>>>>>>> REPLACE\n",
            },
            "match_not_found",
        ),
        (
            "patch",
            {"path": "app/missing.py", "edits": "<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n"},
            "resource_not_found",
        ),
        (
            "apply_patch",
            {"patch": "*** Begin Patch\n*** Frobnicate: x\n*** End Patch\n"},
            "invalid_patch",
        ),
        (
            "apply_patch",
            {"patch": "*** Begin Patch\n*** Add File: README.md\n+x\n*** End Patch\n"},
            "resource_exists",
        ),
        ("patch_resource", {"path": "app/config.py", "edits": []}, "empty_edits"),
        (
            "patch",
            {"path": "../outside", "edits": "<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n"},
            "path_unsafe",
        ),
        (
            "patch",
            {"path": "locked.txt", "edits": "<<<<<<< SEARCH\nkeep\n=======\nx\n>>>>>>> REPLACE\n"},
            "permission_denied",
        ),
        (
            "patch_resource",
            {
                "path": "app/config.py",
                "edits": [{"old_string": "TIMEOUT", "new_string": "T"}],
                "expected_version": old,
            },
            "resource_conflict",
        ),
        ("read_file", {"path": "nope.txt"}, "resource_not_found"),
        ("show_proposal", {"id": "0123456789ab"}, "proposal_not_found"),
    ]


def test_each_error_class_is_an_iserror_result_with_its_code_and_changes_nothing(
    repo: Path,
) -> None:
    # The conflict case needs a change to the file after the version it names.
    (repo / "app/config.py").write_text("MAX_RETRIES = 2\nTIMEOUT = 10\n")
    calls = _error_calls(repo)
    git(repo, "commit", "-qam", "person edits config")
    before = repo_state(repo)

    async def scenario(client: ClientSession) -> list[Any]:
        return [await client.call_tool(name, args) for name, args, _code in calls]

    results = run(repo, scenario)
    for (name, _args, code), result in zip(calls, results, strict=True):
        assert result.is_error, (name, code, text_of(result))
        assert text_of(result).startswith(f"{code}: "), (code, text_of(result))
        assert result.structured_content is None
        assert result.meta == {"code": code}
        assert "Traceback" not in text_of(result)
    assert repo_state(repo) == before


MALFORMED = [
    ("patch", {"path": "app/config.py"}, "edits"),
    ("patch", {"path": 3, "edits": "x"}, "path"),
    ("patch", {"path": "a", "edits": "x", "mode": "auto"}, "mode"),
    (
        "patch_resource",
        {"path": "a", "edits": [{"old_string": 1, "new_string": "x"}]},
        "edits.0.old_string",
    ),
    ("read_file", {"path": "a", "offset": 0}, "offset"),
    ("show_proposal", {}, "id"),
]


def test_malformed_arguments_are_invalid_params_naming_the_field(repo: Path) -> None:
    before = repo_state(repo)

    async def scenario(client: ClientSession) -> list[MCPError]:
        errors = []
        for name, args, _field in MALFORMED:
            with pytest.raises(MCPError) as caught:
                await client.call_tool(name, args)
            errors.append(caught.value)
        with pytest.raises(MCPError) as caught:  # patch_resource's invalid_arguments is one too
            await client.call_tool(
                "patch_resource",
                {"path": "../outside", "edits": [{"after_line": 0, "new_string": "x"}]},
            )
        errors.append(caught.value)
        return errors

    errors = run(repo, scenario)
    for (name, _args, field), error in zip(MALFORMED, errors, strict=False):
        assert error.code == INVALID_PARAMS, name
        assert field in [e["field"] for e in error.data], (name, error.data)
    assert errors[-1].code == INVALID_PARAMS
    assert errors[-1].message.startswith("invalid_arguments: ")
    assert repo_state(repo) == before


def test_a_review_proposal_lands_only_through_gitpatch_approve(repo: Path) -> None:
    patch = (
        "*** Begin Patch\n*** Update File: app/config.py\n@@\n-MAX_RETRIES = 1\n+MAX_RETRIES = 5\n"
        "*** Add File: docs/NOTES.md\n+Retries are 5.\n*** End Patch\n"
    )

    async def scenario(client: ClientSession) -> Any:
        proposed = await client.call_tool("apply_patch", {"patch": patch})
        listed = await client.call_tool("list_proposals", {})
        pid = proposed.structured_content["proposal_id"]
        shown = await client.call_tool("show_proposal", {"id": pid})
        try:  # the agent cannot approve its own proposal: there is no such tool
            sneaky = await client.call_tool("approve", {"id": pid})
            assert sneaky.is_error
        except MCPError:
            pass
        return proposed, listed, shown

    proposed, listed, shown = run(repo, scenario, "--mode", "review")
    assert not proposed.is_error, text_of(proposed)
    pid = proposed.structured_content["proposal_id"]
    assert proposed.structured_content["status"] == "proposed"
    assert [p["id"] for p in listed.structured_content["proposals"]] == [pid]
    assert "+MAX_RETRIES = 5" in shown.structured_content["diff"]
    assert (repo / "app/config.py").read_text() == CONFIG
    assert not (repo / "docs/NOTES.md").exists()

    out = subprocess.run(
        [console_script(), "-C", str(repo), "approve", pid, "--by", "Ada"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert (repo / "app/config.py").read_text() == "MAX_RETRIES = 5\nTIMEOUT = 10\n"
    assert (repo / "docs/NOTES.md").read_text() == "Retries are 5.\n"
    assert git(repo, "status", "--porcelain") == ""


def test_a_config_ask_rule_keeps_the_edit_for_a_person(repo: Path) -> None:
    (repo / ".gitpatch.toml").write_text('[policy]\nask = ["README.md"]\n')
    git(repo, "commit", "-qam", "ask before touching the README")
    edits = "<<<<<<< SEARCH\nhello\n=======\nhello there\n>>>>>>> REPLACE\n"

    async def scenario(client: ClientSession) -> Any:
        return await client.call_tool("patch", {"path": "README.md", "edits": edits})

    result = run(repo, scenario)
    assert result.is_error and result.meta == {"code": "approval_required"}
    assert "approval required: patch requires application approval for `README.md`" in (
        text_of(result)
    )
    assert (repo / "README.md").read_text() == "hello\n"
    pid = next(p["id"] for p in gp_json(repo, "proposals") if p["status"] == "proposed")
    assert pid in text_of(result)
    gp_ok(repo, "approve", pid, "--by", "Ada")
    assert (repo / "README.md").read_text() == "hello there\n"
