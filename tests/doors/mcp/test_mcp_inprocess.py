"""The server construction with a custom tool set, in process (the SDK's own Client)."""

from __future__ import annotations

from typing import Any

import anyio
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR
from pydantic import BaseModel

from gitpatch.doors.mcp import Reply, ToolSet, build_server


def _crash(_args: BaseModel) -> Reply:
    raise RuntimeError("secret internals /home/someone/.ssh")


def _refuse(_args: BaseModel) -> Reply:
    return Reply(False, "no such thing", code="resource_not_found", hint="Check the path.")


def _call(toolset: ToolSet, name: str, args: dict[str, Any]) -> Any:
    async def main() -> Any:
        async with Client(build_server(toolset)) as client:
            try:
                return await client.call_tool(name, args)
            except MCPError as exc:  # caught here: leaving the client re-raises it in a group
                return exc

    return anyio.run(main)


def test_an_unexpected_exception_is_internal_error_without_internals() -> None:
    error = _call(ToolSet({"read_file": _crash}), "read_file", {"path": "a"})
    assert isinstance(error, MCPError)
    assert error.code == INTERNAL_ERROR
    assert error.message == "internal_error: an unexpected error occurred"
    assert "secret" not in repr(error.data)


def test_a_refusal_reply_is_an_iserror_result_with_code_and_hint() -> None:
    result = _call(ToolSet({"read_file": _refuse}), "read_file", {"path": "a"})
    assert result.is_error
    assert result.content[0].text == "resource_not_found: no such thing\nCheck the path."
    assert result.structured_content is None


def test_only_the_tools_of_the_set_are_served() -> None:
    async def main() -> list[str]:
        async with Client(build_server(ToolSet({"read_file": _refuse}))) as client:
            return [t.name for t in (await client.list_tools()).tools]

    assert anyio.run(main) == ["read_file"]
