"""Sizes over the real ``gitpatch serve`` and the SDK's stdio client: a read result holds at
most 2,000 lines and 102,400 bytes and says where to read on; a written file over the
server's stated limit is ``payload_too_large`` with nothing changed."""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.doors.mcp.mcpkit import console_script, repo_state, run, text_of
from tests.gitkit import GIT_ENV

pytestmark = pytest.mark.slow  # a server in a process of its own

CAP = 102_400
LONG = "".join(f"{'x' * 4000} {i}\n" for i in range(1500))  # 6 MB of long lines
MANY = "".join(f"line {i:07d} {'y' * 60}\n" for i in range(300_000))  # 22 MB of short ones
ONE = "z" * 3_000_000 + "\nend\n"  # one 3 MB line


FILES = {"long.txt": LONG, "many.txt": MANY, "one.txt": ONE, "small.txt": "a\nb\n"}


def _read(repo: Path, *calls: dict[str, Any]) -> list[Any]:
    async def scenario(client: ClientSession) -> list[Any]:
        return [await client.call_tool("read_file", args) for args in calls]

    return run(repo, scenario)


def test_a_read_of_long_lines_stops_at_the_byte_cap_and_says_where_to_read_on(
    repo: Path,
) -> None:
    lines = LONG.splitlines(keepends=True)
    fit = sum(1 for total in itertools.accumulate(map(len, lines)) if total <= CAP)
    first, second = _read(repo, {"path": "long.txt"}, {"path": "long.txt", "offset": fit + 1})
    data = first.structured_content
    assert len(data["content"].encode()) <= CAP
    assert len(text_of(first).encode()) < CAP + 2_000  # numbers and the lines around
    assert (data["start_line"], data["end_line"], data["total_lines"]) == (1, fit, 1500)
    assert data["next_offset"] == fit + 1
    assert text_of(first).endswith(
        f"... {1500 - fit} more lines; this result stops at 102,400 bytes; "
        f"pass offset={fit + 1} to continue."
    )
    assert data["content"] == "".join(lines[:fit])
    assert second.structured_content["start_line"] == fit + 1  # reading on, nothing skipped


def test_a_read_of_a_big_file_holds_at_most_the_cap(repo: Path) -> None:
    (found,) = _read(repo, {"path": "many.txt", "limit": 5000})
    data = found.structured_content
    assert 0 < len(data["content"].encode()) <= CAP
    assert data["next_offset"] == data["end_line"] + 1 < 2000
    assert f"pass offset={data['next_offset']} to continue" in text_of(found)


def test_a_line_over_the_cap_is_cut_and_the_result_says_so(repo: Path) -> None:
    (found,) = _read(repo, {"path": "one.txt"})
    data = found.structured_content
    assert data["cut_lines"] == [1] and data["end_line"] == 1 and data["next_offset"] == 2
    assert len(data["content"].encode()) <= CAP + 1
    assert "line 1 is 3,000,000 bytes: only its first 102,400 are shown" in text_of(found)


def test_a_small_read_is_whole_and_says_nothing_was_cut(repo: Path) -> None:
    (found,) = _read(repo, {"path": "small.txt"})
    data = found.structured_content
    assert data["content"] == "a\nb\n" and data["next_offset"] is None
    assert data["cut_lines"] is None and "continue" not in text_of(found)


@contextlib.asynccontextmanager
async def _client(repo: Path, *serve: str) -> AsyncIterator[tuple[ClientSession, str]]:
    """A client of ``gitpatch -C repo serve *serve`` and the server's instructions."""
    params = StdioServerParameters(
        command=console_script(),
        args=["-C", str(repo), "serve", *serve],
        env={**GIT_ENV, "HOME": str(repo), "PATH": os.environ.get("PATH", "")},
    )
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as client,
        ):
            init = await client.initialize()
            yield client, init.instructions or ""


@pytest.mark.parametrize("mode", ["auto", "review"])
def test_a_written_file_over_the_limit_is_refused_with_nothing_changed(
    repo: Path, mode: str
) -> None:
    big = "w" * 1500 + "\n"
    calls: list[tuple[str, dict[str, Any]]] = [
        ("patch_resource", {"path": "small.txt", "edits": [{"after_line": 0, "new_string": big}]}),
        (
            "apply_patch",
            {"patch": f"*** Begin Patch\n*** Add File: new.txt\n+{big}*** End Patch\n"},
        ),
        (
            "patch",
            {"path": "small.txt", "edits": f"<<<<<<< SEARCH\na\n=======\n{big}>>>>>>> REPLACE\n"},
        ),
    ]

    async def main() -> tuple[str, list[Any], dict[str, str], Any]:
        with anyio.fail_after(60):
            async with _client(repo, "--mode", mode, "--max-file-bytes", "1000") as (client, said):
                refused = [await client.call_tool(name, args) for name, args in calls]
                after = repo_state(repo)
                small = await client.call_tool(
                    "patch_resource",
                    {"path": "small.txt", "edits": [{"after_line": 0, "new_string": "ok\n"}]},
                )
                return said, refused, after, small

    before = repo_state(repo)
    said, refused, after, small = anyio.run(main)
    assert "at most 1000 bytes" in said
    for result in refused:
        assert result.is_error and result.meta["code"] == "payload_too_large", text_of(result)
        assert "over the limit of 1000 bytes" in text_of(result)
    assert after == before  # no file, ref, note or index entry
    assert not small.is_error, text_of(small)  # under the limit: as ever


def test_the_default_limit_is_stated_to_the_agent(repo: Path) -> None:
    async def main() -> str:
        with anyio.fail_after(60):
            async with _client(repo) as (_client_session, said):
                return said

    said = anyio.run(main)
    assert "at most 104857600 bytes" in said
    assert "read_file returns at most 102400 bytes" in said
