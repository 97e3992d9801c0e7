"""``gitpatch session end`` guards what is not the session's (review5's findings, each a real
repository and the real CLI):

- a session's worktree, whatever its mode, is not removed by an end run inside it (a
  review-mode session is opened on the person's checkout, so the CLI compares the directory
  it was given);
- ``gitpatch run -- CMD`` whose session is ended while CMD runs refuses with
  ``proposal_not_found`` and never makes the ended session again;
- an end, refused or not, drops only git's record of the session's own worktree, never that
  of the person's own linked worktree whose folder is away for now (a drive not mounted, a
  folder moved by hand): no global ``git worktree prune``.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from click.testing import CliRunner

from gitpatch import Workspace
from gitpatch.doors.cli import main
from tests.doors.mcp.mcpkit import console_script
from tests.gitkit import git, make_repo, repo_state

FILES = {"a.py": "A = 1\n", "lib/c.py": "C = 1\n"}


def _cli(*args: str) -> tuple[int, str, str]:
    out = CliRunner().invoke(main, list(args))
    return out.exit_code, out.stdout, out.stderr


def _started(repo: Path, name: str) -> Path:
    code, out, err = _cli("-C", str(repo), "session", "start", name)
    assert code == 0, err
    where = Path(out.splitlines()[0].removeprefix("worktree: "))
    assert (where / ".git").is_file()
    return where


def test_ending_a_review_session_from_inside_its_worktree_refuses_and_changes_nothing(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", FILES, branch="main")
    bot = _started(repo, "bot")
    listed = git(repo, "worktree", "list", "--porcelain")
    before, inside = repo_state(repo), repo_state(bot)
    code, _out, err = _cli("-C", str(bot), "session", "end", "bot")
    assert bot.exists(), f"the folder the call ran in was removed: {err or _out}"
    assert code == 1 and err.startswith("invalid_arguments: ")
    assert (repo_state(repo), repo_state(bot)) == (before, inside)
    assert git(repo, "worktree", "list", "--porcelain") == listed


def _auto_session(repo: Path, name: str) -> Path:
    """An auto-mode session on the protected ``main`` with its worktree made and its one
    commit approved (nothing of it open)."""
    ws = Workspace.open(repo, "auto", session=name)
    ws.apply(f"*** Begin Patch\n*** Add File: {name}.txt\n+{name}\n*** End Patch\n")
    where = ws.plumbing.session_worktree().path
    Workspace.open(repo, "review").approve(name, "Reviewer")
    return where


def _run_ending(repo: Path) -> tuple[int, str, str]:
    """``gitpatch run --session bot -- CMD`` where CMD ends session bot from the person's
    checkout while the run waits for it: the state a person ending it from another terminal
    makes, without any timing."""
    ender = f"cd {shlex.quote(str(repo))} && exec {shlex.quote(console_script())} session end bot"
    return _cli("-C", str(repo), "run", "--session", "bot", "--", "sh", "-c", ender)


def test_a_run_whose_auto_session_ends_meanwhile_refuses_with_a_stable_code(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", FILES, branch="main")
    bot = _auto_session(repo, "bot")
    code, _out, err = _run_ending(repo)
    assert not bot.exists()  # the session did end
    assert "internal_error" not in err, err
    assert code == 1 and err.split(":", 1)[0] in ("proposal_not_found", "invalid_arguments")


def test_a_run_whose_review_session_ends_meanwhile_does_not_make_it_again(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", FILES, branch="main")
    bot = _started(repo, "bot")
    _run_ending(repo)  # the command's own output goes to the real stdout ("Ended session bot")
    assert not bot.exists(), "the run's checkpoint made the ended session's worktree again"
    assert str(bot) not in git(repo, "worktree", "list")


def test_a_refused_end_leaves_the_persons_own_worktree_that_is_away_for_now(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", FILES, branch="main")
    mine = tmp_path / "mine"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(mine))
    (mine / "wip.py").write_text("W = 1\n")
    git(mine, "add", "wip.py")  # staged work, kept in that worktree's own index
    mine.rename(tmp_path / "away")  # its drive is not mounted right now
    code, _out, err = _cli("-C", str(repo), "session", "end", "nosuch")
    assert code == 1 and err.startswith("proposal_not_found: ")
    (tmp_path / "away").rename(mine)  # back
    assert "wip.py" in git(mine, "diff", "--cached", "--name-only")


def test_an_end_that_removes_a_session_leaves_the_persons_own_worktree_that_is_away(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", FILES, branch="main")
    bot = _auto_session(repo, "bot")
    mine = tmp_path / "mine"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(mine))
    (mine / "wip.py").write_text("W = 1\n")
    git(mine, "add", "wip.py")
    mine.rename(tmp_path / "away")
    code, _out, err = _cli("-C", str(repo), "session", "end", "bot")
    assert code == 0, err
    assert not bot.exists() and str(bot) not in git(repo, "worktree", "list")
    (tmp_path / "away").rename(mine)
    assert "wip.py" in git(mine, "diff", "--cached", "--name-only")
