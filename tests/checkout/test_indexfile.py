"""Patching the index in place (``gitpatch.indexfile``), checked against git itself.

Random edits land through a Workspace; after each one git must find the repository clean, the
cache tree true, and the landed entries exactly as ``git update-index`` records them from the
same files. The untracked cache is on: libgit2's whole-index write would drop it, so its
survival shows the in-place patch did the work.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.checkout import indexfile
from gitpatch.errors import DirtyWorktree
from tests.gitkit import git, make_repo, run_git
from tests.indexkit import assert_clean, cache_tree, debug_entries, extensions

DIRS = ["", "src", "src/core", "src/core/deep", "docs", "docs/a", "ba"]


def _files(rng: random.Random) -> dict[str, str]:
    files = {}
    for n in range(40):
        folder = rng.choice(DIRS)
        name = rng.choice(["a.txt", "b.py", f"f{n}.md", "ba.txt"])
        path = f"{folder}/{name}" if folder else name
        files[path] = "".join(f"{path} line {i}\n" for i in range(6))
    return files


def _apply_patch(paths: list[str], k: int) -> str:
    body = "".join(f"*** Update File: {p}\n@@\n-{p} line {k % 6}\n+{p} edit {k}\n" for p in paths)
    return f"*** Begin Patch\n{body}*** End Patch\n"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_edits_match_git_update_index(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    files = _files(rng)
    repo = make_repo(tmp_path / "repo", files)
    git(repo, "config", "core.untrackedCache", "true")
    git(repo, "update-index", "--untracked-cache")
    git(repo, "status", "--porcelain")
    ws = Workspace.open(repo)
    lines = {p: [f"{p} line {i}" for i in range(6)] for p in files}
    for k in range(12):
        paths = rng.sample(sorted(files), rng.choice([1, 1, 2, 3]))
        paths = [p for p in paths if f"{p} line {k % 6}" in lines[p]]
        if not paths:
            continue
        ws.apply(_apply_patch(paths, k))
        for p in paths:
            lines[p][k % 6] = f"{p} edit {k}"
        assert b"UNTR" in extensions(repo)  # before git rewrites the index
        copy = tmp_path / f"index.{k}"
        shutil.copyfile(repo / ".git" / "index", copy)
        assert_clean(repo)
        # git records the same entries from the same files
        assert run_git(repo, "update-index", "--", *paths).returncode == 0
        assert debug_entries(repo, *paths, index=copy) == debug_entries(repo, *paths)


# -- the bytes ---------------------------------------------------------------------------------


def _index(repo: Path) -> bytes:
    return (repo / ".git" / "index").read_bytes()


def _update(repo: Path, path: str) -> indexfile.EntryUpdate:
    oid = bytes.fromhex(git(repo, "rev-parse", f"HEAD:{path}").strip())
    return indexfile.EntryUpdate(oid, 0o100644, (repo / path).stat())


def test_names_inside_other_names_find_their_own_entry(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "1\n", "ba.txt": "2\n", "x/a.txt": "3\n"})
    data = _index(repo)
    where = indexfile.layout(data)
    offsets = {p: indexfile.find_entry(data, where, p) for p in ("a.txt", "ba.txt", "x/a.txt")}
    assert len(set(offsets.values())) == 3
    for path, at in offsets.items():
        (flags,) = struct.unpack_from(">H", data, at + 60)
        assert data[at + 62 : at + 62 + flags] == path.encode()


@pytest.mark.parametrize(
    ("setup", "path"),
    [
        (("update-index", "--skip-worktree", "a.txt"), "a.txt"),
        (("update-index", "--assume-unchanged", "a.txt"), "a.txt"),
        (("update-index", "--index-version", "4"), "a.txt"),
        (("rm", "-q", "--cached", "a.txt"), "a.txt"),
    ],
)
def test_shapes_it_does_not_patch_are_refused(
    tmp_path: Path, setup: tuple[str, ...], path: str
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "1\n", "b.txt": "2\n"})
    update = _update(repo, path)
    git(repo, *setup)
    with pytest.raises(indexfile.Unsupported):
        indexfile.patch(_index(repo), {path: update}, {})


def test_conflicted_entry_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "base\n"})
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "a.txt").write_text("other\n")
    git(repo, "commit", "-q", "-am", "other")
    git(repo, "checkout", "-q", "work")
    (repo / "a.txt").write_text("mine\n")
    git(repo, "commit", "-q", "-am", "mine")
    assert run_git(repo, "merge", "-q", "other").returncode != 0
    data = _index(repo)
    with pytest.raises(indexfile.Unsupported):
        indexfile.find_entry(data, indexfile.layout(data), "a.txt")


def test_mandatory_extension_is_refused_and_named(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "1\n"})
    update = _update(repo, "a.txt")
    git(repo, "update-index", "--split-index")
    assert indexfile.mandatory_extensions(_index(repo)) == ["link"]
    with pytest.raises(indexfile.Unsupported):
        indexfile.patch(_index(repo), {"a.txt": update}, {})


def test_a_held_lock_leaves_the_index_alone(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "1\n"})
    before = _index(repo)
    lock = repo / ".git" / "index.lock"
    lock.write_bytes(b"someone else")
    with pytest.raises(FileExistsError):
        indexfile.rewrite_locked(str(repo / ".git" / "index"), lambda data: data + b"x")
    assert _index(repo) == before and lock.read_bytes() == b"someone else"


def test_a_refused_patch_removes_its_lock(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "1\n"})
    before = _index(repo)

    def refuse(_data: bytes) -> bytes:
        raise indexfile.Unsupported("no")

    with pytest.raises(indexfile.Unsupported):
        indexfile.rewrite_locked(str(repo / ".git" / "index"), refuse)
    assert _index(repo) == before
    assert not (repo / ".git" / "index.lock").exists()


def test_patched_bytes_are_what_git_reads(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"d/a.txt": "1\n", "d/b.txt": "2\n", "c.txt": "3\n"})
    old = {p: git(repo, "rev-parse", f"HEAD:{p}").strip() for p in ("", "d")}
    (repo / "d/a.txt").write_text("changed\n")
    git(repo, "commit", "-q", "-am", "by git")  # index now matches; take it back one step
    new = {p: git(repo, "rev-parse", f"HEAD:{p}").strip() for p in ("", "d")}
    data = _index(repo)
    # rewrite the entry to the same values: bytes must come back identical, checksum included
    update = _update(repo, "d/a.txt")
    trees = {p: (bytes.fromhex(new[p]), bytes.fromhex(new[p])) for p in ("", "d")}
    patched = indexfile.patch(data, {"d/a.txt": update}, trees)
    assert len(patched) == len(data)
    (repo / ".git" / "index").write_bytes(patched)
    assert_clean(repo)
    # an id that is neither before nor after is invalidated, never trusted
    stale = {"d": (bytes.fromhex(old["d"]), bytes.fromhex(new["d"]))}
    (repo / ".git" / "index").write_bytes(indexfile.patch(patched, {"d/a.txt": update}, stale))
    assert cache_tree(repo) == {"": new[""], "d": None}
    assert_clean(repo)


def test_patched_and_whole_index_writes_alternate_without_losing_entries(tmp_path: Path) -> None:
    # libgit2 may hold the index loaded from before a patch (attribute lookups load it): its
    # whole-index write for an added file must start from the patched file, not that copy
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "d/b.txt": "b\n"})
    ws = Workspace.open(repo)
    for k in range(3):
        ws.apply(f"*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+a{k}\n*** End Patch\n")
        assert_clean(repo)
        ws.apply(f"*** Begin Patch\n*** Add File: d/n{k}.txt\n+new\n*** End Patch\n")
        assert_clean(repo)
        ws.apply(f"*** Begin Patch\n*** Update File: d/b.txt\n@@\n-b\n+b{k}\n*** End Patch\n")
        assert_clean(repo)
        ws.apply(f"*** Begin Patch\n*** Update File: a.txt\n@@\n-a{k}\n+a\n*** End Patch\n")
        ws.apply(f"*** Begin Patch\n*** Update File: d/b.txt\n@@\n-b{k}\n+b\n*** End Patch\n")
    assert git(repo, "ls-files") == "a.txt\nd/b.txt\nd/n0.txt\nd/n1.txt\nd/n2.txt\n"


def test_a_large_file_changed_under_its_old_mtime_is_still_seen(tmp_path: Path) -> None:
    # large files are judged by the index's stat data, as git does: all of it, ctime included
    body = "".join(f"line {n:07d}\n" for n in range(100_000))
    repo = make_repo(tmp_path / "repo", {"big.txt": body})
    big = repo / "big.txt"
    st = big.stat()
    big.write_text(body.replace("line 0000007", "line 000000X"))
    os.utime(big, ns=(st.st_atime_ns, st.st_mtime_ns))
    ws = Workspace.open(repo, dirty="refuse")
    with pytest.raises(DirtyWorktree):
        ws.apply([{"old_string": "line 0000001\n", "new_string": "one\n"}], path="big.txt")
    git(repo, "checkout", "--", "big.txt")
    ws.apply([{"old_string": "line 0000001\n", "new_string": "one\n"}], path="big.txt")
    assert big.read_text() == body.replace("line 0000001\n", "one\n")
    assert_clean(repo)


@pytest.mark.parametrize(
    "setup",
    [
        (),
        (("update-index", "--untracked-cache"), ("status", "--porcelain")),
        (
            (
                "-c",
                "index.threads=4",
                "-c",
                "index.recordOffsetTable=true",
                "-c",
                "index.recordEndOfIndexEntries=true",
                "update-index",
                "--force-write-index",
            ),
        ),
        (("update-index", "b/f3"),),
        (("rm", "-q", "--cached", "-r", "b"),),
    ],
)
def test_the_entries_end_found_by_search_is_the_walked_one(
    tmp_path: Path, setup: tuple[tuple[str, ...], ...]
) -> None:
    # names that spell the cache tree's signature must not fool the search
    files = {f"b/f{n}": f"{n}\n" for n in range(40)}
    files.update({"TREE": "x\n", "a/TREE/TREE": "y\n", "TREE.md": "z\n"})
    repo = make_repo(tmp_path / "repo", files)
    for args in setup:
        git(repo, *args)
    (repo / "b/f3").write_text("changed\n")
    data = _index(repo)
    version, count = struct.unpack_from(">II", data, 4)
    found = indexfile._end_before_tree(data)
    assert found is not None or setup  # git's plain layout is found without a walk
    assert found is None or found == indexfile._walk(data, version, count)
    assert indexfile.layout(data).entries_end == indexfile._walk(data, version, count)


def test_the_patched_index_keeps_its_permissions(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    index = repo / ".git" / "index"
    index.chmod(0o664)  # what core.sharedRepository=group leaves
    before = _index(repo)
    Workspace.open(repo).apply([{"old_string": "a\n", "new_string": "b\n"}], path="a.txt")
    assert _index(repo) != before  # patched in place (no add or delete: not libgit2's write)
    assert index.stat().st_mode & 0o777 == 0o664
    assert_clean(repo)
