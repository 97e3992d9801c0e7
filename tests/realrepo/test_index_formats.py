"""Index formats and extensions on repositories made with the git CLI (issue 8, item 2).

libgit2 cannot read a split index (``core.splitIndex``) or a sparse index (``index.sparse``):
gitpatch has the ``git`` binary update those, keeping the format, and refuses with
``repository_error`` (reason ``unsupported_index``, naming the setting) before anything moves
when there is no git. The optional extensions git writes (cache tree, untracked cache,
fsmonitor, EOIE/IEOT) survive a land and stay true.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import RepositoryError
from tests.gitkit import git, head, make_repo
from tests.indexkit import (
    assert_clean,
    assert_eoie_true,
    cache_tree,
    extension_table,
    extensions,
)

FILES = {
    "a/x.txt": "one\ntwo\nthree\n",
    "a/deep/z.txt": "zed\n",
    "b/y.txt": "why\n",
    "top.txt": "top\n",
}


def sr(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


def repo_with(tmp_path: Path, *setup: tuple[str, ...]) -> Path:
    # enough files that git keeps a split index split (it merges it back when more than
    # splitIndex.maxPercentChange, 20%, of the entries change)
    filler = {f"c/f{n}.txt": f"{n}\n" for n in range(40)}
    repo = make_repo(tmp_path / "repo", {**FILES, **filler})
    for args in setup:
        git(repo, *args)
    return repo


def edit_twice(repo: Path, keeps: set[bytes], check: Callable[[Path], None] | None = None) -> None:
    """Two edits through two Workspaces (the second open must work after the first land);
    right after each (before git touches the index) it holds the extensions ``keeps`` and
    passes ``check``."""
    edits = (("a/x.txt", "two\n", "TWO\n"), ("a/deep/z.txt", "zed\n", "zed!\n"))
    for path, old, new in edits:
        before = (repo / path).read_text()
        Workspace.open(repo).apply(sr(old, new), path=path)
        assert keeps <= set(extensions(repo)) if keeps else True
        if check is not None:
            check(repo)
        assert (repo / path).read_text() == before.replace(old, new)
        assert_clean(repo)


def test_split_index_is_updated_by_git_and_stays_split(tmp_path: Path) -> None:
    repo = repo_with(
        tmp_path, ("config", "core.splitIndex", "true"), ("update-index", "--split-index")
    )
    assert b"link" in extensions(repo)
    edit_twice(repo, {b"link"})
    assert any(p.name.startswith("sharedindex.") for p in (repo / ".git").iterdir())


def test_sparse_index_is_updated_by_git_and_stays_sparse(tmp_path: Path) -> None:
    repo = repo_with(
        tmp_path,
        ("sparse-checkout", "init", "--cone", "--sparse-index"),
        ("sparse-checkout", "set", "a"),
    )
    assert b"sdir" in extensions(repo)
    edit_twice(repo, {b"sdir"})
    # b/ is still one sparse-directory entry, not expanded into its files
    assert "b/\n" in git(repo, "ls-files", "--sparse")
    assert not (repo / "b").exists()


def test_no_git_binary_refuses_before_anything_moves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = repo_with(
        tmp_path, ("config", "core.splitIndex", "true"), ("update-index", "--split-index")
    )
    before = head(repo)
    index = (repo / ".git" / "index").read_bytes()
    ws = Workspace.open(repo)
    empty = tmp_path / "nobin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(RepositoryError) as caught:
        ws.apply(sr("two\n", "TWO\n"), path="a/x.txt")
    monkeypatch.undo()
    err = caught.value
    assert err.code == "repository_error" and err.details["reason"] == "unsupported_index"
    assert "core.splitIndex" in err.message and err.hint and "git" in err.hint
    assert err.details["settings"] == ["core.splitIndex"]
    assert head(repo) == before
    assert (repo / "a/x.txt").read_bytes() == b"one\ntwo\nthree\n"
    assert (repo / ".git" / "index").read_bytes() == index
    assert not (repo / ".git" / "gitpatch" / "journal.json").exists()
    assert_clean(repo)
    Workspace.open(repo).apply(sr("two\n", "TWO\n"), path="a/x.txt")
    assert_clean(repo)


def test_untracked_cache_survives_and_stays_true(tmp_path: Path) -> None:
    repo = repo_with(
        tmp_path,
        ("config", "core.untrackedCache", "true"),
        ("update-index", "--untracked-cache"),
        ("status", "--porcelain"),
    )
    assert b"UNTR" in extensions(repo)
    edit_twice(repo, {b"UNTR", b"TREE"})
    # the cache must not hide a file created next to an edited one
    (repo / "a" / "new.txt").write_text("new\n")
    assert git(repo, "status", "--porcelain") == "?? a/new.txt\n"
    # an added file takes libgit2's whole-index write, which drops the optional extensions it
    # does not know; git rebuilds the untracked cache and everything stays true
    Workspace.open(repo).apply("*** Begin Patch\n*** Add File: a/added.txt\n+x\n*** End Patch\n")
    assert_clean(repo)
    assert git(repo, "status", "--porcelain") == "?? a/new.txt\n"
    assert "a/added.txt" in git(repo, "ls-files", "a")


def test_fsmonitor_extension_survives(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    hook = repo / ".git" / "fsmonitor-all.sh"
    # a hook that always answers "anything may have changed" (the path "/")
    hook.write_text("#!/bin/sh\nprintf 'token-%s\\0/\\0' \"$$\"\n")
    hook.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(hook))
    git(repo, "update-index", "--fsmonitor")
    git(repo, "status", "--porcelain")
    assert b"FSMN" in extensions(repo)
    edit_twice(repo, {b"FSMN", b"TREE"})


def test_eoie_and_ieot_survive_with_a_true_eoie(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    for key, value in (
        ("index.threads", "4"),
        ("index.recordEndOfIndexEntries", "true"),
        ("index.recordOffsetTable", "true"),
    ):
        git(repo, "config", key, value)
    git(repo, "update-index", "--force-write-index")
    assert {b"EOIE", b"IEOT", b"TREE"} <= set(extensions(repo))
    edit_twice(repo, {b"EOIE", b"IEOT", b"TREE"}, assert_eoie_true)
    # an uncommitted edit is recorded first: the index's cache tree for a/ is then neither
    # the recorded tree nor the new one, so it is invalidated and the TREE extension shrinks
    (repo / "a/x.txt").write_text("one\nTWO\nthree\nmine\n")
    size = dict((sig, n) for sig, _at, n in extension_table(repo)[1])[b"TREE"]
    Workspace.open(repo, dirty="record").apply(sr("one\n", "ONE\n"), path="a/x.txt")
    assert dict((sig, n) for sig, _at, n in extension_table(repo)[1])[b"TREE"] < size
    assert cache_tree(repo)["a"] is None
    assert_eoie_true(repo)
    assert (repo / "a/x.txt").read_text() == "ONE\nTWO\nthree\nmine\n"
    assert_clean(repo)
    # git checks the EOIE hash when it reads the index with threads; a bad one is reported
    out = subprocess.run(
        ["git", "-c", "index.threads=4", "status", "--porcelain"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"},
        check=True,
    )
    assert out.stdout == "" and out.stderr == ""


def test_index_v4_falls_back_and_stays_valid(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, ("update-index", "--index-version", "4"))
    edit_twice(repo, set())
    assert (repo / ".git" / "index").read_bytes()[4:8] == b"\x00\x00\x00\x04"


def test_staged_entries_and_flags_fall_back_to_a_whole_index_write(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    git(repo, "update-index", "--assume-unchanged", "top.txt")
    git(repo, "update-index", "--skip-worktree", "b/y.txt")
    (repo / "new.txt").write_text("new\n")
    git(repo, "add", "-N", "new.txt")
    Workspace.open(repo).apply(sr("two\n", "TWO\n"), path="a/x.txt")
    assert git(repo, "diff", "--cached", "--name-only") == ""
    assert git(repo, "write-tree").strip() == git(repo, "rev-parse", "HEAD^{tree}").strip()
    debug = git(repo, "ls-files", "-v")
    assert "h top.txt" in debug and "S b/y.txt" in debug
    assert "new.txt" in git(repo, "ls-files")
