"""The ``read`` tool: numbered lines and the version, for ``expected_version`` and ``@@ N``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gitpatch.core.text import Document
from gitpatch.errors import InvalidArguments
from gitpatch.tools._base import Tool
from gitpatch.tools._result import ToolResult
from gitpatch.tools.policy import ToolOperation

__all__ = ["ReadTool"]

#: Lines returned when no ``limit`` is given.
DEFAULT_LIMIT = 2000


def _positive(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArguments(
            f"{name} must be an integer >= {minimum}, got {value!r}",
            hint=f"Pass {name} as a whole number (lines are numbered from 1).",
            details={"field": name},
        )
    return value


class ReadTool(Tool):
    """A text file's lines, numbered from 1, with its version and resource id."""

    name = "read"

    def run(
        self,
        before_write: Callable[[], None] | None = None,
        *,
        path: str,
        offset: int | None = None,
        limit: int | None = None,
    ) -> ToolResult:
        """``offset``: first line (1-based); ``limit``: how many lines."""
        start = 1 if offset is None else _positive("offset", offset, 1)
        count = DEFAULT_LIMIT if limit is None else _positive("limit", limit, 1)
        target = self.resolve(path)
        self.authorize(ToolOperation.READ_FILE, target)
        found = target.storage.read(target.key)
        doc = Document.from_bytes(found.data, target.shown)
        total = len(doc.lines)
        lines = doc.lines[start - 1 : start - 1 + count]
        end = start + len(lines) - 1
        if total and start > total:
            raise InvalidArguments(
                f"offset {start} is past the end of {target.shown} ({total} lines)",
                hint=f"Pass an offset between 1 and {total}.",
                details={"field": "offset", "total_lines": total},
            )
        head = f"{target.shown} (version {found.version}, lines {start}-{end} of {total})"
        if not total:
            head = f"{target.shown} (version {found.version}, empty file)"
        body = [f"{n:>6}\t{line}" for n, line in enumerate(lines, start=start)]
        data: dict[str, Any] = {
            "path": target.shown,
            "id": found.id,
            "version": found.version,
            "content": "".join(
                line + ending
                for line, ending in zip(lines, doc.endings[start - 1 : end], strict=True)
            ),
            "start_line": start,
            "end_line": end,
            "total_lines": total,
        }
        if end < total:
            body.append(f"... {total - end} more lines; pass offset={end + 1} to continue.")
        return ToolResult("\n".join([head, *body]), ok=True, data=data)
