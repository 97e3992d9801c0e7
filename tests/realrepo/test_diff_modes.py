"""A unified diff's mode lines are applied, never dropped (issue 26): ``new mode 100755`` (with
or without hunks), ``new file mode 100755`` and ``new mode 100644`` land in the commit, the
index and the file's executable bit, as ``git apply`` does. The diffs are written by the real
``git diff``; the checkouts are plain, autocrlf, with staged work, and a linked worktree."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import git
from tests.realrepo.kit import fsck, make_repo, state, status

FILES = {"a.sh": "one\ntwo\n", "x.sh": "run\n", "b.txt": "b\n"}


def base_repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "r", FILES)
    git(repo, "update-index", "--chmod=+x", "x.sh")
    os.chmod(repo / "x.sh", 0o755)
    git(repo, "commit", "-qm", "x.sh is executable")
    return repo


def git_diff(repo: Path, tmp_path: Path, change: Callable[[Path], None]) -> str:
    """The ``git diff`` of ``change`` made in a scratch clone of ``repo``."""
    scratch = tmp_path / "scratch"
    git(tmp_path, "clone", "-q", str(repo), str(scratch))
    change(scratch)
    git(scratch, "add", "-A")
    return git(scratch, "diff", "--cached", "HEAD")


def _chmod(path: Path, mode: int) -> None:
    os.chmod(path, mode)


def _chmod_and_edit(repo: Path) -> None:
    (repo / "a.sh").write_text("one\nTWO\n")
    os.chmod(repo / "a.sh", 0o755)


def _new_executable(repo: Path) -> None:
    (repo / "new.sh").write_text("hi\n")
    os.chmod(repo / "new.sh", 0o755)


CHANGES: dict[str, tuple[Callable[[Path], None], str, str]] = {
    # name: (the change, the path, the mode it ends with)
    "chmod +x": (lambda r: _chmod(r / "a.sh", 0o755), "a.sh", "100755"),
    "chmod +x and an edit": (_chmod_and_edit, "a.sh", "100755"),
    "a new executable": (_new_executable, "new.sh", "100755"),
    "chmod -x": (lambda r: _chmod(r / "x.sh", 0o644), "x.sh", "100644"),
}


def landed_mode(repo: Path, path: str) -> tuple[str, str, bool]:
    """(mode in HEAD, mode in the index, executable on disk)."""
    tree = git(repo, "ls-tree", "HEAD", "--", path).split()[0]
    index = git(repo, "ls-files", "-s", "--", path).split()[0]
    return tree, index, os.access(repo / path, os.X_OK)


def checkout(kind: str, repo: Path, tmp_path: Path) -> Path:
    """Where the agent works: the repository itself, or a linked worktree of it."""
    if kind == "autocrlf":
        git(repo, "config", "core.autocrlf", "true")
    if kind == "staged":
        (repo / "b.txt").write_text("staged\n")
        git(repo, "add", "b.txt")
    if kind == "linked":
        side = tmp_path / "side"
        git(repo, "worktree", "add", "-q", "-b", "side", str(side))
        return side
    return repo


@pytest.mark.parametrize("kind", ["plain", "autocrlf", "staged", "linked"])
@pytest.mark.parametrize("name", sorted(CHANGES))
def test_the_mode_a_git_diff_gives_lands(name: str, kind: str, tmp_path: Path) -> None:
    change, path, mode = CHANGES[name]
    repo = base_repo(tmp_path)
    diff = git_diff(repo, tmp_path, change)
    assert ("new mode " in diff or "new file mode 100755" in diff) and f" {mode}" in diff
    where = checkout(kind, repo, tmp_path)
    Workspace.open(where).apply(diff)
    assert landed_mode(where, path) == (mode, mode, mode == "100755")
    assert status(where) == ("M  b.txt\n" if kind == "staged" else "")
    assert git(where, "diff", "--cached", "--name-only", "HEAD") == (
        "b.txt\n" if kind == "staged" else ""
    )
    fsck(where)


def test_review_then_approve_lands_the_mode(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    diff = git_diff(repo, tmp_path, CHANGES["chmod +x and an edit"][0])
    ws = Workspace.open(repo, mode="review")
    pid = ws.apply(diff).proposal_id
    assert landed_mode(repo, "a.sh") == ("100644", "100644", False)
    ws.approve(pid, by="Reviewer")
    assert landed_mode(repo, "a.sh") == ("100755", "100755", True)
    assert (repo / "a.sh").read_text() == "one\nTWO\n" and status(repo) == ""


def test_a_mode_the_file_already_has_is_no_change(tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    diff = "diff --git a/x.sh b/x.sh\nold mode 100644\nnew mode 100755\n"
    before = state(repo)
    with pytest.raises(GitpatchError) as caught:
        Workspace.open(repo).apply(diff)
    assert caught.value.code == "no_change" and "x.sh 100755" in caught.value.message
    assert state(repo) == before


@pytest.mark.parametrize("mode", ["120000", "160000", "100600"])
def test_a_mode_no_patch_can_give_is_refused_by_name(mode: str, tmp_path: Path) -> None:
    repo = base_repo(tmp_path)
    diff = f"diff --git a/a.sh b/a.sh\nold mode 100644\nnew mode {mode}\n"
    before = state(repo)
    with pytest.raises(GitpatchError) as caught:
        Workspace.open(repo).apply(diff)
    err = caught.value
    assert err.code == "invalid_patch" and f"(mode {mode})" in err.message
    assert err.hint and "100755" in err.hint
    assert state(repo) == before
