"""gitpatch: a Git-backed transactional edit service for coding agents.

The public API is the ``Workspace`` (open a repository, propose edits in any of the supported
languages, review, approve, reject, undo) and the ``GitpatchError`` tree with its stable codes.
"""

from __future__ import annotations

from gitpatch.errors import GitpatchError
from gitpatch.model import Changeset, Proposal
from gitpatch.results import (
    EditResult,
    FileResult,
    LogEntry,
    ProposalDetail,
    ProposalInfo,
    ProposalResult,
    ReadResult,
)
from gitpatch.workspace import Workspace

__version__ = "0.1.0"

__all__ = [
    "Changeset",
    "EditResult",
    "FileResult",
    "GitpatchError",
    "LogEntry",
    "Proposal",
    "ProposalDetail",
    "ProposalInfo",
    "ProposalResult",
    "ReadResult",
    "Workspace",
    "__version__",
]
