"""The real-repository tests' names for the test kit's helpers (``tests.gitkit``)."""

from __future__ import annotations

from tests.gitkit import add, delete, edit, fsck, make_repo, staged, state
from tests.gitkit import status_porcelain as status

__all__ = ["add", "delete", "edit", "fsck", "make_repo", "state", "status", "staged"]
