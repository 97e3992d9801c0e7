"""The package's public surface: __all__ is complete and importable, the demo runs."""

from __future__ import annotations

import subprocess
import sys

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


def test_demo_places_refuses_and_lands() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gitpatch.demo"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "at level punctuation" in text
    assert "refused [match_ambiguous]" in text
    assert "refused [match_not_found]" in text
    assert "CHANGES.md now on disk: 'Summary now counts items.'" in text
    assert "status approved" in text
    assert "git fsck: clean" in text
