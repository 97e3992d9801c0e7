"""``make demo``: an agent session through the real MCP server, then a person's review by CLI.

On a throwaway repository (branch ``main``, protected), a scripted agent talks to
``gitpatch serve`` over stdio with the MCP SDK's own client: it reads a file, makes an auto
edit and a multi-file apply_patch (both land on the session branch, since main is protected),
gets a refusal it could correct, then proposes two changes for review. A person then uses the
CLI: lists the proposals, shows one, approves it, rejects the other, merges the session, and
``git log --oneline --graph`` shows the result. Run it with ``python -m gitpatch.doors.demo``.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SAMPLE = '''\
"""Inventory helpers."""

DEFAULT_LIMIT = 10


def report(items, limit=DEFAULT_LIMIT):
    for item in items[:limit]:
        print("item:", item)
    return len(items)


def summary(items, limit=DEFAULT_LIMIT):
    for item in items[:limit]:
        print("item:", item)
    return "done"
'''

MULTI_FILE = """\
*** Begin Patch
*** Update File: inventory.py
@@ def summary
-    return "done"
+    return f"{len(items)} items"
*** Add File: CHANGES.md
+- summary() counts items
*** End Patch
"""

AMBIGUOUS = """\
<<<<<<< SEARCH
    for item in items[:limit]:
        print("item:", item)
=======
    for item in items[:limit]:
        print("-", item)
>>>>>>> REPLACE
"""


TODO = "*** Begin Patch\n*** Add File: TODO.md\n+- rewrite everything\n*** End Patch\n"

DOCSTRING = {
    "old_string": '"""Inventory helpers."""',
    "new_string": '"""Inventory helpers: report and summary."""',
}


def _title(text: str) -> None:
    print(f"\n== {text}", flush=True)


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    return out.stdout.rstrip()


def _make_repo(root: Path) -> Path:
    repo = root / "inventory"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.name", "Demo Person")
    _git(repo, "config", "user.email", "person@example.com")
    (repo / "inventory.py").write_text(SAMPLE)
    _git(repo, "add", "inventory.py")
    _git(repo, "commit", "-q", "-m", "Initial import")
    return repo


def _say(name: str, result: Any) -> None:
    """What the agent got back: the first lines of the text the model reads."""
    lines = "".join(getattr(block, "text", "") for block in result.content).splitlines()
    keep = lines[:1] if name == "read_file" else lines[:4]
    flag = "[isError] " if result.is_error else ""
    print(f"  agent -> {name}: {flag}{keep[0] if keep else ''}")
    for line in keep[1:]:
        print(f"      {line}")


async def _agent(repo: Path, mode: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """One agent session: ``gitpatch serve`` over stdio, driven by the SDK's client."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "gitpatch", "-C", str(repo), "serve", "--mode", mode, "--session", "agent"],
    )
    results = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        if mode == "auto":
            names = [t.name for t in (await client.list_tools()).tools]
            print(f"  tools offered: {', '.join(names)}")
        for name, args in calls:
            result = await client.call_tool(name, args)
            _say(name, result)
            results.append(result)
    return results


def agent_session(repo: Path) -> None:
    """The scripted agent: auto edits, a refusal, then two review-mode proposals."""
    import anyio

    _title("An agent session over MCP (stdio, the MCP SDK client), auto mode")
    edit = "<<<<<<< SEARCH\nDEFAULT_LIMIT = 10\n=======\nDEFAULT_LIMIT = 25\n>>>>>>> REPLACE\n"
    auto: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": "inventory.py", "limit": 3}),
        ("patch", {"path": "inventory.py", "edits": edit}),
        ("apply_patch", {"patch": MULTI_FILE}),
        ("patch", {"path": "inventory.py", "edits": AMBIGUOUS}),
    ]
    anyio.run(_agent, repo, "auto", auto)

    _title("The same agent in review mode: two proposals wait for a person")
    review: list[tuple[str, dict[str, Any]]] = [
        (
            "patch_resource",
            {"path": "inventory.py", "edits": [DOCSTRING]},
        ),
        ("apply_patch", {"patch": TODO}),
        ("list_proposals", {}),
    ]
    anyio.run(_agent, repo, "review", review)


def _cli(repo: Path, *args: str) -> str:
    print(f"\n  $ gitpatch {shlex.join(args)}", flush=True)
    out = subprocess.run(
        [sys.executable, "-m", "gitpatch", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    for line in (out.stdout + out.stderr).rstrip().splitlines():
        print(f"    {line}")
    return out.stdout


def review_session(repo: Path) -> None:
    """A person reviews with the CLI: list, show, approve one, reject one, merge the session."""
    import json

    _title("A person reviews with the gitpatch CLI")
    _cli(repo, "proposals")
    listed = json.loads(
        subprocess.run(
            [sys.executable, "-m", "gitpatch", "-C", str(repo), "--json", "proposals"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    by_file = {p["files"][0]: p["id"] for p in listed if p["status"] == "proposed"}
    keep, drop = by_file["inventory.py"], by_file["TODO.md"]
    _cli(repo, "show", keep)
    _cli(repo, "approve", keep)
    _cli(repo, "reject", drop, "--reason", "out of scope")
    _cli(repo, "approve", "agent")
    _title("git log --oneline --graph main")
    for line in _git(repo, "log", "--oneline", "--graph", "main").splitlines():
        print(f"    {line}")
    print(f"  git fsck: {_git(repo, 'fsck', '--strict') or 'clean'}")


def main() -> int:
    """Run the demo on a throwaway repository, removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="gitpatch-demo-"))
    try:
        repo = _make_repo(root)
        print(f"A throwaway repository at {repo}, on main (protected: agents land on a session).")
        agent_session(repo)
        review_session(repo)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("\nDone. `make test` runs the whole suite.")
    print(
        "Review proposals in a browser (a demo repository): "
        ".venv/bin/python -m gitpatch.doors.web.demo"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
