"""Running the installed ``gitpatch`` console script and the real ``git`` in test repos."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.doors.mcp.mcpkit import console_script
from tests.gitkit import git_env

PATCH_A = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch\n"


def gp(repo: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """``gitpatch -C repo *args`` through the console script; never raises."""
    return subprocess.run(
        [console_script(), "-C", str(repo), *args],
        input=input,
        capture_output=True,
        text=True,
        env={**git_env(repo), "NO_COLOR": "1"},
        check=False,
    )


def gp_ok(repo: Path, *args: str, input: str | None = None) -> str:
    """``gp`` that must exit 0; returns stdout."""
    out = gp(repo, *args, input=input)
    assert out.returncode == 0, f"gitpatch {' '.join(args)}: {out.returncode}\n{out.stderr}"
    return out.stdout


def gp_json(repo: Path, *args: str, input: str | None = None) -> Any:
    """``gitpatch --json ...`` parsed."""
    return json.loads(gp_ok(repo, "--json", *args, input=input))


def propose(repo: Path, patch: str = PATCH_A) -> str:
    """A review-mode apply_patch proposal; returns its id."""
    return str(gp_json(repo, "apply-patch", "--review", "-", input=patch)["proposal_id"])


def git_run(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real git in ``repo``; never raises."""
    return subprocess.run(
        ["git", *args], cwd=repo, env=git_env(repo), capture_output=True, text=True, check=False
    )
