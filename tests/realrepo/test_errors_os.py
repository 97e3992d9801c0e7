"""Clear errors instead of crashes: reserved names, .gitmodules, index.lock, wide text, roots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.core.model import AddFile, Proposal
from gitpatch.errors import GitpatchError
from tests.gitkit import git
from tests.realrepo.kit import add, edit, fsck, make_repo, state, status


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", {"a.txt": "one\n"})


@pytest.mark.parametrize(
    "path",
    [
        "GIT~1/config",
        "sub/git~2/hooks/x",
        ".git./config",
        ".Git/config",
        ".git /x",
        "x/.GIT/y",
        "a.txt::$DATA",
        ".git::$INDEX_ALLOCATION/config",
        ".g\u200cit/config",
    ],
)
def test_names_git_reserves_are_path_unsafe_before_libgit2(repo: Path, path: str) -> None:
    ws = Workspace.open(repo)
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(add(path, "x\n"))
    assert err.value.code == "path_unsafe", (path, err.value)
    assert state(repo) == before


@pytest.mark.parametrize(
    "content",
    [
        '[submodule "x"]\n\tpath = x\n\turl = --upload-pack=touch /tmp/pwned\n',
        '[submodule "x"]\n\tpath = -x\n\turl = https://example.com/x\n',
        '[submodule "x"]\n\tpath = x\n\turl = https://example.com/x\n\tupdate = !rm -rf /\n',
        '[submodule "../../x"]\n\tpath = x\n\turl = https://example.com/x\n',
    ],
)
def test_gitmodules_content_fsck_rejects_is_refused(repo: Path, content: str) -> None:
    ws = Workspace.open(repo)
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(Proposal((AddFile(".gitmodules", content),), "patch_resource", tool="t"))
    assert err.value.code == "path_unsafe" and ".gitmodules" in err.value.message
    assert state(repo) == before


def test_a_sound_gitmodules_passes_fsck(repo: Path) -> None:
    content = '[submodule "lib"]\n\tpath = lib\n\turl = https://example.com/lib.git\n'
    Workspace.open(repo).propose(add(".gitmodules", content))
    fsck(repo)


def test_index_lock_held_by_another_process_waits_then_refuses(repo: Path) -> None:
    ws = Workspace.open(repo)
    lock = repo / ".git/index.lock"
    lock.write_bytes(b"")  # a git command in progress
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(edit("a.txt", "one", "ONE"))
    assert err.value.code == "concurrent_update" and err.value.details["reason"] == "locked"
    assert state(repo) == before
    lock.unlink()
    ws.propose(edit("a.txt", "one", "ONE"))
    assert status(repo) == ""


def test_absolute_path_through_a_symlinked_root(repo: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(repo)
    ws = Workspace.open(link)
    assert ws.read(str(link / "a.txt")).content == "one\n"
    ws.propose(edit(str(link / "a.txt"), "one", "ONE"))
    assert (repo / "a.txt").read_text() == "ONE\n"
    with pytest.raises(GitpatchError) as err:
        ws.read(str(tmp_path / "elsewhere.txt"))
    assert err.value.code == "path_unsafe"


@pytest.mark.parametrize(
    ("bom", "name"),
    [
        (b"\xff\xfe", "UTF-16LE"),
        (b"\xfe\xff", "UTF-16BE"),
        (b"\xff\xfe\x00\x00", "UTF-32LE"),
        (b"\x00\x00\xfe\xff", "UTF-32BE"),
    ],
)
def test_wide_text_is_reported_as_such(repo: Path, bom: bytes, name: str) -> None:
    codec = name.lower().replace("utf-", "utf_")
    (repo / "wide.txt").write_bytes(bom + "hello\n".encode(codec))
    git(repo, "add", "wide.txt")
    git(repo, "commit", "-q", "-m", "wide")
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo).read("wide.txt")
    assert err.value.code == "resource_not_utf8" and name in err.value.message


def test_unreadable_file_is_a_filesystem_error_with_the_path(repo: Path) -> None:
    (repo / "a.txt").unlink()
    os.mkfifo(repo / "a.txt")  # reading it would block: it is not a regular file
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo).propose(edit("a.txt", "one", "ONE"))
    assert err.value.code == "not_a_text_resource" and err.value.details["path"] == "a.txt"
