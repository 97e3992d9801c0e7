"""gitpatch: a Git-backed transactional edit service for coding agents.

The public API is the ``Workspace`` (open a repository, propose edits in any of the supported
languages, review, approve, reject, undo), the ``GitpatchError`` tree with its stable codes, and
the agent tools (``patch_tool``, ``apply_patch_tool``, ``patch_resource_tool``, ``read_tool``)
over storages (``Workspace``, ``MemoryStorage``, ``MountedFilesystem``) with their policies.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitpatch.core.model import Changeset, Proposal
    from gitpatch.errors import GitpatchError
    from gitpatch.porcelain.workspace import Workspace
    from gitpatch.tools import (
        ToolResult,
        apply_patch_tool,
        patch_resource_tool,
        patch_tool,
        read_tool,
    )
    from gitpatch.tools.policy import (
        SideEffectApprovalToolPermissionPolicy,
        ToolOperation,
        workspace_tool_policy,
    )
    from gitpatch.tools.storage.base import MemoryStorage
    from gitpatch.tools.storage.mounts import MountedFilesystem
    from gitpatch.workspace.results import (
        EditResult,
        FileResult,
        LogEntry,
        ProposalDetail,
        ProposalInfo,
        ProposalResult,
        ReadResult,
    )

#: Where each public name lives: imported on first use, so ``import gitpatch`` (and the
#: console script, and the MCP server's start) does not load pygit2, the matcher cascade and
#: the Workspace before something needs them.
_LAZY = {
    "GitpatchError": "gitpatch.errors",
    "Changeset": "gitpatch.core.model",
    "Proposal": "gitpatch.core.model",
    "MountedFilesystem": "gitpatch.tools.storage.mounts",
    "SideEffectApprovalToolPermissionPolicy": "gitpatch.tools.policy",
    "ToolOperation": "gitpatch.tools.policy",
    "workspace_tool_policy": "gitpatch.tools.policy",
    "EditResult": "gitpatch.workspace.results",
    "FileResult": "gitpatch.workspace.results",
    "LogEntry": "gitpatch.workspace.results",
    "ProposalDetail": "gitpatch.workspace.results",
    "ProposalInfo": "gitpatch.workspace.results",
    "ProposalResult": "gitpatch.workspace.results",
    "ReadResult": "gitpatch.workspace.results",
    "MemoryStorage": "gitpatch.tools.storage.base",
    "ToolResult": "gitpatch.tools",
    "apply_patch_tool": "gitpatch.tools",
    "patch_resource_tool": "gitpatch.tools",
    "patch_tool": "gitpatch.tools",
    "read_tool": "gitpatch.tools",
    "Workspace": "gitpatch.porcelain.workspace",
}


def __getattr__(name: str) -> Any:
    """The public names, imported from their modules on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'gitpatch' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__version__ = "0.1.0"

__all__ = [
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
