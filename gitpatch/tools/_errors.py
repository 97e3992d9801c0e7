"""The ONE place where errors become tool results: codes, texts, and the generic failure.

The Workspace and the storages raise ``GitpatchError``; each tool catches everything here. The
text is the error's message and hint, so a model reading it knows what was wrong and how to
retry. ``patch_resource`` speaks the codes of its spec: an edit that cannot be placed is
``invalid_patch``, a policy denial ``forbidden``, a change made while preparing
``resource_conflict``; the precise library code stays in ``data["reason"]``. Anything that is
not a ``GitpatchError`` is a bug or an I/O failure: it is logged with its traceback and the
model gets one stable text that says nothing changed.
"""

from __future__ import annotations

import errno
import logging
import re
from collections.abc import Mapping

from gitpatch.errors import GitpatchError
from gitpatch.tools._result import ToolResult

__all__ = ["GENERIC_FAILURE", "WRITE_FAILURE", "Cancelled", "error_result", "spec_code"]

log = logging.getLogger("gitpatch.tools")

#: The text of any unexpected failure (``{tool}`` is the tool's name).
GENERIC_FAILURE = (
    "{tool} failed: an unexpected internal error occurred and nothing was changed. "
    "Retry the call once; if it fails again, tell the user."
)
#: The text of an operating-system failure while writing.
WRITE_FAILURE = (
    "{tool} failed: the change could not be written ({why}); nothing was changed. "
    "Retry the call once; if it fails again, tell the user."
)


class Cancelled(Exception):
    """Raised right before writing when an async call was cancelled before writing."""


# patch_resource's spec names fewer codes than the library has; these are folded into them.
_RESOURCE_CODES = {
    "match_not_found": "invalid_patch",
    "match_ambiguous": "invalid_patch",
    "edit_overlap": "invalid_patch",
    "no_change": "invalid_patch",
    "path_unsafe": "invalid_arguments",
    "permission_denied": "forbidden",
    "plan_mode_denied": "forbidden",
    "path_ignored": "forbidden",
    "concurrent_update": "resource_conflict",
    "dirty_worktree": "resource_conflict",
    "repository_error": "internal_error",
}


def spec_code(tool: str, code: str) -> str:
    """The code ``tool`` reports for a library error code."""
    if tool == "patch_resource":
        return _RESOURCE_CODES.get(code, code)
    return code


def _show(message: str, shown: Mapping[str, str]) -> str:
    """``message`` with each storage key (``notes.txt``) written as the caller's path
    (``/workspace/notes.txt``): whole paths only, never inside quotes (quoted text is file or
    edit content, which a model may copy). Hints are left as they are: they quote content."""
    for key, path in shown.items():
        if key != path:
            pattern = rf"(?<![\w./'\"`-]){re.escape(key)}(?![\w/'\"`-]|\.\w)"
            message = re.sub(pattern, path, message)
    return message


def error_result(
    tool: str, exc: BaseException, shown: Mapping[str, str] | None = None
) -> ToolResult:
    """The tool result for any exception raised while running ``tool``; ``shown`` maps the
    storage keys of the call's targets to the paths the caller used (mounted filesystems)."""
    if isinstance(exc, GitpatchError):
        code = spec_code(tool, exc.code)
        data = exc.to_dict()
        data["code"] = code
        if code != exc.code:
            data["reason"] = exc.code
        message = _show(exc.message, shown) if shown else exc.message
        data["message"] = message
        text = f"{message}\n{exc.hint}" if exc.hint else message
        return ToolResult(text=text, ok=False, code=code, data=data)
    if isinstance(exc, Cancelled):
        text = f"{tool} was cancelled before it wrote anything; nothing was changed."
        return ToolResult(text, ok=False, code="cancelled", data={"code": "cancelled"})
    if isinstance(exc, OSError):
        log.warning("%s: write failed", tool, exc_info=exc)
        why = exc.strerror or type(exc).__name__
        text = WRITE_FAILURE.format(tool=tool, why=why)
        # The core's code for the same failure, so a model meets one code for a refused write.
        name = errno.errorcode.get(exc.errno or 0, str(exc.errno))
        data = {"code": "filesystem_error", "errno": name}
        return ToolResult(text, ok=False, code="filesystem_error", data=data)
    log.error("%s: unexpected failure", tool, exc_info=exc)
    text = GENERIC_FAILURE.format(tool=tool)
    return ToolResult(text, ok=False, code="internal_error", data={"code": "internal_error"})
