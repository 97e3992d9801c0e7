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
from tests.gitkit import make_repo, status_porcelain


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
    assert WorkingTree(Store.open(str(repo))).recover() is False  # no journal
    assert not file.exists()
    aside = list((repo / ".git/gitpatch/saves").iterdir())
    assert [p.read_bytes() for p in aside] == [b"alpha\nsaved\n"]
    assert aside[0].name.startswith(saves.key("a.txt"))  # its path is not known
    assert (repo / "a.txt").read_text() == "alpha\n" and status_porcelain(repo) == ""


def test_an_orphan_kept_file_holding_a_known_blob_is_dropped(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "alpha\n"})
    checked = _kept_file(repo, b"alpha\n", b"alpha\n", b"ALPHA\n")
    staged = _kept_file(repo, b"ALPHA\n", b"alpha\n", b"ALPHA\n")
    WorkingTree(Store.open(str(repo))).recover()
    assert not checked.exists() and not staged.exists()
    assert not (repo / ".git/gitpatch/saves").exists()
    assert list((repo / ".git/gitpatch/tmp").iterdir()) == []
