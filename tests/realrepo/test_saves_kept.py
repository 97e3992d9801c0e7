"""The saves a land sets aside are kept whatever happens to the worktree (review5's findings),
each on a real repository with a real set-aside save, staged as ``test_saves_told`` stages one
(a late write to the file the land replaced, and a save at its path that cannot merge with it):

- every save is kept in the common ``.git/gitpatch/saves/`` (its worktree named by a key of its
  folder), so ``gitpatch session end`` removing a session's worktree takes none; one an older
  gitpatch kept in the worktree's own git directory is moved there first;
- the recovery ``session end`` runs in the session's worktree tells the save it sets aside;
- a save's name says unambiguously whether it holds its path or its key (a folder named with
  16 hex digits keeps its path), and only regular files named as a save are listed;
- ``gitpatch log --json`` counts them as the text does.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from gitpatch import Workspace
from gitpatch.doors.cli import main
from gitpatch.errors import DirtyWorktree
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


def test_ending_a_session_keeps_the_saves_set_aside_in_its_worktree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": BODY}, branch="main")
    ws, bot = _auto_session(repo)
    _set_aside(monkeypatch, ws, bot, "a.txt")
    [saved] = _listed(repo)
    kept = Path(str(saved["file"]))
    assert kept.read_text() == LATE and kept.parent == repo / ".git" / "gitpatch" / "saves"
    assert saved["worktree"] == str(bot)
    git(bot, "checkout", "--", "a.txt")  # the person keeps their save's copy in saves/ only
    Workspace.open(repo, "review").approve("bot", "Reviewer")
    code, out, err = _cli("-C", str(repo), "session", "end", "bot")
    still = _listed(repo)
    # either the end refuses, naming the save, or the save outlives the worktree
    assert code == 1 or [s["path"] for s in still] == ["a.txt"], (out, err, still)
    assert code == 1 or Path(str(still[0]["file"])).read_text() == LATE


def _killed_land_with_a_late_save(tmp_path: Path) -> Path:
    """A repository whose auto session ``bot`` had its land killed at ``index.written`` in its
    worktree, and a person's save there that the land's recovery will set aside."""
    repo = make_repo(tmp_path / "repo", {"a.txt": BODY}, branch="main")
    _ws, bot = _auto_session(repo)
    os.utime(bot / "a.txt", (1, 1))
    agent = (
        "from gitpatch import Workspace; "
        f"Workspace.open({str(repo)!r}, 'auto', session='bot').apply({_patch('a.txt')!r})"
    )
    assert killed_at([sys.executable, "-c", agent], dict(os.environ), "index.written") == -9
    _late_saves(bot, "a.txt")
    return repo


def test_the_session_end_whose_recovery_sets_a_save_aside_says_so(tmp_path: Path) -> None:
    repo = _killed_land_with_a_late_save(tmp_path)
    code, _out, err = _cli("-C", str(repo), "session", "end", "bot")
    assert code == 1 and err.startswith("dirty_worktree: ")  # the person's save is there
    [saved] = _listed(repo)  # the end's recovery set the late write aside
    assert "notice: A person's save of a.txt" in err and str(saved["file"]) in err, err


def test_a_python_session_end_from_a_workspace_with_no_working_tree_tells_the_save(
    tmp_path: Path,
) -> None:
    repo = _killed_land_with_a_late_save(tmp_path)
    ender = Workspace.open(repo, "auto", session="other")  # its own worktree not made yet
    assert ender.plumbing.worktree is None
    with pytest.raises(DirtyWorktree):  # the person's save is there
        ender.end_session("bot")
    [saved] = _listed(repo)  # the end's recovery set the late write aside, and says so
    told = ender.plumbing.set_aside()
    assert len(told) == 1 and "A person's save of a.txt" in told[0], told
    assert str(saved["file"]) in told[0]
    assert ender.plumbing.set_aside() == []  # told once


def test_the_saves_told_wait_for_a_verb_running_in_another_thread(tmp_path: Path) -> None:
    """``plumbing.set_aside`` takes the lists a verb of another thread adds to only once that
    verb is done: each save is told once, none lost."""
    repo = make_repo(tmp_path / "repo", {"a.txt": BODY}, branch="main")
    ws = Workspace.open(repo, "auto", session="other")
    inside, leave = threading.Event(), threading.Event()
    told: list[list[str]] = []
    kept = repo / ".git" / "gitpatch" / "saves" / "a.txt.1.w0000000000000000"

    def verb() -> None:  # a verb holding the Workspace, as end_session does
        with ws.plumbing.call():
            inside.set()
            leave.wait(60)
            ws.plumbing.aside_elsewhere.append(("a.txt", kept))

    holder = threading.Thread(target=verb)
    holder.start()
    inside.wait(60)
    asker = threading.Thread(target=lambda: told.append(ws.plumbing.set_aside()))
    asker.start()
    asker.join(0.2)
    try:
        assert asker.is_alive(), "set_aside took the lists while a verb of another thread ran"
    finally:
        leave.set()
        holder.join(60)
    asker.join(60)
    assert len(told) == 1 and len(told[0]) == 1 and str(kept) in told[0][0]
    assert ws.plumbing.set_aside() == []  # told once


def test_a_save_under_a_folder_named_with_16_hex_digits_is_listed_with_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = "0123456789abcdef/a.txt"
    repo = make_repo(tmp_path / "repo", {path: BODY})
    _set_aside(monkeypatch, Workspace.open(repo, "auto"), repo, path)
    [saved] = _listed(repo)
    assert Path(str(saved["file"])).read_text() == LATE
    assert saved["path"] == path


def test_a_save_named_for_its_key_keeps_its_path_after_head_drops_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = "docs/100%/" + "long-" * 30 + "name.txt"  # a % and over 120 bytes: named for its key
    repo = make_repo(tmp_path / "repo", {path: BODY, "b.txt": BODY})
    _set_aside(monkeypatch, Workspace.open(repo, "auto"), repo, path)
    [saved] = _listed(repo)
    assert Path(str(saved["file"])).name.startswith("%")
    assert saved["path"] == path
    git(repo, "rm", "-q", "-f", "--", path)  # the path is in no tree the listing reads
    git(repo, "commit", "-q", "-m", "drop it")
    [saved] = _listed(repo)
    assert saved["path"] == path and Path(str(saved["file"])).read_text() == LATE
    assert path in _cli("-C", str(repo), "saves")[1]


def test_a_save_is_kept_when_its_records_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = "docs/100%.txt"  # a % in it: named for its key, its path recorded beside it
    repo = make_repo(tmp_path / "repo", {path: BODY})
    records = repo / ".git" / "gitpatch"
    records.mkdir(parents=True)
    (records / "saved-from").write_text("a file where the records' folder goes")
    (records / "saved-paths").write_text("a file where the records' folder goes")
    _set_aside(monkeypatch, Workspace.open(repo, "auto"), repo, path)
    [saved] = _listed(repo)  # the save is kept; what names it could not be written
    assert Path(str(saved["file"])).read_text() == LATE
    assert (saved["path"], saved["worktree"]) == (path, "")  # HEAD still has the path


def test_a_folder_in_the_saves_folder_is_not_listed_as_a_save(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": BODY})
    (repo / ".git" / "gitpatch" / "saves" / "junk.123").mkdir(parents=True)
    assert _listed(repo) == []
    assert "Saves set aside" not in _cli("-C", str(repo), "log")[1]


def test_a_save_an_older_gitpatch_kept_in_a_session_worktree_outlives_its_end(
    tmp_path: Path,
) -> None:
    """An older gitpatch kept a save in the linked worktree's own git directory: ending the
    session moves it to the common saves folder before git's record of the worktree goes."""
    repo = make_repo(tmp_path / "repo", {"a.txt": BODY}, branch="main")
    ws, bot = _auto_session(repo)
    ws.apply(_patch("a.txt"))
    older = _gitdir(bot) / "gitpatch" / "saves"
    older.mkdir(parents=True)
    (older / "lib%b.txt.1700000000000000000").write_text(LATE)
    (older / "c0ffee.txt.gitpatch-tmp").write_text("half")  # not a save: goes with the record
    [before] = _listed(repo)
    assert (before["path"], before["worktree"]) == ("lib/b.txt", str(bot))
    Workspace.open(repo, "review").approve("bot", "Reviewer")
    code, _out, err = _cli("-C", str(repo), "session", "end", "bot")
    assert code == 0, err
    assert not bot.exists() and not list((repo / ".git" / "worktrees").glob("*/gitdir"))
    [after] = _listed(repo)
    assert (after["path"], after["worktree"], after["time_ns"]) == (
        "lib/b.txt",
        str(bot),
        1700000000000000000,
    )
    assert Path(str(after["file"])).read_text() == LATE
    assert Path(str(after["file"])).parent == repo / ".git" / "gitpatch" / "saves"
    code, out, _err = _cli("-C", str(repo), "saves")
    assert "diff " not in out  # the worktree is gone: no file to compare with
    assert f"lib/b.txt (in {bot})" in out


def test_only_files_named_as_saves_are_listed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": BODY})
    folder = repo / ".git" / "gitpatch" / "saves"
    folder.mkdir(parents=True)
    wt = "w" + "0" * 16
    (folder / f"odd.123.{wt}").mkdir()  # a folder named as a save
    (folder / "notes").write_text("x")  # no time in its name
    (folder / f"%nokey.123.{wt}").write_text("x")  # marked for a key that is not one
    (folder / f".a.txt.123.{wt}.1.2.gitpatch-tmp").write_text("x")  # one being written
    os.symlink("/etc/hostname", folder / f"link.123.{wt}")
    with open(os.path.join(bytes(folder), b"bad\xff.123." + wt.encode()), "w") as fh:
        fh.write("x")  # not UTF-8
    assert _listed(repo) == []
    assert "Saves set aside" not in _cli("-C", str(repo), "log")[1]
    (folder / f"%{'a' * 16}%a.txt.5.{wt}").write_text(LATE)  # a key-named one: listed
    (folder / f"lib%b.txt.7.{wt}").write_text(LATE)
    listed = _listed(repo)
    assert [(s["path"], s["time_ns"], s["worktree"]) for s in listed] == [
        ("", 5, ""),  # its key is no path HEAD has, its worktree not recorded
        ("lib/b.txt", 7, ""),
    ]


def test_log_json_counts_the_saves_set_aside_and_the_saves_hint_holds_without_a_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": BODY})
    code, out, err = _cli("-C", str(repo), "--json", "log")
    assert code == 0 and json.loads(out) == {"log": [], "saves_set_aside": 0}, err
    _set_aside(monkeypatch, Workspace.open(repo, "auto"), repo, "a.txt")
    logged = json.loads(_cli("-C", str(repo), "--json", "log")[1])
    assert logged["saves_set_aside"] == 1 and len(logged["log"]) == 1
    said = _cli("-C", str(repo), "saves")[1]
    assert f"diff {_listed(repo)[0]['file']} {repo / 'a.txt'}" in said
    assert "an agent's change in it too" in said and "is then undone" not in said


def test_a_save_in_a_checkout_with_a_separate_git_dir_names_its_worktree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "work", "--separate-git-dir", str(tmp_path / "store.git"))
    git(repo, "config", "user.name", "Test Person")
    git(repo, "config", "user.email", "person@example.com")
    (repo / "a.txt").write_text(BODY)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    _set_aside(monkeypatch, Workspace.open(repo, "auto"), repo, "a.txt")
    [saved] = _listed(repo)
    assert (saved["path"], saved["worktree"]) == ("a.txt", str(repo))
    assert Path(str(saved["file"])).parent == tmp_path / "store.git" / "gitpatch" / "saves"
    assert f"diff {saved['file']} {repo / 'a.txt'}" in _cli("-C", str(repo), "saves")[1]
