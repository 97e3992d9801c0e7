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

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitpatch.tools._base import Tool, UnsavedPaths
    from gitpatch.tools._errors import GENERIC_FAILURE, error_result, spec_code
    from gitpatch.tools._result import ToolResult
    from gitpatch.tools.patch import ApplyPatchTool, PatchTool
    from gitpatch.tools.policy import ToolPermissionPolicy
    from gitpatch.tools.read import ReadTool
    from gitpatch.tools.resource import PatchResourceTool, SpaceResolver

#: Where each name lives. Imported on first use, so that importing a light submodule
#: (``tools.policy``, ``tools.definitions``) does not load the tools, the engine and pygit2.
_HOMES = {
    "Tool": "gitpatch.tools._base",
    "UnsavedPaths": "gitpatch.tools._base",
    "GENERIC_FAILURE": "gitpatch.tools._errors",
    "error_result": "gitpatch.tools._errors",
    "spec_code": "gitpatch.tools._errors",
    "ToolResult": "gitpatch.tools._result",
    "ApplyPatchTool": "gitpatch.tools.patch",
    "PatchTool": "gitpatch.tools.patch",
    "ReadTool": "gitpatch.tools.read",
    "PatchResourceTool": "gitpatch.tools.resource",
    "SpaceResolver": "gitpatch.tools.resource",
}


def __getattr__(name: str) -> Any:
    """The names above, imported from their modules on first use (PEP 562)."""
    if name not in _HOMES:
        raise AttributeError(f"module 'gitpatch.tools' has no attribute {name!r}")
    value = getattr(import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


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
    from gitpatch.tools.patch import PatchTool

    return PatchTool(reader, writer, cwd, policy, **options)


def apply_patch_tool(
    reader: Any,
    writer: Any,
    cwd: str | None = None,
    policy: ToolPermissionPolicy | None = None,
    **options: Any,
) -> ApplyPatchTool:
    """The ``apply_patch`` tool: ``tool(patch="*** Begin Patch ...")``."""
    from gitpatch.tools.patch import ApplyPatchTool

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
    from gitpatch.tools.resource import PatchResourceTool

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
    from gitpatch.tools.read import ReadTool

    return ReadTool(reader, reader if writer is None else writer, cwd, policy, **options)
