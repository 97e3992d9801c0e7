"""Ending a session from a Workspace that has no working tree of its own: a lazy session (auto
mode on a protected branch, its worktree not made yet). It ends the other session's worktree
with its branch, as the person's checkout does; git keeps no record of it (``git worktree
list`` showed the ended session at 0000000). Checked with the real ``git`` binary on a plain
checkout, a linked worktree and a sparse checkout of the person's."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gitpatch import Workspace
from gitpatch.doors.cli import main
from tests.gitkit import git, make_repo, repo_state

FILES = {"a.py": "A = 1\n", "docs/b.md": "b\n", "lib/c.py": "C = 1\n"}
ADD = "*** Begin Patch\n*** Add File: {name}.txt\n+{name}\n*** End Patch\n"


def _checkout(tmp_path: Path, kind: str) -> Path:
    """The person's checkout, on a protected branch: the repository's main worktree (on
    ``main``), a linked worktree of it (on ``master``), or a sparse checkout."""
    repo = make_repo(tmp_path / "repo", FILES, branch="main")
    if kind == "linked":
        git(repo, "worktree", "add", "-q", "-b", "master", str(tmp_path / "linked"))
        return tmp_path / "linked"
    if kind == "sparse":
        git(repo, "sparse-checkout", "set", "--cone", "lib")
    return repo


def _session(where: Path, name: str, *, made: bool) -> Workspace:
    ws = Workspace.open(where, "auto", session=name)
    ws.apply(ADD.format(name=name))
    if made:
        ws.plumbing.session_worktree()
    return ws


def _listed(where: Path) -> str:
    return git(where, "worktree", "list", "--porcelain")


@pytest.mark.parametrize("kind", ["plain", "linked", "sparse"])
def test_a_lazy_session_ends_another_sessions_worktree_with_its_branch(
    tmp_path: Path, kind: str
) -> None:
    where = _checkout(tmp_path, kind)
    bot = _session(where, "bot", made=True).plumbing.session_worktree().path
    lazy = _session(where, "lazy", made=False)
    assert lazy.plumbing.worktree is None
    Workspace.open(where, "review").approve("bot", "Reviewer")
    assert [s.worktree for s in lazy.sessions() if s.name == "bot"] == [str(bot)]
    said = lazy.end_session("bot")
    assert said == f"Ended session bot: removed its worktree {bot}, deleted gitpatch/session/bot."
    assert not bot.exists()
    assert str(bot) not in _listed(where) and "0000000" not in git(where, "worktree", "list")
    assert git(where, "worktree", "prune", "--dry-run", "--verbose") == ""  # nothing left
    assert str(bot) not in _listed(where)
    assert git(where, "branch", "--list", "gitpatch/session/bot") == ""
    assert (where / "bot.txt").read_text() == "bot\n" or kind == "sparse"
    assert [s.name for s in lazy.sessions()] == ["lazy"]


def test_a_lazy_session_ends_a_review_sessions_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES, branch="main")
    review = Workspace.open(repo, "review", session="rev")
    bench = review.plumbing.session_worktree().path
    lazy = _session(repo, "lazy", made=False)
    assert [s.worktree for s in lazy.sessions() if s.name == "rev"] == [str(bench)]
    assert lazy.end_session("rev") == f"Ended session rev: removed its worktree {bench}."
    assert not bench.exists() and str(bench) not in _listed(repo)


def test_ending_a_session_that_never_made_its_worktree_leaves_no_record(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES, branch="main")
    _session(repo, "never", made=False)
    Workspace.open(repo, "review").approve("never", "Reviewer")
    out = CliRunner().invoke(main, ["-C", str(repo), "session", "end", "never"])
    assert out.exit_code == 0, out.output
    assert out.stdout.strip() == "Ended session never: deleted gitpatch/session/never."
    assert _listed(repo).count("worktree ") == 1 and "session/never" not in _listed(repo)


def test_ending_a_session_from_inside_its_own_worktree_refuses_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", FILES, branch="main")
    bot = _session(repo, "bot", made=True).plumbing.session_worktree().path
    Workspace.open(repo, "review").approve("bot", "Reviewer")
    before, inside, listed = repo_state(repo), repo_state(bot), _listed(repo)
    out = CliRunner().invoke(main, ["-C", str(bot), "session", "end", "bot"])
    assert out.exit_code == 1
    assert out.stderr.startswith(
        f"invalid_arguments: {bot} is the worktree of session 'bot', which ending the session "
        "removes\nhint: Run it from your own checkout"
    )
    assert (repo_state(repo), repo_state(bot), _listed(repo)) == (before, inside, listed)
    # -C naming the person's checkout, from a folder inside the worktree: the folder goes too
    (bot / "sub").mkdir()
    for cwd in (bot, bot / "sub"):
        monkeypatch.chdir(cwd)
        out = CliRunner().invoke(main, ["-C", str(repo), "session", "end", "bot"])
        assert out.exit_code == 1
        assert out.stderr.startswith(
            f"invalid_arguments: this command runs in {cwd}, inside the worktree of session "
            "'bot', which ending the session removes\nhint: cd to your own checkout first"
        ), out.stderr
        assert (repo_state(repo), _listed(repo)) == (before, listed) and bot.is_dir()
    (bot / "sub").rmdir()
    monkeypatch.chdir(tmp_path)
    # from the person's checkout it ends, and git keeps no record of it
    done = CliRunner().invoke(main, ["-C", str(repo), "session", "end", "bot"])
    assert done.exit_code == 0, done.output
    assert not bot.exists() and str(bot) not in _listed(repo)
