"""What starting the MCP server imports: heavy modules wait until a call needs them.

Import checks, not timings: each runs a fresh interpreter and lists ``sys.modules``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitkit import GIT_ENV, make_repo

#: a fresh interpreter per test: `make test-fast` leaves these out.
pytestmark = pytest.mark.slow

#: Not loaded by importing the package, the CLI and the server module (the repository and the
#: Workspace come with serving, the matcher with the first edit).
LATE = ("rapidfuzz", "pygit2", "gitpatch.porcelain.workspace", "gitpatch.engine", "gitpatch.match")


def _loaded(code: str, cwd: Path | None = None) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env=GIT_ENV,
        cwd=cwd,
    )
    return set(json.loads(out.stdout.splitlines()[-1]))


def _under(modules: set[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


def test_starting_the_server_imports_no_heavy_module() -> None:
    loaded = _loaded("import gitpatch, gitpatch.doors.cli, gitpatch.doors.mcp")
    assert "gitpatch.doors.mcp" in loaded and "mcp.server.mcpserver" in loaded
    assert [name for name in LATE if _under(loaded, name)] == []


def test_the_public_api_is_still_there_on_first_use() -> None:
    loaded = _loaded(
        "import gitpatch\n"
        "from gitpatch import GitpatchError, Workspace, patch_tool\n"
        "assert Workspace.__module__ == 'gitpatch.porcelain.workspace'\n"
        "assert gitpatch.GitpatchError is GitpatchError and callable(patch_tool)\n"
        "assert set(gitpatch.__all__) <= set(dir(gitpatch))\n"
        "for name in gitpatch.__all__:\n"
        "    getattr(gitpatch, name)\n"
        "try:\n"
        "    gitpatch.nothing_like_this\n"
        "except AttributeError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('no AttributeError')"
    )
    assert "gitpatch.porcelain.workspace" in loaded


def test_a_first_read_loads_no_fuzzy_matcher(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "alpha\nbeta\n"})
    loaded = _loaded(
        "from gitpatch import read_tool\n"
        "from gitpatch.porcelain.opening import open_workspace\n"
        f"ws = open_workspace({str(repo)!r}, 'review')\n"
        "result = read_tool(ws, ws)(path='a.txt')\n"
        "assert result.ok and 'beta' in str(result), result",
        cwd=repo,
    )
    assert "gitpatch.porcelain.workspace" in loaded and not _under(loaded, "rapidfuzz")
