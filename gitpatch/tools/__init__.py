"""The agent tools over a storage: ``patch``, ``apply_patch``, ``patch_resource``, ``read``.

Each factory takes the reader and writer capabilities of one namespace (a ``Workspace``, a
``MemoryStorage`` or a ``MountedFilesystem``), an optional ``cwd`` and ``policy``, and returns
a callable tool: ``tool(path=..., edits=...) -> ToolResult`` (never raises) or
``await tool.acall(...)``. Keyword options shared by all: ``plan_mode`` ("none",
"standalone", "sticky", "directive") with ``session``, and ``unsaved`` (a callable returning
the paths an editor holds unsaved edits for). ``patch_resource_tool`` also takes ``spaces``,
the service's team-space resolver. Errors become texts in ONE place: ``tools._errors``.
"""

from __future__ import annotations

from typing import Any

from gitpatch.policy import ToolPermissionPolicy
from gitpatch.tools._base import Tool, UnsavedPaths
from gitpatch.tools._errors import GENERIC_FAILURE, error_result, spec_code
from gitpatch.tools._result import ToolResult
from gitpatch.tools.patch import ApplyPatchTool, PatchTool
from gitpatch.tools.read import ReadTool
from gitpatch.tools.resource import PatchResourceTool, SpaceResolver

__all__ = [
    "GENERIC_FAILURE",
    "ApplyPatchTool",
    "PatchResourceTool",
    "PatchTool",
    "ReadTool",
    "SpaceResolver",
    "Tool",
    "ToolResult",
    "UnsavedPaths",
    "apply_patch_tool",
    "error_result",
    "patch_resource_tool",
    "patch_tool",
    "read_tool",
    "spec_code",
]


def patch_tool(
    reader: Any,
    writer: Any,
    cwd: str | None = None,
    policy: ToolPermissionPolicy | None = None,
    **options: Any,
) -> PatchTool:
    """The ``patch`` tool: ``tool(path=..., edits=...)`` with SEARCH/REPLACE blocks."""
    return PatchTool(reader, writer, cwd, policy, **options)


def apply_patch_tool(
    reader: Any,
    writer: Any,
    cwd: str | None = None,
    policy: ToolPermissionPolicy | None = None,
    **options: Any,
) -> ApplyPatchTool:
    """The ``apply_patch`` tool: ``tool(patch="*** Begin Patch ...")``."""
    return ApplyPatchTool(reader, writer, cwd, policy, **options)


def patch_resource_tool(
    reader: Any,
    writer: Any,
    cwd: str | None = None,
    policy: ToolPermissionPolicy | None = None,
    **options: Any,
) -> PatchResourceTool:
    """The ``patch_resource`` tool: ``tool(path=..., edits=[...], team=None,
    expected_version=None)``; ``spaces=`` plugs in the service's team resolver."""
    return PatchResourceTool(reader, writer, cwd, policy, **options)


def read_tool(
    reader: Any,
    writer: Any | None = None,
    cwd: str | None = None,
    policy: ToolPermissionPolicy | None = None,
    **options: Any,
) -> ReadTool:
    """The ``read`` tool: ``tool(path=..., offset=None, limit=None)``; ``writer`` defaults to
    ``reader`` (it only reads)."""
    return ReadTool(reader, reader if writer is None else writer, cwd, policy, **options)
