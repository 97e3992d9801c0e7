"""What a tool handler gives the server, independent of the MCP SDK."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from gitpatch.errors import GitpatchError
from gitpatch.tools import ToolResult
from gitpatch.tools.definitions import ToolDef

__all__ = ["Admitted", "Handler", "Reply", "ToolSet"]


@dataclass(frozen=True)
class Admitted:
    """What a server's admission of a call may yield (``build_server``'s ``admit``):
    ``on_cancel`` is called at once, on the event loop, when an offloaded call is cancelled
    (the MCP client's ``notifications/cancelled``: the SDK cancels the request's scope). A
    thread cannot be cancelled, so this is how its work is told to stop (a budget stopped
    ends it at its next checkpoint); the call still waits for its thread."""

    on_cancel: Callable[[], None]


class Reply(ToolResult):
    """A ``ToolResult`` built by the door's own handlers, arguments in the door's order:
    success or a refusal with its code, the text the model reads, and (on success) the
    structured data for ``structuredContent``. The tool layer's results pass as they are."""

    def __init__(
        self,
        ok: bool,
        text: str,
        code: str | None = None,
        data: dict[str, Any] | None = None,
        hint: str | None = None,
        notices: tuple[str, ...] = (),
    ) -> None:
        super().__init__(text, ok, code, {} if data is None else data, hint, notices)

    @classmethod
    def refusal(cls, exc: GitpatchError) -> Reply:
        """A gitpatch error raised in the door (not in a tool): the door's one conversion."""
        return cls(False, exc.message, exc.code, hint=exc.hint)


#: A tool handler takes the validated arguments; it returns a ToolResult (a tool's own, or a
#: Reply) or raises GitpatchError.
Handler = Callable[[BaseModel], ToolResult]


@dataclass
class ToolSet:
    """The handlers a server serves, by tool name: a subset of ``tools`` (None:
    ``tooldefs.TOOLS``), each publishing ``outputs[name]`` as its output schema (None: the
    server's ``OUTPUTS``) and ``describe(name)`` as its description (None: the checked-in
    tool docs). The HTTP service brings its own three."""

    handlers: Mapping[str, Handler]
    instructions: str = ""
    closers: list[Callable[[], None]] = field(default_factory=list)
    tools: tuple[ToolDef, ...] | None = None
    outputs: Mapping[str, type[BaseModel]] | None = None
    describe: Callable[[str], str] | None = None
    #: Told the MCP client's ``clientInfo`` name before each tool call (session naming).
    on_client: Callable[[str | None], None] | None = None
    #: The tools whose changes replace what was there (annotated ``destructiveHint``): the
    #: edit tools when they land on files, none when every change waits for review.
    destructive: frozenset[str] = frozenset()
