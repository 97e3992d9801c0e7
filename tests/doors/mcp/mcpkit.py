"""Driving the real ``gitpatch serve`` over stdio with the MCP SDK's own client."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import anyio
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.gitkit import GIT_ENV
from tests.gitkit import repo_state as repo_state  # the one helper

T = TypeVar("T")


def console_script(name: str = "gitpatch") -> str:
    """The installed console script next to this interpreter."""
    path = Path(sys.executable).parent / name
    assert path.exists(), f"console script {path} is not installed (make install)"
    return str(path)


@contextlib.asynccontextmanager
async def session(
    repo: Path, *extra: str, env: Mapping[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialised client session with ``gitpatch -C repo serve *extra`` (``env``: more
    variables for the server, e.g. a crash point)."""
    params = StdioServerParameters(
        command=console_script(),
        args=["-C", str(repo), "serve", *extra],
        env={**GIT_ENV, "HOME": str(repo), "PATH": os.environ.get("PATH", ""), **(env or {})},
        cwd=str(repo),
    )
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            yield client


def run(repo: Path, scenario: Callable[[ClientSession], Awaitable[T]], *extra: str) -> T:
    """Run ``scenario(client)`` against a fresh server on ``repo``; returns its result."""

    async def main() -> T:
        with anyio.fail_after(60):
            async with session(repo, *extra) as client:
                return await scenario(client)

    return anyio.run(main)


def text_of(result: Any) -> str:
    """The text content of a tool result."""
    return "".join(getattr(block, "text", "") for block in result.content)


@contextlib.asynccontextmanager
async def named_client(repo: Path, name: str, *serve: str) -> AsyncIterator[ClientSession]:
    """An SDK stdio client of ``gitpatch -C repo serve *serve`` that introduces itself as
    ``name`` (its ``clientInfo``), as a real harness does."""
    params = StdioServerParameters(
        command=console_script(),
        args=["-C", str(repo), "serve", *serve],
        env={**GIT_ENV, "HOME": str(repo), "PATH": os.environ.get("PATH", "")},
        cwd=str(repo),
    )
    info = types.Implementation(name=name, version="1.0")
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, client_info=info) as connected,
        ):
            await connected.initialize()
            yield connected
