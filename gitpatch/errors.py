"""Every error gitpatch raises, with a stable lowercase code.

Codes are part of the contract: tools, the CLI and the MCP server report them as they are, and
the spec codes (``invalid_patch``, ``resource_conflict``, ...) keep the spelling the specs give.
Messages say what failed; hints say how the caller (often a model) can fix its next call.

The tree::

    GitpatchError                      base: code, message, hint, details
    ├── InvalidInput                   the call itself is wrong
    │   ├── InvalidPatch               invalid_patch        edit text or edit object malformed
    │   ├── InvalidArguments           invalid_arguments    arguments miss or break the schema
    │   ├── EmptyEdits                 empty_edits          an empty list of edits
    │   └── UnsafePath                 path_unsafe          '..' escape, .git/, NUL, symlink escape
    ├── MatchError                     an edit cannot be placed for sure
    │   ├── MatchNotFound              match_not_found      the old text is not in the file
    │   ├── MatchAmbiguous             match_ambiguous      the old text is in several places
    │   ├── EditOverlap                edit_overlap         two edits claim the same lines
    │   └── NoChange                   no_change            the edit would not change the file
    ├── ResourceError                  about the file the edit targets
    │   ├── ResourceNotFound           resource_not_found
    │   ├── ResourceExists             resource_exists      an Add or a move onto an existing path
    │   ├── NotATextResource           not_a_text_resource  binary content or a directory
    │   ├── ResourceNotUtf8            resource_not_utf8
    │   ├── ResourceConflict           resource_conflict    changed since the version read
    │   └── PathIgnored                path_ignored         the path is ignored by .gitignore
    ├── LimitExceeded
    │   ├── PayloadTooLarge            payload_too_large
    │   └── StorageLimitReached        storage_limit_reached
    ├── AccessDenied
    │   ├── Forbidden                  forbidden
    │   ├── PermissionDenied           permission_denied    a policy rule denies the operation
    │   ├── ApprovalRequired           approval_required    a person must approve first
    │   ├── PlanModeDenied             plan_mode_denied     plan mode allows no such target
    │   ├── TeamNotFound               team_not_found
    │   ├── PersonalCannotAddressTeam  personal_cannot_address_team
    │   └── NoPersonalSpace            no_personal_space
    ├── StateError                     the repository or a proposal is not in a usable state
    │   ├── DirtyWorktree              dirty_worktree       uncommitted changes and dirty="refuse"
    │   ├── UnsavedChanges             unsaved_changes      an editor holds unsaved edits
    │   ├── ProposalNotFound           proposal_not_found
    │   ├── ProposalClosed             proposal_closed      already approved, merged or rejected
    │   ├── ProposalRejected           proposal_rejected    same change a person already rejected
    │   ├── MergeConflict              merge_conflict
    │   ├── RepositoryError            repository_error     not a repository, no branch, bad ref
    │   └── ConcurrentUpdate           concurrent_update    lost the compare-and-swap too often
    └── InternalError                  internal_error       a bug: the message says no more
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CODES",
    "AccessDenied",
    "ApprovalRequired",
    "ConcurrentUpdate",
    "DirtyWorktree",
    "EditOverlap",
    "EmptyEdits",
    "Forbidden",
    "GitpatchError",
    "InternalError",
    "InvalidArguments",
    "InvalidInput",
    "InvalidPatch",
    "LimitExceeded",
    "MatchAmbiguous",
    "MatchError",
    "MatchNotFound",
    "MergeConflict",
    "NoChange",
    "NoPersonalSpace",
    "NotATextResource",
    "PathIgnored",
    "PayloadTooLarge",
    "PermissionDenied",
    "PersonalCannotAddressTeam",
    "PlanModeDenied",
    "ProposalClosed",
    "ProposalNotFound",
    "ProposalRejected",
    "RepositoryError",
    "ResourceConflict",
    "ResourceError",
    "ResourceExists",
    "ResourceNotFound",
    "ResourceNotUtf8",
    "StateError",
    "StorageLimitReached",
    "TeamNotFound",
    "UnsafePath",
    "UnsavedChanges",
    "error_for_code",
]


class GitpatchError(Exception):
    """Base of every gitpatch error: a stable ``code``, a ``message``, an optional ``hint``.

    ``details`` carries machine-readable facts (candidate line numbers, paths, versions).
    """

    code: str = "internal_error"

    def __init__(
        self,
        code: str,
        message: str,
        hint: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.details: dict[str, Any] = dict(details or {})

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n{self.hint}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view: code, message, hint and details."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.hint:
            out["hint"] = self.hint
        if self.details:
            out["details"] = self.details
        return out


class _Coded(GitpatchError):
    """A subclass whose code is fixed by the class: ``Cls(message, hint=None, details=None)``."""

    code = "internal_error"

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(type(self).code, message, hint, details)


class InvalidInput(_Coded):
    """The call itself is wrong; nothing about the repository is involved."""

    code = "invalid_arguments"


class InvalidPatch(InvalidInput):
    code = "invalid_patch"


class InvalidArguments(InvalidInput):
    code = "invalid_arguments"


class EmptyEdits(InvalidInput):
    code = "empty_edits"


class UnsafePath(InvalidInput):
    code = "path_unsafe"


class MatchError(_Coded):
    """An edit cannot be placed in its file with certainty."""

    code = "match_not_found"


class MatchNotFound(MatchError):
    code = "match_not_found"


class MatchAmbiguous(MatchError):
    code = "match_ambiguous"


class EditOverlap(MatchError):
    code = "edit_overlap"


class NoChange(MatchError):
    code = "no_change"


class ResourceError(_Coded):
    """About the file an edit targets."""

    code = "resource_not_found"


class ResourceNotFound(ResourceError):
    code = "resource_not_found"


class ResourceExists(ResourceError):
    code = "resource_exists"


class NotATextResource(ResourceError):
    code = "not_a_text_resource"


class ResourceNotUtf8(ResourceError):
    code = "resource_not_utf8"


class ResourceConflict(ResourceError):
    code = "resource_conflict"


class PathIgnored(ResourceError):
    code = "path_ignored"


class LimitExceeded(_Coded):
    code = "payload_too_large"


class PayloadTooLarge(LimitExceeded):
    code = "payload_too_large"


class StorageLimitReached(LimitExceeded):
    code = "storage_limit_reached"


class AccessDenied(_Coded):
    code = "forbidden"


class Forbidden(AccessDenied):
    code = "forbidden"


class PermissionDenied(AccessDenied):
    code = "permission_denied"


class ApprovalRequired(AccessDenied):
    code = "approval_required"


class PlanModeDenied(AccessDenied):
    code = "plan_mode_denied"


class TeamNotFound(AccessDenied):
    code = "team_not_found"


class PersonalCannotAddressTeam(AccessDenied):
    code = "personal_cannot_address_team"


class NoPersonalSpace(AccessDenied):
    code = "no_personal_space"


class StateError(_Coded):
    code = "repository_error"


class DirtyWorktree(StateError):
    code = "dirty_worktree"


class UnsavedChanges(StateError):
    code = "unsaved_changes"


class ProposalNotFound(StateError):
    code = "proposal_not_found"


class ProposalClosed(StateError):
    code = "proposal_closed"


class ProposalRejected(StateError):
    code = "proposal_rejected"


class MergeConflict(StateError):
    code = "merge_conflict"


class RepositoryError(StateError):
    code = "repository_error"


class ConcurrentUpdate(StateError):
    code = "concurrent_update"


class InternalError(_Coded):
    code = "internal_error"


def _leaf_classes() -> dict[str, type[_Coded]]:
    found: dict[str, type[_Coded]] = {}
    stack: list[type[_Coded]] = [_Coded]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if not cls.__subclasses__():
            found.setdefault(cls.code, cls)
    return found


_BY_CODE = _leaf_classes()

#: Every stable code gitpatch can report.
CODES: frozenset[str] = frozenset(_BY_CODE)


def error_for_code(
    code: str, message: str, hint: str | None = None, details: dict[str, Any] | None = None
) -> GitpatchError:
    """Build the error class that owns ``code`` (``InternalError`` for an unknown code)."""
    cls = _BY_CODE.get(code, InternalError)
    return cls(message, hint, details)
