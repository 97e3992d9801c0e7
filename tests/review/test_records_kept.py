"""git's record of a session worktree whose folder is missing is kept when the worktree is
away, not removed: its folder a symlink to a drive that is away, or the folder set aside by
a ``session end`` that was killed (the next sweep decides: a change a command wrote there
meanwhile puts it back). Opening the session must not drop it (``forget``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.review import worktrees
from gitpatch.store import Store
from tests.gitkit import git

FILES = {"pkg/a.py": "A = 1\n"}

ADD_ONE = "*** Begin Patch\n*** Add File: one.txt\n+one\n*** End Patch\n"


def _made(repo: Path) -> Path:
    git(repo, "config", "gitpatch.worktrees", "../wts")
    ws = Workspace.open(repo, "auto", session="bot")
    ws.apply(ADD_ONE)
    return ws.plumbing.session_worktree().path


def test_a_worktree_whose_folder_links_to_a_drive_away_keeps_its_record(repo: Path) -> None:
    bot = _made(repo)
    drive = repo.parent / "drive"
    drive.mkdir()
    shutil.move(bot, drive / "bot")  # the person moved it to a drive, a link left in its place
    os.symlink(drive / "bot", bot)
    assert git(bot, "status", "--porcelain") == ""
    drive.rename(repo.parent / "away")  # the drive is not mounted now: the link leads nowhere
    Workspace.open(repo, "auto", session="bot")
    (repo.parent / "away").rename(drive)  # it is back
    assert git(bot, "status", "--porcelain") == ""  # git still knows it
    assert (bot / "one.txt").read_text() == "one\n"


def test_a_worktree_a_killed_end_set_aside_keeps_its_record_for_the_sweep(repo: Path) -> None:
    bot = _made(repo)
    aside = bot.with_name(".ending-bot-1765000000000000000")
    bot.rename(aside)  # what session end does first; killed there
    (aside / "late.txt").write_text("a command still running wrote this\n")
    Workspace.open(repo, "auto", session="bot")  # an agent's next call, before the next end
    Workspace.open(repo, "review").sessions()  # sweeps what the killed end left
    assert (bot / "late.txt").read_text() == "a command still running wrote this\n"
    assert "late.txt" in git(bot, "status", "--porcelain")


def test_a_worktree_whose_git_add_was_killed_before_its_head_is_made_again(repo: Path) -> None:
    """What ``git worktree add`` leaves when killed before it wrote the record's HEAD (its
    ``locked``, ``gitdir`` and ``commondir`` written, the folder made), under gitpatch's marker
    of a worktree being made: the next need of it drops that record and makes it whole."""
    git(repo, "config", "gitpatch.worktrees", "../wts")
    Workspace.open(repo, "auto", session="bot").apply(ADD_ONE)  # lazy: no worktree yet
    bot = repo.parent / "wts" / "bot"
    record = repo / ".git" / "worktrees" / "bot"
    record.mkdir(parents=True)
    (record / "locked").write_text("initializing")
    (record / "gitdir").write_text(f"{bot}/.git\n")
    (record / "commondir").write_text("../..\n")
    bot.mkdir(parents=True)
    (bot / ".git").write_text(f"gitdir: {record}\n")
    (repo / ".git" / "gitpatch" / "filling").mkdir(parents=True, exist_ok=True)
    (repo / ".git" / "gitpatch" / "filling" / "bot").write_bytes(b"")
    again = Workspace.open(repo, "auto", session="bot")
    assert again.plumbing.session_worktree().path == bot
    assert (bot / "one.txt").read_text() == "one\n"
    assert git(bot, "status", "--porcelain") == ""


def test_a_worktree_made_again_while_an_open_drops_the_old_record_keeps_its_own(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An open finds the session's worktree removed by hand and drops git's record of it; the
    worktree is made again meanwhile (another process's command needs it: ``ensure``, under
    another lock). The record git has just made for the new one is not dropped."""
    bot = _made(repo)
    shutil.rmtree(bot)
    store = Workspace.open(repo, "review").plumbing.store
    real = worktrees._records_of
    calls = []

    def meanwhile(store_: Store, where: Path) -> list[Path]:
        calls.append(where)
        if len(calls) == 2:  # the open's forget, past its first look at the folder
            worktrees.ensure(store, "bot", "refs/heads/gitpatch/session/bot")
        return real(store_, where)

    monkeypatch.setattr(worktrees, "_records_of", meanwhile)
    Workspace.open(repo, "auto", session="bot")
    assert len(calls) >= 2
    assert git(bot, "status", "--porcelain") == ""  # git knows the new worktree
    assert (bot / "one.txt").read_text() == "one\n"
