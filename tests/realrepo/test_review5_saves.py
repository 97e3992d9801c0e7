"""review5 findings on the saves a land sets aside (branch roughs), each on a real repository
with a real set-aside save, staged as ``test_saves_told`` stages one (a late write to the file
the land replaced, and a save at its path that cannot merge with it). Marked
``xfail(strict=True)``: each asserts what should happen and fails today.

3. A save set aside in a session's worktree is kept in that worktree's own git directory
   (``.git/worktrees/NAME/gitpatch/saves``); ``gitpatch session end`` removes the worktree and
   prunes git's record of it, and the save with it: ``gitpatch saves`` then says "No saves set
   aside", nothing said it was deleted. The person's bytes are gone.
4. The recovery ``gitpatch session end`` runs in the session's worktree (``worktrees.recovered``,
   a killed land there) sets a save aside without telling it: its WorkingTree is not the
   command's, so the CLI's notice (``Env.set_aside``) never sees it.
5. ``gitpatch saves`` names a save by its key when the label looks like one: a path whose first
   folder is 16 hex digits (``0123456789abcdef/a.txt``) is listed as "a file whose path is not
   known", with no diff line, though its name holds the whole path.
6. A folder in ``.git/gitpatch/saves/`` named like a save (``junk.123``) is listed as a save,
   with a diff line and in ``gitpatch log``'s count.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gitpatch import Workspace
from gitpatch.doors.cli import main
from tests.gitkit import git, make_repo
from tests.safety.proofkit import killed_at

BODY = "".join(f"line {i}\n" for i in range(1, 6))
LATE = BODY.replace("line 2\n", "line 2 by the old descriptor\n")
AGAIN = BODY.replace("line 2\n", "LINE 2 by agent\nx\n").replace("3", "Z")


def _patch(path: str) -> str:
    body = "@@\n-line 2\n+LINE 2 by agent\n"
    return f"*** Begin Patch\n*** Update File: {path}\n{body}*** End Patch\n"


def _cli(*args: str) -> tuple[int, str, str]:
    out = CliRunner().invoke(main, list(args))
    return out.exit_code, out.stdout, out.stderr


def _gitdir(where: Path) -> Path:
    return Path(git(where, "rev-parse", "--absolute-git-dir").strip())


def _late_saves(where: Path, path: str) -> None:
    """At ``index.written`` (or after a land killed there): a write to the replaced file kept
    until the land is over, and a save at its path that cannot merge with it."""
    kept = list((_gitdir(where) / "gitpatch" / "tmp").glob(".kept.*"))
    assert len(kept) == 1
    kept[0].write_text(LATE)
    (where / path).write_text(AGAIN)


def _set_aside(monkeypatch: pytest.MonkeyPatch, ws: Workspace, where: Path, path: str) -> None:
    """``ws``'s edit of ``path`` lands in ``where`` and sets a person's save aside."""
    os.utime(where / path, (1, 1))  # settled: the land compares identities

    def at(point: str) -> None:
        if point == "index.written":
            _late_saves(where, path)

    monkeypatch.setattr("gitpatch.checkout.worktree.crashpoint", at)
    ws.apply(_patch(path))
    monkeypatch.undo()


def _auto_session(repo: Path) -> tuple[Workspace, Path]:
    ws = Workspace.open(repo, "auto", session="bot")
    return ws, ws.plumbing.session_worktree().path


def _listed(repo: Path) -> list[dict[str, object]]:
    code, out, err = _cli("-C", str(repo), "--json", "saves")
    assert code == 0, err
    listed: list[dict[str, object]] = json.loads(out)
    return listed


@pytest.mark.xfail(strict=True, reason="review5 #3: session end deletes the saves set aside there")
def test_ending_a_session_keeps_the_saves_set_aside_in_its_worktree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": BODY}, branch="main")
    ws, bot = _auto_session(repo)
    _set_aside(monkeypatch, ws, bot, "a.txt")
    [saved] = _listed(repo)
    kept = Path(str(saved["file"]))
    assert kept.read_text() == LATE and str(_gitdir(bot)) in str(kept)
    git(bot, "checkout", "--", "a.txt")  # the person keeps their save's copy in saves/ only
    Workspace.open(repo, "review").approve("bot", "Reviewer")
    code, out, err = _cli("-C", str(repo), "session", "end", "bot")
    still = _listed(repo)
    # either the end refuses, naming the save, or the save outlives the worktree
    assert code == 1 or [s["path"] for s in still] == ["a.txt"], (out, err, still)
    assert code == 1 or Path(str(still[0]["file"])).read_text() == LATE


@pytest.mark.xfail(strict=True, reason="review5 #4: session end's recovery sets aside untold")
def test_the_session_end_whose_recovery_sets_a_save_aside_says_so(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": BODY}, branch="main")
    _ws, bot = _auto_session(repo)
    os.utime(bot / "a.txt", (1, 1))
    agent = (
        "from gitpatch import Workspace; "
        f"Workspace.open({str(repo)!r}, 'auto', session='bot').apply({_patch('a.txt')!r})"
    )
    assert killed_at([sys.executable, "-c", agent], dict(os.environ), "index.written") == -9
    _late_saves(bot, "a.txt")
    code, _out, err = _cli("-C", str(repo), "session", "end", "bot")
    assert code == 1 and err.startswith("dirty_worktree: ")  # the person's save is there
    [saved] = _listed(repo)  # the end's recovery set the late write aside
    assert "notice: A person's save of a.txt" in err and str(saved["file"]) in err, err


@pytest.mark.xfail(strict=True, reason="review5 #5: a hex-named folder's save loses its path")
def test_a_save_under_a_folder_named_with_16_hex_digits_is_listed_with_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = "0123456789abcdef/a.txt"
    repo = make_repo(tmp_path / "repo", {path: BODY})
    _set_aside(monkeypatch, Workspace.open(repo, "auto"), repo, path)
    [saved] = _listed(repo)
    assert Path(str(saved["file"])).read_text() == LATE
    assert saved["path"] == path


@pytest.mark.xfail(strict=True, reason="review5 #6: a folder in saves/ is listed as a save")
def test_a_folder_in_the_saves_folder_is_not_listed_as_a_save(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": BODY})
    (repo / ".git" / "gitpatch" / "saves" / "junk.123").mkdir(parents=True)
    assert _listed(repo) == []
    assert "Saves set aside" not in _cli("-C", str(repo), "log")[1]
