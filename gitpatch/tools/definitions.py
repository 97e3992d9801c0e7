"""The agent-facing tool definitions: names, argument models, descriptions, JSON Schemas.

One source for the MCP server (which publishes these schemas and validates arguments against
these models before a tool runs) and for ``gitpatch schema`` (which prints them in MCP, OpenAI
or Anthropic form for other harnesses). Descriptions are the checked-in markdown files in
``gitpatch/tools/docs/``, written for models. There is no approve or reject tool: only people
approve. Pure: no MCP import here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from gitpatch.formats.patch_resource import ResourceEdit

__all__ = [
    "RUN_TOOL",
    "TOOLS",
    "ApplyPatchArgs",
    "CheckpointArgs",
    "ListProposalsArgs",
    "PatchArgs",
    "PatchResourceArgs",
    "READ_MAX_BYTES",
    "ReadFileArgs",
    "RunChecksArgs",
    "RunCommandArgs",
    "ShowProposalArgs",
    "ToolDef",
    "definitions",
    "description",
]


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _revises() -> Any:
    """The optional ``revises`` argument of the edit tools."""
    return Field(
        default=None,
        description="The id of a proposal a person rejected or asked you to change, when this "
        "call is its revision (see list_proposals / show_proposal).",
    )


class PatchArgs(_Args):
    """Arguments of ``patch``."""

    path: str = Field(description="The file to edit, relative to the repository root.")
    edits: str = Field(description="One or more SEARCH/REPLACE blocks, without path lines.")
    revises: str | None = _revises()


class ApplyPatchArgs(_Args):
    """Arguments of ``apply_patch``."""

    patch: str = Field(description="The whole patch, from '*** Begin Patch' to '*** End Patch'.")
    revises: str | None = _revises()


class PatchResourceArgs(_Args):
    """Arguments of ``patch_resource``."""

    path: str = Field(description="The file to edit, relative to the repository root.")
    edits: list[ResourceEdit] = Field(description="The edits to apply, in order.")
    expected_version: str | None = Field(
        default=None,
        description="The version you last read; a change since then is a resource_conflict.",
    )
    team: str | None = Field(
        default=None, description="The team that owns the resource (service mode only)."
    )
    revises: str | None = _revises()


class ReadFileArgs(_Args):
    """Arguments of ``read_file``."""

    path: str = Field(description="The file to read, relative to the repository root.")
    offset: int | None = Field(default=None, ge=1, description="First line to return (1-based).")
    limit: int | None = Field(default=None, ge=1, description="How many lines to return.")


class ListProposalsArgs(_Args):
    """``list_proposals`` takes no arguments."""


class ShowProposalArgs(_Args):
    """Arguments of ``show_proposal``."""

    id: str = Field(description="A proposal id (12 hex characters) or a session name.")


#: Bytes of file content (UTF-8) one read result holds at most, whatever ``limit`` says:
#: about 25,000 tokens, so one read never floods a model's context. Lines stop at the cap
#: (the result says where to continue); a single line longer than the cap is cut.
READ_MAX_BYTES = 100 * 1024


class RunChecksArgs(_Args):
    """``run_checks`` takes no arguments."""


class CheckpointArgs(_Args):
    """Arguments of ``checkpoint``."""

    command: str | None = Field(
        default=None,
        max_length=4096,
        description="The command whose changes these are (recorded with the checkpoint).",
    )


class RunCommandArgs(_Args):
    """Arguments of ``run_command`` (served only with ``serve --allow-run``)."""

    command: str = Field(
        min_length=1, max_length=4096, description="A shell command line, e.g. 'pytest -q'."
    )
    timeout_seconds: int = Field(
        default=120, ge=1, le=3600, description="Stop the command after this many seconds."
    )


@dataclass(frozen=True)
class ToolDef:
    """One tool: its name, argument model, whether it changes anything, and whether an
    identical call repeated changes nothing more (``idempotent``: a read, or an edit whose
    retry is answered with the original result)."""

    name: str
    args: type[BaseModel]
    read_only: bool
    #: None: as ``read_only``.
    idempotent: bool | None = None


TOOLS: tuple[ToolDef, ...] = (
    ToolDef("patch", PatchArgs, read_only=False, idempotent=True),
    ToolDef("apply_patch", ApplyPatchArgs, read_only=False, idempotent=True),
    ToolDef("patch_resource", PatchResourceArgs, read_only=False, idempotent=True),
    ToolDef("read_file", ReadFileArgs, read_only=True),
    ToolDef("list_proposals", ListProposalsArgs, read_only=True),
    ToolDef("show_proposal", ShowProposalArgs, read_only=True),
    ToolDef("run_checks", RunChecksArgs, read_only=True),
    ToolDef("checkpoint", CheckpointArgs, read_only=False),
)

#: ``run_command``: served only when a person allows it (``serve --allow-run``), never by the
#: hosted service.
RUN_TOOL = ToolDef("run_command", RunCommandArgs, read_only=False)


@cache
def description(name: str) -> str:
    """The checked-in markdown description of tool ``name``."""
    return (resources.files("gitpatch.tools") / "docs" / f"{name}.md").read_text(encoding="utf-8")


def input_schema(tool: ToolDef) -> dict[str, Any]:
    """The JSON Schema of the tool's arguments, from its pydantic model."""
    return tool.args.model_json_schema()


def definitions(fmt: Literal["mcp", "openai", "anthropic"] = "mcp") -> list[dict[str, Any]]:
    """Every tool definition in the shape ``fmt``'s harnesses expect."""
    out: list[dict[str, Any]] = []
    for tool in TOOLS:
        schema = input_schema(tool)
        text = description(tool.name)
        if fmt == "mcp":
            out.append({"name": tool.name, "description": text, "inputSchema": schema})
        elif fmt == "openai":
            function = {"name": tool.name, "description": text, "parameters": schema}
            out.append({"type": "function", "function": function})
        else:
            out.append({"name": tool.name, "description": text, "input_schema": schema})
    return out
