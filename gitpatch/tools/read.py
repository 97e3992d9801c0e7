"""The ``read`` tool: numbered lines and the version, for ``expected_version`` and ``@@ N``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gitpatch.core.text import Document
from gitpatch.errors import InvalidArguments
from gitpatch.tools._base import Tool
from gitpatch.tools._result import ToolResult, plural
from gitpatch.tools.definitions import READ_MAX_BYTES
from gitpatch.tools.policy import ToolOperation

__all__ = ["ReadTool"]

#: Lines returned when no ``limit`` is given.
DEFAULT_LIMIT = 2000
#: Bytes of file content one result holds at most (``definitions.READ_MAX_BYTES``).
MAX_BYTES = READ_MAX_BYTES


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

    def __init__(self, *args: Any, max_bytes: int = MAX_BYTES, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.max_bytes = max_bytes

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
        if total and start > total:
            raise InvalidArguments(
                f"offset {start} is past the end of {target.shown} ({total} lines)",
                hint=f"Pass an offset between 1 and {total}.",
                details={"field": "offset", "total_lines": total},
            )
        lines, cut = _capped(doc, start, count, self.max_bytes)
        end = start + len(lines) - 1
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
        if cut is not None:
            size = len(doc.lines[cut - 1].encode())
            body.append(
                f"... line {cut} is {size:,} bytes: only its first {self.max_bytes:,} are shown "
                f"(a result holds at most {self.max_bytes:,} bytes)."
            )
            data["cut_lines"] = [cut]
        wanted = min(total, start - 1 + count)
        if end < wanted:
            body.append(
                f"... {plural(total - end, 'more line')}; this result stops at "
                f"{self.max_bytes:,} bytes; "
                f"pass offset={end + 1} to continue."
            )
        elif end < total:
            body.append(
                f"... {plural(total - end, 'more line')}; pass offset={end + 1} to continue."
            )
        if end < total:
            data["next_offset"] = end + 1
        return ToolResult("\n".join([head, *body]), ok=True, data=data)


def _capped(doc: Document, start: int, count: int, budget: int) -> tuple[list[str], int | None]:
    """Up to ``count`` lines from ``start`` whose UTF-8 size stays within ``budget`` (always at
    least one), and the number of a first line cut to fit (None when none was cut)."""
    out: list[str] = []
    for n in range(start - 1, min(len(doc.lines), start - 1 + count)):
        line = doc.lines[n]
        size = len(line) if line.isascii() else len(line.encode())
        if size > budget and not out:
            cut = line.encode()[:budget].decode(errors="ignore")
            return [cut], n + 1
        if size > budget:
            break
        budget -= size + len(doc.endings[n])
        out.append(line)
    return out, None
