"""The installed entry points: every console script, ``python -m gitpatch``, colour on a TTY."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import pytest

from tests.doors.cli.clikit import gp_json
from tests.doors.mcp.mcpkit import console_script
from tests.gitkit import git_env, make_repo

#: every console script in a process of its own: `make test-fast` leaves these out.
pytestmark = pytest.mark.slow

ANSI = "\x1b["


def test_every_console_script_entry_point_loads_and_runs() -> None:
    scripts = [ep for ep in distribution("gitpatch").entry_points if ep.group == "console_scripts"]
    assert [ep.name for ep in scripts] == ["gitpatch"]
    for ep in scripts:
        assert callable(ep.load())
        out = subprocess.run(
            [console_script(ep.name), "--help"], capture_output=True, text=True, check=False
        )
        assert out.returncode == 0 and "Usage: gitpatch" in out.stdout


def test_python_dash_m_gitpatch_runs_the_cli() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gitpatch", "--version"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0 and out.stdout.startswith("gitpatch, version ")


def _on_a_tty(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run the console script with stdout on a pseudo-terminal; return what it printed."""
    leader, follower = pty.openpty()
    environ = {k: v for k, v in git_env(repo).items() if k != "NO_COLOR"}
    proc = subprocess.run(
        [console_script(), "-C", str(repo), *args],
        stdout=follower,
        stderr=subprocess.PIPE,
        env={**environ, **(env or {})},
        check=False,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the terminal is drained and closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.returncode == 0, proc.stderr
    return b"".join(chunks).decode()


@pytest.fixture
def proposal(tmp_path: Path) -> tuple[Path, str]:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch\n"
    pid = gp_json(repo, "apply-patch", "--review", "-", input=patch)["proposal_id"]
    return repo, str(pid)


def test_colour_only_on_a_terminal_never_with_json_or_no_color(
    proposal: tuple[Path, str],
) -> None:
    repo, pid = proposal
    assert ANSI in _on_a_tty(repo, "show", pid)
    assert ANSI not in _on_a_tty(repo, "show", pid, env={"NO_COLOR": "1"})
    assert ANSI not in _on_a_tty(repo, "--json", "show", pid)
    piped = subprocess.run(
        [console_script(), "-C", str(repo), "show", pid],
        capture_output=True,
        text=True,
        env={k: v for k, v in git_env(repo).items() if k != "NO_COLOR"},
        check=False,
    )
    assert piped.returncode == 0 and ANSI not in piped.stdout and "+b" in piped.stdout
