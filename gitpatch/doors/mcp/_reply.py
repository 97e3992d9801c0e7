"""What a tool handler gives the server, independent of the MCP SDK."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from gitpatch.tools.definitions import ToolDef

__all__ = ["Handler", "Reply", "ToolSet"]


@dataclass(frozen=True)
class Reply:
    """What a tool handler returns: success or a refusal with its code, the text the model
    reads, and (on success) the structured data for ``structuredContent``."""

    ok: bool
    text: str
    code: str | None = None
    data: dict[str, Any] | None = None
    hint: str | None = None
    #: Lines the result starts with (what happened to the session's work since its last call).
    notices: tuple[str, ...] = ()


#: A tool handler takes the validated arguments; it may return a Reply or raise GitpatchError.
Handler = Callable[[BaseModel], Reply]


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
