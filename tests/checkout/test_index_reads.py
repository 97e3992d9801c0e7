"""``indexfile.read_index``: one read of an unchanged index serves every check of a call, and
any new version of the index (git always writes a new file) is read again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitpatch.checkout import indexfile
from gitpatch.checkout.index import plain_entries
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
    entries = plain_entries(str(index), ["b/c.txt"])
    assert entries == plain_entries(str(index), ["b/c.txt"])
    assert entries is not None
    assert entries["b/c.txt"][0] == git(repo, "rev-parse", ":b/c.txt").strip()


@pytest.mark.usefixtures("settled")
def test_a_new_index_is_read_again_even_with_the_old_one_s_times(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    index = repo / ".git" / "index"
    before = plain_entries(str(index), ["a.txt"])
    old = os.stat(index)
    (repo / "a.txt").write_text("b\n")
    git(repo, "add", "a.txt")
    os.utime(index, ns=(old.st_atime_ns, old.st_mtime_ns))
    after = plain_entries(str(index), ["a.txt"])
    assert before is not None and after is not None
    assert after["a.txt"][0] == git(repo, "rev-parse", ":a.txt").strip() != before["a.txt"][0]


def test_kept_bytes_are_checked_against_the_file_s_checksum(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Written within the clock's tick, the next version could share its stat data exactly:
    # the trailing checksum (a SHA-1 of the whole content) tells them apart.
    monkeypatch.setattr(indexfile, "_SETTLED_NS", 10**18)  # nothing has settled
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    index = str(repo / ".git" / "index")
    first, _ = indexfile.read_index(index)
    assert indexfile.read_index(index)[0] is first  # kept: its checksum is the file's
    (repo / "a.txt").write_text("b\n")
    git(repo, "add", "a.txt")
    key = indexfile._key(os.stat(index))
    indexfile._READS[index] = (key, first, {}, False)  # as if the new file had the old stat
    again, _ = indexfile.read_index(index)
    assert again != first and again == Path(index).read_bytes()


def test_an_index_without_checksum_is_kept_only_once_settled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    index = repo / ".git" / "index"
    data = index.read_bytes()
    index.write_bytes(data[:-20] + bytes(20))  # what index.skipHash (git 2.40+) writes
    monkeypatch.setattr(indexfile, "_SETTLED_NS", 10**18)
    first, _ = indexfile.read_index(str(index))
    assert indexfile.read_index(str(index))[0] is not first
    monkeypatch.setattr(indexfile, "_SETTLED_NS", -(10**18))
    first, _ = indexfile.read_index(str(index))
    assert indexfile.read_index(str(index))[0] is first


def test_gitpatch_s_own_index_write_is_kept_for_the_next_call(tmp_path: Path) -> None:
    from gitpatch.porcelain.workspace import Workspace
    from tests.gitkit import edit

    repo = make_repo(tmp_path / "r", {"a.txt": "a\n", "b.txt": "b\n"})
    Workspace.open(repo, mode="auto").propose(edit("a.txt", "a", "z"))
    index = str(repo / ".git" / "index")
    assert indexfile._READS[index][1] == Path(index).read_bytes()
    assert git(repo, "status", "--porcelain") == ""


def test_a_missing_index_is_an_os_error_as_before(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    (repo / ".git" / "index").unlink()
    assert plain_entries(str(repo / ".git" / "index"), ["a.txt"]) is None


@pytest.mark.usefixtures("settled")
def test_each_linked_worktree_s_index_is_kept_apart(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    (linked / "a.txt").write_text("side\n")
    git(linked, "add", "a.txt")
    main_index = str(repo / ".git" / "index")
    side_index = str(repo / ".git" / "worktrees" / "linked" / "index")
    ours = plain_entries(main_index, ["a.txt"])
    theirs = plain_entries(side_index, ["a.txt"])
    assert ours is not None and theirs is not None
    assert ours["a.txt"][0] == git(repo, "rev-parse", ":a.txt").strip()
    assert theirs["a.txt"][0] == git(linked, "rev-parse", ":a.txt").strip() != ours["a.txt"][0]
