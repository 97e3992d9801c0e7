"""Concurrent patch_resource load over HTTP and its replay (shared by the tests and the bench).

Every call inserts one unique line at the top of one of the resources, so the final content
of each resource is fully determined by the calls that succeeded, in the order of the
versions they returned: ``replay`` recomputes it and the caller compares with the space.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import anyio

from tests.doors.hosted.svckit import session

INITIAL = "end\n"


@dataclasses.dataclass
class Outcome:
    """One call: which client and resource, the line it inserted, what came back."""

    client: int
    resource: str
    line: str
    ok: bool
    code: str | None
    version: int | None
    seconds: float


def resource_name(n: int) -> str:
    """The path of resource ``n``."""
    return f"load/r{n}.txt"


async def _client(
    url: str,
    token: str,
    number: int,
    calls: int,
    resources: int,
    out: list[Outcome],
    after: Callable[[list[Outcome]], None],
) -> None:
    async with session(url, token) as c:
        for j in range(calls):
            path = resource_name((number + j) % resources)
            line = f"c{number}-{j}\n"
            args: dict[str, object] = {
                "path": path,
                "edits": [{"after_line": 0, "new_string": line}],
            }
            start = time.perf_counter()
            if number % 2 == 0:  # half the clients pass the version they read
                read = await c.call_tool("read_resource", {"path": path})
                args["expected_version"] = read.structured_content["version"]
            result = await c.call_tool("patch_resource", args)
            took = time.perf_counter() - start
            text = "".join(getattr(b, "text", "") for b in result.content)
            if result.is_error:
                out.append(Outcome(number, path, line, False, text.split(":")[0], None, took))
            else:
                version = result.structured_content["version"]
                out.append(Outcome(number, path, line, True, None, version, took))
            after(out)


async def setup(url: str, token: str, resources: int) -> None:
    """Create the resources the load edits."""
    async with session(url, token) as c:
        for n in range(resources):
            await c.call_tool("create_resource", {"path": resource_name(n), "content": INITIAL})


async def load(
    url: str | list[str],
    token: str,
    clients: int,
    calls: int,
    resources: int,
    out: list[Outcome] | None = None,
    after: Callable[[list[Outcome]], None] = lambda _out: None,
) -> list[Outcome]:
    """Run ``clients`` concurrent sessions of ``calls`` patch_resource calls each (spread over
    the servers when ``url`` is a list), collecting
    into ``out`` (``after(out)`` runs after each call); a client whose connection breaks (the
    server was killed) just stops."""
    out = [] if out is None else out

    async def guarded(n: int) -> None:
        try:
            where = url if isinstance(url, str) else url[n % len(url)]
            await _client(where, token, n, calls, resources, out, after)
        except Exception:  # noqa: BLE001 - a killed server breaks the session; outcomes stay
            return
        except BaseExceptionGroup:
            return

    async with anyio.create_task_group() as tg:
        for n in range(clients):
            tg.start_soon(guarded, n)
    return out


def replay(outcomes: list[Outcome], resource: str) -> str:
    """The content ``resource`` must have: INITIAL with every success's line inserted at the
    top, in version order."""
    content = INITIAL
    done = sorted(
        (o for o in outcomes if o.ok and o.resource == resource), key=lambda o: o.version or 0
    )
    for o in done:
        content = o.line + content
    return content
