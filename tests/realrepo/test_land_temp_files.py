"""A land's temp files are never seen by git as untracked (issue 26, item 3).

The new content of a landed file waits in a temp file from before the branch moves until its
rename; a person's ``git add -A && git commit`` in that window must not commit it. It waits in
``<git dir>/gitpatch/tmp`` (a rename across file systems is not atomic, so only when that is
on the file's file system: a linked worktree has its own git dir, a separate git dir may be
elsewhere), else beside the file with ``*.gitpatch-tmp`` in ``info/exclude``. Checked with the
land SIGKILLed right after staging (``files.staged``): what git sees then is what a person's
git would see in the window, and the next call removes the temp file.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitpatch import Workspace
from tests.gitkit import git, make_repo, run_git
from tests.realrepo.kit import edit, fsck, status
from tests.safety.proofkit import propose_in_child

FILES = {"a.txt": "one\ntwo\n", "d/b.txt": "bee\n"}


def _killed_after_staging(repo: Path) -> None:
    edited = edit("d/b.txt", "bee", "BEE")
    assert propose_in_child(repo, edited, {"GITPATCH_CRASH_AT": "files.staged"}) == 137


def _temp_files(root: Path) -> list[str]:
    return [str(p) for p in root.rglob("*.gitpatch-tmp")]


def _check_window(repo: Path) -> None:
    """In the window a person's git sees no temp file, and one that writes the index is
    refused with git's own words (the land holds index.lock: a killed land's is removed by
    the next call, as the temp file is)."""
    assert status(repo) == "", "git sees the land's temp file as untracked"
    refused = run_git(repo, "add", "-A")
    assert refused.returncode != 0 and b"Another git process" in refused.stderr
    Workspace.open(repo).read("a.txt")  # recovery
    assert _temp_files(repo) == []
    assert (repo / "d/b.txt").read_text() == "bee\n" and status(repo) == ""
    git(repo, "add", "-A")
    assert git(repo, "diff", "--cached", "--name-only") == ""
    fsck(repo)


def test_staged_in_the_git_dir(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    _killed_after_staging(repo)
    assert _temp_files(repo / "d") == []
    assert _temp_files(repo / ".git" / "gitpatch" / "tmp")
    _check_window(repo)


def test_staged_in_a_linked_worktrees_own_git_dir(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "main", FILES)
    linked = tmp_path / "linked"
    git(main, "worktree", "add", "-q", "-b", "side", str(linked))
    _killed_after_staging(linked)
    assert _temp_files(linked) == []
    assert _temp_files(main / ".git" / "worktrees" / "linked" / "gitpatch" / "tmp")
    _check_window(linked)
    assert status(main) == ""


@pytest.fixture
def other_fs() -> Iterator[Path]:
    """A folder on another file system than the test's temp dir (tmpfs), when there is one."""
    base = Path("/dev/shm")
    if not base.is_dir() or os.stat(base).st_dev == os.stat(tempfile.gettempdir()).st_dev:
        pytest.skip("no second file system here")
    where = Path(tempfile.mkdtemp(dir=base))
    yield where
    shutil.rmtree(where, ignore_errors=True)


def test_beside_the_file_and_excluded_when_the_git_dir_is_elsewhere(
    tmp_path: Path, other_fs: Path
) -> None:
    repo = make_repo(other_fs / "work", FILES)
    gitdir = tmp_path / "gitdir"
    shutil.move(str(repo / ".git"), gitdir)
    (repo / ".git").write_text(f"gitdir: {gitdir}\n")
    git(repo, "config", "core.worktree", str(repo))
    assert status(repo) == ""
    _killed_after_staging(repo)
    assert _temp_files(repo / "d"), "staged beside the file (a rename across file systems)"
    assert "*.gitpatch-tmp" in (gitdir / "info" / "exclude").read_text().splitlines()
    _check_window(repo)
