"""Kept files a killed land left without a journal (``saves.Kept``, ``saves.recover``).

A land names the file a rename will replace before the swap and removes it once the land is
over; the journal names its path. A kept file found with no journal (a journal cut short by
the kill, removed by hand) has no known path: it is dropped only when it holds one of the two
blobs its name gives (what the land checked, what it wrote), else set aside in
``.git/gitpatch/saves/``, never deleted.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from gitpatch.checkout import saves
from gitpatch.checkout.worktree import WorkingTree
from gitpatch.store import Store
from tests.gitkit import git, make_repo, status_porcelain


def _kept_file(repo: Path, data: bytes, expect: bytes, wrote: bytes) -> Path:
    """A kept file as a killed land leaves it in ``.git/gitpatch/tmp`` (no journal)."""
    folder = repo / ".git/gitpatch/tmp"
    folder.mkdir(parents=True, exist_ok=True)
    staged = folder / "staged"
    staged.write_bytes(data)
    e, w = str(pygit2.hash(expect)), str(pygit2.hash(wrote))
    return saves.name(staged, "a.txt", e, w, len(expect), folder)


def test_an_orphan_kept_file_holding_a_save_is_set_aside(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "alpha\n"})
    file = _kept_file(repo, b"alpha\nsaved\n", b"alpha\n", b"ALPHA\n")
    tree = WorkingTree(Store.open(str(repo)))
    assert tree.recover() is False  # no journal
    assert not file.exists()
    aside = list((repo / ".git/gitpatch/saves").iterdir())
    assert [p.read_bytes() for p in aside] == [b"alpha\nsaved\n"]
    assert aside[0].name.startswith("a.txt.")  # its key is HEAD's a.txt
    assert tree.set_aside == [("a.txt", aside[0])]  # for the call's result to tell
    assert (repo / "a.txt").read_text() == "alpha\n" and status_porcelain(repo) == ""


def test_an_orphan_kept_file_of_no_path_in_head_is_set_aside_by_its_key(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"b.txt": "bee\n"})  # a.txt is not in HEAD
    _kept_file(repo, b"alpha\nsaved\n", b"alpha\n", b"ALPHA\n")
    tree = WorkingTree(Store.open(str(repo)))
    tree.recover()
    aside = list((repo / ".git/gitpatch/saves").iterdir())
    assert len(aside) == 1 and aside[0].name.startswith("%" + saves.key("a.txt") + ".")
    assert tree.set_aside == [("", aside[0])]


def test_an_orphan_kept_file_checked_out_with_crlf_is_dropped(tmp_path: Path) -> None:
    """Under ``core.autocrlf`` the kept file holds a blob as git checks it out (CRLF): it is
    compared as git adds it at its path (HEAD's path of its key), not byte for byte, so it is
    not set aside needlessly."""
    repo = make_repo(tmp_path / "r", {"a.txt": "alpha\n"})
    git(repo, "config", "core.autocrlf", "true")
    checked = _kept_file(repo, b"alpha\r\n", b"alpha\n", b"ALPHA\n")
    staged = _kept_file(repo, b"ALPHA\r\n", b"alpha\n", b"ALPHA\n")
    saved = _kept_file(repo, b"alpha\r\nsaved\r\n", b"alpha\n", b"ALPHA\n")
    tree = WorkingTree(Store.open(str(repo)))
    tree.recover()
    assert not checked.exists() and not staged.exists() and not saved.exists()
    aside = list((repo / ".git/gitpatch/saves").iterdir())
    assert [p.read_bytes() for p in aside] == [b"alpha\r\nsaved\r\n"]  # a real save
    assert tree.set_aside == [("a.txt", aside[0])]


def test_an_orphan_kept_file_holding_a_known_blob_is_dropped(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "alpha\n"})
    checked = _kept_file(repo, b"alpha\n", b"alpha\n", b"ALPHA\n")
    staged = _kept_file(repo, b"ALPHA\n", b"alpha\n", b"ALPHA\n")
    WorkingTree(Store.open(str(repo))).recover()
    assert not checked.exists() and not staged.exists()
    assert not (repo / ".git/gitpatch/saves").exists()
    assert list((repo / ".git/gitpatch/tmp").iterdir()) == []
