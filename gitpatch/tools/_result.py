"""What a tool call returns: the text the model reads, plus a code and structured data."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["ToolResult"]


@dataclasses.dataclass(frozen=True)
class ToolResult:
    """One tool call's outcome; tools return it and never raise.

    The one result type from the tools to the doors: a door shapes it once for its medium.
    ``str(result)`` is the text the model reads; ``ok`` says whether the change (or read) was
    done; ``code`` is the stable error code (None on success); ``data`` is the structured result
    (on success the tool's fields, on failure ``code``, ``message``, ``hint`` and ``details``).
    """

    text: str
    ok: bool
    code: str | None = None
    data: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: A refusal's hint on its own (the text already ends with it), for a door that shows it
    #: apart; None where the text says it all.
    hint: str | None = None
    #: Lines a door puts before the text (what happened to the session's work since its last
    #: call); the tools leave it empty.
    notices: tuple[str, ...] = ()

    def __str__(self) -> str:
        return self.text

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view: ``text``, ``ok``, ``code`` and ``data``."""
        return {"text": self.text, "ok": self.ok, "code": self.code, "data": dict(self.data)}

    @property
    def is_error(self) -> bool:
        """True for a failed call (MCP's ``isError``)."""
        return not self.ok
