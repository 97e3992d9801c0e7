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
    │   ├── StorageLimitReached        storage_limit_reached
    │   ├── CallLimitReached           call_limit_reached   too many sessions, calls or tool calls
    │   └── BudgetExceeded             budget_exceeded      a call ran past its CPU or wall budget
    ├── AccessDenied
    │   ├── Forbidden                  forbidden
    │   ├── PermissionDenied           permission_denied    a policy rule denies the operation
    │   ├── ApprovalRequired           approval_required    a person must approve first
    │   ├── PlanModeDenied             plan_mode_denied     plan mode allows no such target
    │   ├── TeamNotFound               team_not_found
    │   ├── PersonalCannotAddressTeam  personal_cannot_address_team
    │   ├── NoPersonalSpace            no_personal_space
    │   └── WrongSpace                 wrong_space          the URL names another space (shard)
    ├── StateError                     the repository or a proposal is not in a usable state
    │   ├── DirtyWorktree              dirty_worktree       uncommitted changes and dirty="refuse"
    │   ├── UnsavedChanges             unsaved_changes      an editor holds unsaved edits
    │   ├── ProposalNotFound           proposal_not_found
    │   ├── ProposalClosed             proposal_closed      already approved, merged or rejected
    │   ├── ProposalRejected           proposal_rejected    same change a person already rejected
    │   ├── MergeConflict              merge_conflict
    │   ├── ChecksFailed               checks_failed        the project's checks failed on it
    │   ├── RepositoryError            repository_error     not a repository, no branch, bad ref
    │   ├── StagedChanges              staged_changes       a touched path has staged changes
    │   ├── OperationInProgress        operation_in_progress  a merge, rebase, ... is under way
    │   ├── BranchCheckedOut           branch_checked_out   the branch is checked out elsewhere
    │   ├── FilesystemError            filesystem_error     the disk refuses a read or write
    │   ├── FilterFailed               filter_failed        a clean/smudge filter failed
    │   ├── ObjectMissing              object_missing       a partial clone lacks a needed blob
    │   ├── SigningRequired            signing_required     commit.gpgsign is on
    │   └── ConcurrentUpdate           concurrent_update    lost the compare-and-swap too often
    └── InternalError                  internal_error       a bug: the message says no more
"""

from __future__ import annotations

import errno
from typing import Any, Literal

#: Why a ``ConcurrentUpdate`` happened (see that class).
ConcurrentReason = Literal["changed", "locked", "disk"]

__all__ = [
    "CODES",
    "ConcurrentReason",
    "AccessDenied",
    "BranchCheckedOut",
    "CallLimitReached",
    "ChecksFailed",
    "ApprovalRequired",
    "BudgetExceeded",
    "ConcurrentUpdate",
    "DirtyWorktree",
    "EditOverlap",
    "EmptyEdits",
    "FilesystemError",
    "FilterFailed",
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
    "ObjectMissing",
    "OperationInProgress",
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
    "SigningRequired",
    "StagedChanges",
    "StateError",
    "StorageLimitReached",
    "TeamNotFound",
    "UnsafePath",
    "UnsavedChanges",
    "WrongSpace",
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
    """A subclass whose code is fixed by the class: ``Cls(message, hint=None, details=None)``.

    The group classes (``InvalidInput``, ``MatchError``, ...) are for ``except`` clauses only:
    raising one would report some leaf's code for an error that is not that leaf.
    """

    code = "internal_error"
    #: Set on the group classes: they have no code of their own and cannot be raised.
    abstract = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.abstract = bool(cls.__dict__.get("abstract", False))

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        if type(self).abstract:
            raise TypeError(
                f"{type(self).__name__} groups errors and cannot be raised; raise a leaf class"
            )
        super().__init__(type(self).code, message, hint, details)


class InvalidInput(_Coded):
    """The call itself is wrong; nothing about the repository is involved."""

    abstract = True


class InvalidPatch(InvalidInput):
    """The edit text or an edit object is malformed: the parser says where and why."""

    code = "invalid_patch"


class InvalidArguments(InvalidInput):
    """The arguments are missing, of the wrong type or outside the schema."""

    code = "invalid_arguments"


class EmptyEdits(InvalidInput):
    """The call carries no edit at all."""

    code = "empty_edits"


class UnsafePath(InvalidInput):
    """The path escapes the repository, names ``.git`` or holds a NUL byte."""

    code = "path_unsafe"


class MatchError(_Coded):
    """An edit cannot be placed in its file with certainty."""

    abstract = True


class MatchNotFound(MatchError):
    """The old text is not in the file, at any level the tool allows."""

    code = "match_not_found"


class MatchAmbiguous(MatchError):
    """The old text is in several places and nothing tells them apart."""

    code = "match_ambiguous"


class EditOverlap(MatchError):
    """Two edits of one call claim the same lines."""

    code = "edit_overlap"


class NoChange(MatchError):
    """The edit would leave the file exactly as it is."""

    code = "no_change"


class ResourceError(_Coded):
    """About the file an edit targets."""

    abstract = True


class ResourceNotFound(ResourceError):
    """The file (or proposal path) does not exist where the edit expects it."""

    code = "resource_not_found"


class ResourceExists(ResourceError):
    """An added file, or a move's destination, already exists."""

    code = "resource_exists"


class NotATextResource(ResourceError):
    """The path holds binary content, a directory, a link or a submodule."""

    code = "not_a_text_resource"


class ResourceNotUtf8(ResourceError):
    """The file is text but not valid UTF-8, so it cannot be edited as text."""

    code = "resource_not_utf8"


class ResourceConflict(ResourceError):
    """A touched file changed since the version the caller read."""

    code = "resource_conflict"


class PathIgnored(ResourceError):
    """The path is ignored by git and ignored files are not editable here."""

    code = "path_ignored"


class LimitExceeded(_Coded):
    """A limit of the service is exceeded."""

    abstract = True


class PayloadTooLarge(LimitExceeded):
    """The request or a file in it is over the size limit."""

    code = "payload_too_large"


class StorageLimitReached(LimitExceeded):
    """The space has no room left for this change."""

    code = "storage_limit_reached"


class CallLimitReached(LimitExceeded):
    """A credential is over its limit of open sessions, calls at once, or tool calls in the
    current window (the tool-invocation allowance)."""

    code = "call_limit_reached"


class BudgetExceeded(LimitExceeded):
    """A call used more than its budget of CPU or wall time (``gitpatch.core.budget``), or
    was stopped (its client went away, the service is shutting down); it changed nothing."""

    code = "budget_exceeded"


class AccessDenied(_Coded):
    """The caller may not do this."""

    abstract = True


class Forbidden(AccessDenied):
    """The caller may not act on this space at all."""

    code = "forbidden"


class PermissionDenied(AccessDenied):
    """A policy rule denies the operation."""

    code = "permission_denied"


class ApprovalRequired(AccessDenied):
    """A person must approve the operation first."""

    code = "approval_required"


class PlanModeDenied(AccessDenied):
    """Plan mode allows no change to this target (only the session's work:// files, or none)."""

    code = "plan_mode_denied"


class TeamNotFound(AccessDenied):
    """The team named in the address does not exist."""

    code = "team_not_found"


class PersonalCannotAddressTeam(AccessDenied):
    """A personal credential cannot address a team's space."""

    code = "personal_cannot_address_team"


class NoPersonalSpace(AccessDenied):
    """The caller has no personal space to address."""

    code = "no_personal_space"


class WrongSpace(AccessDenied):
    """The call addresses a space other than the one its URL names (``/s/<space>/mcp``): the
    router sent it to that space's host, which must not create another space."""

    code = "wrong_space"


class StateError(_Coded):
    """The repository or a proposal is not in a usable state."""

    abstract = True


class DirtyWorktree(StateError):
    """Touched files have uncommitted changes and the policy is ``refuse``."""

    code = "dirty_worktree"


class UnsavedChanges(StateError):
    """An editor holds unsaved edits to the target; the change would race with them."""

    code = "unsaved_changes"


class ProposalNotFound(StateError):
    """No open proposal or session has that id or name."""

    code = "proposal_not_found"


class ProposalClosed(StateError):
    """The proposal already has a verdict (approved, rejected or undone)."""

    code = "proposal_closed"


class ProposalRejected(StateError):
    """A person already rejected this exact change; resend it as a revision."""

    code = "proposal_rejected"


class MergeConflict(StateError):
    """Merging or landing the change clashes with other changes."""

    code = "merge_conflict"


class ChecksFailed(StateError):
    """The project's checks (``.gitpatch.toml`` ``[checks]``) failed on the tree that would
    land: nothing landed."""

    code = "checks_failed"


class RepositoryError(StateError):
    """The repository is missing, bare where a tree is needed, or in a bad state.

    ``unexplained`` is True when git's library refused with words gitpatch has no meaning for
    (they are in ``details["cause"]``): it loses the errno of a failed write, so a full disk
    can look like this, and a writer checks the free space before passing it on.
    """

    code = "repository_error"

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        details: dict[str, Any] | None = None,
        *,
        unexplained: bool = False,
    ) -> None:
        super().__init__(message, hint, details)
        self.unexplained = unexplained


class StagedChanges(StateError):
    """A path the change writes has staged changes (``git add``, ``git rm --cached``)."""

    code = "staged_changes"


class OperationInProgress(StateError):
    """A merge, cherry-pick, revert, rebase, ``am`` or bisect is under way where it matters."""

    code = "operation_in_progress"


class BranchCheckedOut(StateError):
    """The branch to move is checked out in another worktree (``git branch -f`` refuses too)."""

    code = "branch_checked_out"


class FilesystemError(StateError):
    """The filesystem refuses a read or a write (permissions, name too long, read-only)."""

    code = "filesystem_error"

    @classmethod
    def of(cls, path: str, exc: OSError, doing: str = "write") -> FilesystemError:
        """The error for ``exc`` met while ``doing`` (read, write, ...) ``path``."""
        name = errno.errorcode.get(exc.errno or 0, str(exc.errno))
        return cls(
            f"cannot {doing} {path}: {exc.strerror or exc}",
            hint="Fix the cause (permissions, free space, a name too long), then retry.",
            details={"path": path, "errno": name},
        )


class FilterFailed(StateError):
    """git could not run a path's clean or smudge conversion (a ``filter=`` driver, ...)."""

    code = "filter_failed"


class ObjectMissing(StateError):
    """A partial clone (``--filter``) lacks a blob the call needs; gitpatch never fetches it."""

    code = "object_missing"


class SigningRequired(StateError):
    """``commit.gpgsign`` is on and gitpatch does not sign commits."""

    code = "signing_required"


class ConcurrentUpdate(StateError):
    """Another writer won the compare-and-swap (or holds a lock) too often.

    ``reason`` says which: ``changed`` (a ref or note moved: rebuilding may succeed),
    ``locked`` (another process holds a lock: retrying at once will not help) or ``disk`` (a
    file changed on disk while the change was prepared). It is also in ``details``.
    """

    code = "concurrent_update"

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        details: dict[str, Any] | None = None,
        *,
        reason: ConcurrentReason | None = None,
    ) -> None:
        given = dict(details or {})
        found = reason or given.get("reason") or "changed"
        if found not in ("changed", "locked", "disk"):
            raise ValueError(f"unknown concurrent_update reason {found!r}")
        if reason is not None:
            given["reason"] = reason  # reported to callers with the other details
        super().__init__(message, hint, given)
        self.reason: ConcurrentReason = found


class InternalError(_Coded):
    """A bug in gitpatch: the message says no more than that."""

    code = "internal_error"


def _leaf_classes() -> dict[str, type[_Coded]]:
    found: dict[str, type[_Coded]] = {}
    stack: list[type[_Coded]] = [_Coded]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if not cls.abstract:
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
