"""Whether git converts a path (``Filters.converts``) answers as ``git check-attr`` does, with
the shortcut that knows a repository without attribute files has none (no libgit2 question,
whose first one loads the whole index) and without it: nested ``.gitattributes``,
``info/attributes``, ``core.attributesFile``, the global attributes file, one only in the
index, ``core.autocrlf``, ``eol``, ``filter=lfs``, ``text=auto``, ``binary``, macros."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from gitpatch.checkout.filters import ATTRIBUTES, Filters
from gitpatch.store import Store
from tests.gitkit import GIT_ENV, git, make_repo

FILES = {
    "a.txt": "a\n",
    "b.py": "b\n",
    "e.c": "e\n",
    "f.md": "f\n",
    "sub/a.txt": "a\n",
    "sub/c.dat": "c\n",
    "sub/deep/d.md": "d\n",
    "sub/deep/g.c": "g\n",
}
PATHS = [*FILES, "new.txt", "sub/deep/new.dat"]


def _attributes(name: str, text: str) -> Callable[[Path], None]:
    def write(repo: Path) -> None:
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    return write


def _index_only(repo: Path) -> None:
    (repo / "sub/.gitattributes").write_text("*.dat filter=lfs\n")
    git(repo, "add", "sub/.gitattributes")
    (repo / "sub/.gitattributes").unlink()  # git reads the index's copy (a sparse checkout's)


def _committed_then_deleted(repo: Path) -> None:
    (repo / "sub/deep/.gitattributes").write_text("*.md text eol=crlf\n")
    git(repo, "add", "sub/deep/.gitattributes")
    git(repo, "commit", "-q", "-m", "attributes")  # the index's cache tree is whole again
    (repo / "sub/deep/.gitattributes").unlink()


def _sparse(repo: Path) -> None:
    (repo / "sub/.gitattributes").write_text("*.dat filter=lfs\n*.md text=auto\n")
    git(repo, "add", "sub/.gitattributes")
    git(repo, "commit", "-q", "-m", "attributes")
    git(repo, "sparse-checkout", "set", "--no-cone", "/*.txt")
    assert not (repo / "sub").exists()


def _attributes_file(repo: Path) -> None:
    outside = repo.parent / "attrs"
    outside.write_text("*.txt ident\n")
    git(repo, "config", "core.attributesFile", str(outside))


def _missing_attributes_file(repo: Path) -> None:
    git(repo, "config", "core.attributesFile", str(repo.parent / "nowhere"))


SETUPS: dict[str, Callable[[Path], None]] = {
    "none": lambda _repo: None,
    "root text eol": _attributes(".gitattributes", "*.txt text eol=crlf\n"),
    "nested binary and text=auto": lambda r: (
        _attributes(".gitattributes", "*.md text=auto\n")(r),
        _attributes("sub/.gitattributes", "*.dat binary\n")(r),
        _attributes("sub/deep/.gitattributes", "*.c -text\n*.md eol=lf\n")(r),
    ),
    "info/attributes lfs": _attributes(".git/info/attributes", "*.py filter=lfs diff=lfs\n"),
    "macro": _attributes(".gitattributes", "[attr]mytext text eol=lf\n*.c mytext\n"),
    "unset only": _attributes(".gitattributes", "*.txt -text -eol\n"),
    "only in the index": _index_only,
    "committed, deleted from disk": _committed_then_deleted,
    "sparse checkout": _sparse,
    "core.attributesFile": _attributes_file,
    "core.attributesFile missing": _missing_attributes_file,
    "autocrlf": lambda r: git(r, "config", "core.autocrlf", "true"),
    "autocrlf input with -text": lambda r: (
        git(r, "config", "core.autocrlf", "input"),
        _attributes(".gitattributes", "*.py -text\n")(r),
    ),
}


def _git_says(repo: Path) -> dict[str, bool]:
    """What git says: a conversion may apply (autocrlf, or an attribute set or valued)."""
    crlf = git(repo, "config", "--get", "core.autocrlf", check=False).strip().lower()
    out = git(repo, "check-attr", "-z", *ATTRIBUTES, "--", *PATHS)
    fields = out.split("\0")
    found = {p: crlf in ("true", "input") for p in PATHS}
    for path, _name, value in zip(fields[0::3], fields[1::3], fields[2::3], strict=False):
        if value not in ("unspecified", "unset"):
            found[path] = True
    return found


@pytest.mark.parametrize("setup", list(SETUPS))
def test_converts_answers_as_git_check_attr(tmp_path: Path, setup: str) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    SETUPS[setup](repo)
    filters = Filters(Store.open(repo))
    assert {p: filters.converts(p) for p in PATHS} == _git_says(repo)
    # the shortcut is taken exactly where nothing could name an attribute
    nothing = setup in ("none", "core.attributesFile missing", "autocrlf")
    if setup != "committed, deleted from disk":
        assert all(filters._attributes_absent(p) for p in PATHS) is nothing
    if setup == "only in the index":
        assert filters._attributes_absent("a.txt") is False  # the index names sub/'s
    if setup == "committed, deleted from disk":  # found in the tree the index holds
        assert filters._attributes_absent("a.txt") and filters._attributes_absent("sub/c.dat")
        assert not filters._attributes_absent("sub/deep/d.md")
    if setup == "none":  # the index's cache tree answers: no search of the whole index
        assert isinstance(filters._elsewhere_view(), pygit2.Oid)


def test_an_attribute_file_appearing_later_is_seen(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    filters = Filters(Store.open(repo))
    assert not filters.converts("a.txt")
    (repo / ".git/info/attributes").write_text("*.txt text eol=crlf\n")
    assert filters.converts("a.txt")
    (repo / ".git/info/attributes").unlink()
    (repo / "sub/.gitattributes").write_text("*.txt filter=lfs\n")
    assert filters.converts("sub/a.txt") and not filters.converts("a.txt")


def test_a_linked_worktree_reads_the_common_info_attributes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    side = tmp_path / "side"
    git(repo, "worktree", "add", "-q", "-b", "side", str(side))
    (repo / ".git/info/attributes").write_text("*.py filter=lfs\n")
    filters = Filters(Store.open(side))
    assert filters.converts("b.py") and not filters.converts("a.txt")
    assert {p: filters.converts(p) for p in PATHS} == _git_says(side)


_GLOBAL = """
import json, sys
from gitpatch.checkout.filters import Filters
from gitpatch.store import Store
filters = Filters(Store.open(sys.argv[1]))
print(json.dumps({p: filters.converts(p) for p in sys.argv[2:]}))
"""


def test_the_global_attributes_file_is_read(tmp_path: Path) -> None:
    # libgit2 reads its global folders from the environment when it starts: a process of its own
    repo = make_repo(tmp_path / "repo", FILES)
    xdg = tmp_path / "xdg"
    (xdg / "git").mkdir(parents=True)
    (xdg / "git/attributes").write_text("*.md text eol=crlf\n")
    env = {**os.environ, **GIT_ENV, "XDG_CONFIG_HOME": str(xdg), "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", _GLOBAL, str(repo), *PATHS],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    ours = json.loads(done.stdout)
    assert ours["f.md"] and not ours["a.txt"]
    said = subprocess.run(
        ["git", "check-attr", "-z", "eol", "--", *PATHS],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    assert ours == {p: v != "unspecified" for p, v in zip(said[0::3], said[2::3], strict=False)}
