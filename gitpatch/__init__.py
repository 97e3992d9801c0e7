"""gitpatch: a Git-backed transactional edit service for coding agents.

The public API is the ``Workspace`` (open a repository, propose edits in any of the supported
languages, review, approve, reject, undo), the ``GitpatchError`` tree with its stable codes, and
the agent tools (``patch_tool``, ``apply_patch_tool``, ``patch_resource_tool``, ``read_tool``)
over storages (``Workspace``, ``MemoryStorage``, ``MountedFilesystem``) with their policies.
"""

from __future__ import annotations

from gitpatch.errors import GitpatchError
from gitpatch.model import Changeset, Proposal
from gitpatch.mounts import MountedFilesystem
from gitpatch.policy import (
    SideEffectApprovalToolPermissionPolicy,
    ToolOperation,
    workspace_tool_policy,
)
from gitpatch.results import (
    EditResult,
    FileResult,
    LogEntry,
    ProposalDetail,
    ProposalInfo,
    ProposalResult,
    ReadResult,
)
from gitpatch.storage import MemoryStorage
from gitpatch.tools import (
    ToolResult,
    apply_patch_tool,
    patch_resource_tool,
    patch_tool,
    read_tool,
)
from gitpatch.workspace import Workspace

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
