"""``gitpatch session end NAME`` run from a person's own linked worktree that sits where
session NAME's would go (``gitpatch.worktrees``, a worktree named like the session): the end
removes nothing of it (``worktrees.made_for``), so it is not refused as if the caller were
inside the session's worktree, with ``-C`` or without; and the person's worktree is left."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gitpatch import Workspace
from gitpatch.doors.cli import main
from tests.gitkit import git, make_repo

FILES = {"a.py": "A = 1\n"}
ADD = "*** Begin Patch\n*** Add File: bot.txt\n+bot\n*** End Patch\n"


@pytest.mark.parametrize("dash_c", [True, False])
def test_ending_a_session_from_a_persons_worktree_at_its_place_ends_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dash_c: bool
) -> None:
    repo = make_repo(tmp_path / "repo", FILES, branch="main")
    git(repo, "config", "gitpatch.worktrees", "../wts")
    git(repo, "worktree", "add", "-q", "../wts/feature", "-b", "feature")
    mine = tmp_path / "wts" / "feature"
    (mine / "mine.txt").write_text("mine\n")
    Workspace.open(repo, "auto", session="feature").apply(ADD)  # lazy: no worktree of its own
    Workspace.open(repo, "review").approve("feature", "Reviewer")
    before = git(mine, "status", "--porcelain")
    monkeypatch.chdir(mine)
    args = ["-C", str(repo)] if dash_c else []
    out = CliRunner().invoke(main, [*args, "session", "end", "feature"])
    assert out.exit_code == 0, out.output
    assert out.stdout.strip() == "Ended session feature: deleted gitpatch/session/feature."
    assert (mine / "mine.txt").read_text() == "mine\n"
    assert git(mine, "status", "--porcelain") == before == "?? mine.txt\n"
    assert git(mine, "symbolic-ref", "HEAD").strip() == "refs/heads/feature"
