"""``working-tree-encoding``, and CRLF kept by git next to another conversion: named refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import git
from tests.realrepo.kit import edit, make_repo, state, status


@pytest.fixture
def utf16(tmp_path: Path) -> Path:
    root = make_repo(tmp_path / "r", {"a.txt": "plain\n"})
    (root / ".gitattributes").write_text("u.txt text working-tree-encoding=UTF-16LE\n")
    (root / "u.txt").write_bytes("hello\nworld\n".encode("utf-16-le"))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "utf-16 file")
    assert status(root) == ""
    return root


def test_an_edit_of_a_working_tree_encoding_file_names_the_attribute(utf16: Path) -> None:
    before = state(utf16)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(utf16).propose(edit("u.txt", "hello", "HELLO"))
    assert err.value.code == "not_a_text_resource"
    assert "working-tree-encoding=UTF-16LE" in err.value.message
    assert "binary" not in err.value.message
    assert err.value.details["encoding"] == "UTF-16LE"
    assert state(utf16) == before


def test_a_read_of_it_names_the_attribute_too(utf16: Path) -> None:
    with pytest.raises(GitpatchError) as err:
        Workspace.open(utf16).read("u.txt")
    assert err.value.code == "not_a_text_resource" and "working-tree-encoding" in err.value.message


def test_other_files_of_that_repository_are_edited_as_usual(utf16: Path) -> None:
    Workspace.open(utf16).propose(edit("a.txt", "plain", "PLAIN"))
    assert (utf16 / "a.txt").read_text() == "PLAIN\n" and status(utf16) == ""


def test_crlf_kept_by_git_with_ident_as_well_is_refused(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"c.txt": b"one\r\ntwo\r\n"})
    (root / ".gitattributes").write_text("c.txt text=auto ident\n")
    git(root, "add", ".gitattributes")
    git(root, "commit", "-q", "-m", "attributes")
    assert status(root) == ""
    before = state(root)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(root).propose(edit("c.txt", "two", "TWO"))
    assert err.value.code == "filter_failed" and "ident" in err.value.message
    assert state(root) == before
