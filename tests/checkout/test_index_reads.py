"""``indexfile.read_index``: one read of an unchanged index serves every check of a call, and
any new version of the index (git always writes a new file) is read again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitpatch.checkout import indexfile, indexsync
from tests.gitkit import git, make_repo


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file counts as settled (no test waits for the clock)."""
    monkeypatch.setattr(indexfile, "_SETTLED_NS", -(10**18))


@pytest.mark.usefixtures("settled")
def test_a_settled_index_is_read_once_and_its_lookups_kept(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n", "b/c.txt": "c\n"})
    index = repo / ".git" / "index"
    first, _ = indexfile.read_index(str(index))
    again, _ = indexfile.read_index(str(index))
    assert again is first
    entries = indexsync.plain_entries(str(index), ["b/c.txt"])
    assert entries == indexsync.plain_entries(str(index), ["b/c.txt"])
    assert entries is not None
    assert entries["b/c.txt"][0] == git(repo, "rev-parse", ":b/c.txt").strip()


@pytest.mark.usefixtures("settled")
def test_a_new_index_is_read_again_even_with_the_old_one_s_times(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    index = repo / ".git" / "index"
    before = indexsync.plain_entries(str(index), ["a.txt"])
    old = os.stat(index)
    (repo / "a.txt").write_text("b\n")
    git(repo, "add", "a.txt")
    os.utime(index, ns=(old.st_atime_ns, old.st_mtime_ns))
    after = indexsync.plain_entries(str(index), ["a.txt"])
    assert before is not None and after is not None
    assert after["a.txt"][0] == git(repo, "rev-parse", ":a.txt").strip() != before["a.txt"][0]


def test_a_fresh_index_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Written within the clock's tick, the next version could share its stat data exactly.
    monkeypatch.setattr(indexfile, "_SETTLED_NS", 10**18)  # nothing has settled yet
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    index = repo / ".git" / "index"
    first, _ = indexfile.read_index(str(index))
    again, _ = indexfile.read_index(str(index))
    assert again == first and again is not first


def test_a_missing_index_is_an_os_error_as_before(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    (repo / ".git" / "index").unlink()
    assert indexsync.plain_entries(str(repo / ".git" / "index"), ["a.txt"]) is None
