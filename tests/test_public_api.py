"""The package's public surface: __all__ is complete and importable, the demo runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

import gitpatch


def test_all_names_resolve() -> None:
    for name in gitpatch.__all__:
        assert hasattr(gitpatch, name), name


def test_public_names_are_exactly_these() -> None:
    # Adding or dropping a public name is an API change: do it here on purpose, not by accident.
    assert sorted(gitpatch.__all__) == [
        "Changeset",
        "EditResult",
        "FileResult",
        "GitpatchError",
        "LogEntry",
        "MemoryStorage",
        "MountedFilesystem",
        "Proposal",
        "ProposalDetail",
        "ProposalInfo",
        "ProposalResult",
        "ReadResult",
        "SideEffectApprovalToolPermissionPolicy",
        "ToolOperation",
        "ToolResult",
        "Workspace",
        "__version__",
        "apply_patch_tool",
        "patch_resource_tool",
        "patch_tool",
        "read_tool",
        "workspace_tool_policy",
    ]


def test_workspace_and_error_are_exported() -> None:
    assert {"Workspace", "GitpatchError"} <= set(gitpatch.__all__)
    assert issubclass(gitpatch.GitpatchError, Exception)


@pytest.mark.slow  # a gitpatch serve process and the CLI, end to end
def test_demo_runs_an_agent_over_mcp_then_a_review_by_cli() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gitpatch.doors.demo"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "tools offered: patch, apply_patch, patch_resource, read_file" in text
    assert "agent -> apply_patch: Applied patch to 2 files (1 added, 1 modified):" in text
    assert "It landed on session branch gitpatch/session/agent (main is protected)." in text
    assert "agent -> patch: [isError] match_ambiguous: " in text
    assert text.count("awaits a person's approval; nothing on disk changes") == 2
    assert "$ gitpatch approve agent" in text and "merged into main" in text
    assert "(out of scope); refs/heads/gitpatch/" in text
    assert "Merge session agent into main" in text
    assert "git fsck: clean" in text
    assert text.rstrip().endswith("python -m gitpatch.doors.web.demo")  # the review page, last


def test_result_schemas_list_the_matching_levels() -> None:
    from gitpatch.match import Level

    schema = gitpatch.ProposalResult.model_json_schema()
    assert schema["$defs"]["Level"]["enum"] == [level.value for level in Level]
    edit = gitpatch.EditResult(path="a", index=0, start_line=1, end_line=1, level="fuzzy")
    assert edit.level is Level.FUZZY and edit.model_dump(mode="json")["level"] == "fuzzy"
