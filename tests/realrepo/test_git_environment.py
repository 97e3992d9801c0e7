"""``GIT_DIR`` / ``GIT_WORK_TREE`` as git reads them, and ``-C`` in a ``core.worktree`` tree,
through the ``gitpatch`` console script."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.doors.mcp.mcpkit import console_script
from tests.gitkit import git, git_env
from tests.realrepo.kit import status

pytestmark = pytest.mark.slow  # the gitpatch console script in processes of its own

EDIT = '[{"old_string": "one", "new_string": "ONE"}]'


def gitpatch(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in git_env(cwd).items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}
    return subprocess.run(
        [console_script(), *args],
        cwd=cwd,
        env={**base, "NO_COLOR": "1", **env},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def detached(tmp_path: Path) -> tuple[Path, Path]:
    """A git directory ``meta.git`` beside its working tree ``tree`` (no ``.git`` in it)."""
    gitdir, tree = tmp_path / "meta.git", tmp_path / "tree"
    tree.mkdir()
    git(tmp_path, "init", "-q", "--bare", "-b", "work", str(gitdir))
    git(tmp_path, "--git-dir", str(gitdir), "config", "core.bare", "false")
    (tree / "a.txt").write_text("one\n")
    env = {"GIT_DIR": str(gitdir), "GIT_WORK_TREE": str(tree)}
    for args in (("add", "a.txt"), ("commit", "-q", "-m", "initial")):
        subprocess.run(["git", *args], cwd=tree, env={**git_env(tree), **env}, check=True)
    return gitdir, tree


def test_git_dir_alone_uses_the_current_directory_as_the_tree(detached: tuple[Path, Path]) -> None:
    gitdir, tree = detached
    git(tree, "--git-dir", str(gitdir), "config", "core.worktree", str(tree))
    out = gitpatch(tree, "edit", "a.txt", "--edits", EDIT, GIT_DIR=str(gitdir))
    assert out.returncode == 0, out.stderr
    assert (tree / "a.txt").read_text() == "ONE\n"
    assert git(tree, "--git-dir", str(gitdir), "--work-tree", str(tree), "status", "-s") == ""


def test_git_dir_relative_to_the_directory(detached: tuple[Path, Path]) -> None:
    gitdir, tree = detached
    git(tree, "--git-dir", str(gitdir), "config", "core.worktree", str(tree))
    out = gitpatch(tree, "--json", "read", "a.txt", GIT_DIR="../meta.git")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["path"] == "a.txt"


def test_git_dir_whose_tree_libgit2_would_place_elsewhere_is_refused(tmp_path: Path) -> None:
    """git takes the current directory as the top; libgit2 the git dir's parent: refused."""
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q", "-b", "work")
    (root / "a.txt").write_text("one\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "i")
    os.rename(root / ".git", tmp_path / "r.git")  # beside the tree, found only through GIT_DIR
    out = gitpatch(tmp_path, "-C", str(root), "read", "a.txt", GIT_DIR=str(tmp_path / "r.git"))
    assert out.returncode == 1 and out.stderr.startswith("repository_error")
    assert "core.worktree" in out.stderr and str(root) in out.stderr


def test_a_work_tree_git_would_not_use_is_refused_and_nothing_changes(
    detached: tuple[Path, Path],
) -> None:
    gitdir, tree = detached
    other = tree.parent / "other"
    other.mkdir()
    (other / "a.txt").write_text("one\n")
    out = gitpatch(
        other, "edit", "a.txt", "--edits", EDIT, GIT_DIR=str(gitdir), GIT_WORK_TREE=str(other)
    )
    assert out.returncode == 1 and out.stderr.startswith("repository_error")
    assert "core.worktree" in out.stderr
    assert (other / "a.txt").read_text() == "one\n" and (tree / "a.txt").read_text() == "one\n"
    assert git(tree, "--git-dir", str(gitdir), "log", "--format=%s") == "initial\n"


def test_git_dir_and_work_tree_that_agree_with_core_worktree(detached: tuple[Path, Path]) -> None:
    gitdir, tree = detached
    git(tree, "--git-dir", str(gitdir), "config", "core.worktree", str(tree))
    out = gitpatch(
        tree.parent, "edit", "a.txt", "--edits", EDIT, GIT_DIR=str(gitdir), GIT_WORK_TREE=str(tree)
    )
    assert out.returncode == 0, out.stderr
    assert (tree / "a.txt").read_text() == "ONE\n"


def test_dash_c_in_a_core_worktree_tree(tmp_path: Path) -> None:
    top = tmp_path / "proj"
    (top / "src").mkdir(parents=True)
    git(top, "init", "-q", "-b", "work")
    git(top, "config", "core.worktree", str(top / "src"))
    (top / "src/a.txt").write_text("one\n")
    git(top / "src", "add", "a.txt")
    git(top / "src", "commit", "-q", "-m", "i")
    out = gitpatch(tmp_path, "-C", str(top / "src"), "edit", "a.txt", "--edits", EDIT)
    assert out.returncode == 0, out.stderr
    assert (top / "src/a.txt").read_text() == "ONE\n" and status(top / "src") == ""
