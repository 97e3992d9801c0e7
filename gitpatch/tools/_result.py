"""What a tool call returns: the text the model reads, plus a code and structured data."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["ToolResult"]


@dataclasses.dataclass(frozen=True)
class ToolResult:
    """One tool call's outcome; tools return it and never raise.

    ``str(result)`` is the text the model reads; ``ok`` says whether the change (or read) was
    done; ``code`` is the stable error code (None on success); ``data`` is the structured result
    (on success the tool's fields, on failure ``code``, ``message``, ``hint`` and ``details``).
    """

    text: str
    ok: bool
    code: str | None = None
    data: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view: ``text``, ``ok``, ``code`` and ``data``."""
        return {"text": self.text, "ok": self.ok, "code": self.code, "data": dict(self.data)}

    @property
    def is_error(self) -> bool:
        """True for a failed call (MCP's ``isError``)."""
        return not self.ok
