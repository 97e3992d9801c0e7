"""A land in git's own order: files, then the index, then the branch last (issue 26, item 1).

The files and the index are written while the ref transaction holds the branch's lock, its
compare-and-swap already checked: a kill there leaves them ahead of a branch that has not
moved (and its ref lock, proved in the owner record); recovery frees the lock and puts them
back to the old commit. Killed after the branch moved, recovery completes it. A land whose
compare-and-swap is lost (another writer moved the branch after the land read it) writes
nothing. A write that fails under the locks puts back what was written ahead at once: the
files as they were, the index file byte for byte; killed while putting back, the next call
finishes putting back.

Each land runs in a forked process through ``WorkingTree.land`` with the store's real ref
transaction; it learns the crash points it passes (``GITPATCH_CRASH_LOG``), then is killed at
each (``GITPATCH_CRASH_AT``, ``os._exit``). Checked with the real git binary.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from gitpatch.errors import ConcurrentUpdate
from gitpatch.porcelain.workspace import Workspace
from tests.gitkit import git, head, make_repo, status_porcelain
from tests.safety.proofkit import disk_files, fsck_problems, tree_files

#: forked kills at every crash point: `make test-fast` leaves these out (`-m "not slow"`).
pytestmark = pytest.mark.slow

BRANCH = "refs/heads/work"
FILES = {"a.txt": "alpha\n", "dir/b.txt": "bravo\n", "keep.txt": "keep\n", "p.txt": "person\n"}
#: the land: an edit, a delete (its folder goes), an add in a new folder
CHANGE: dict[str, str | None] = {"a.txt": "ALPHA\n", "dir/b.txt": None, "new/c.txt": "charlie\n"}
#: points a land passes before its branch moves: a kill there must be put back
BEFORE_THE_MOVE = (
    "journal.written",
    "files.staged",
    "record.written",
    "refs.locked",
    "file.deleted",
    "file.kept",
    "file.renamed",
    "index.written",
)


def _commit_on(repo: Path, parent: str, files: dict[str, str | None]) -> str:
    """A commit on top of ``parent`` built in memory (neither disk nor index touched)."""
    git_repo = pygit2.Repository(str(repo))
    index = pygit2.Index()
    index.read_tree(git_repo[parent].peel(pygit2.Tree))
    for name, content in files.items():
        if content is None:
            index.remove(name)
        else:
            blob = git_repo.create_blob(content.encode())
            index.add(pygit2.IndexEntry(name, blob, pygit2.enums.FileMode.BLOB))
    sig = pygit2.Signature("Agent", "agent@example.com", 1767225600, 0)
    tree = index.write_tree(git_repo)
    return str(git_repo.create_commit(None, sig, sig, "agent", tree, [pygit2.Oid(hex=parent)]))


def _land(repo: str, old: str, new: str, env: dict[str, str]) -> None:
    """The child: land ``old`` -> ``new`` through the store's ref transaction; exit 0 when it
    landed, 4 when its compare-and-swap was lost, 3 on any other error."""
    os.environ.update(env)
    try:
        from gitpatch.checkout.worktree import WorkingTree
        from gitpatch.store import Store

        store = Store.open(repo)
        tree = WorkingTree(store)

        def move(ahead: Callable[[], None]) -> None:
            moves = [(BRANCH, pygit2.Oid(hex=new), pygit2.Oid(hex=old))]
            store.update_refs(moves, "agent land", while_locked=ahead)

        tree.land(old, new, list(CHANGE), move, ref=BRANCH)
    except ConcurrentUpdate:
        os._exit(4)
    except BaseException:
        os._exit(3)
    os._exit(0)


def _run(repo: Path, old: str, new: str, env: dict[str, str]) -> int:
    child = multiprocessing.get_context("fork").Process(
        target=_land, args=(str(repo), old, new, env)
    )
    child.start()
    child.join()
    assert child.exitcode is not None
    return child.exitcode


def _settled(repo: Path, where: str, untracked: str = "") -> str:
    """Recover as the next call does; the disk and index must then be the branch's commit
    (and the file ``untracked``, when given)."""
    Workspace.open(repo)
    tip = head(repo, BRANCH)
    disk = {p: b for p, b in disk_files(repo).items() if p != untracked}
    assert disk == tree_files(repo, tip), f"disk is not {tip[:12]} after {where}"
    status = status_porcelain(repo).replace(f"?? {untracked}\n" if untracked else "\0", "")
    assert status == "", f"git status after {where}:\n{status}"
    assert git(repo, "diff", "--cached", "--name-only") == "", f"staged after {where}"
    left = [
        p.name
        for p in (repo / ".git").rglob("*")
        if p.name in ("journal.json", "index.lock")
        or p.name.endswith((".before", ".scratch"))
        or (p.name.endswith(".lock") and "refs" in p.parts)  # the branch's ref lock
    ]
    assert not left, f"left behind after {where}: {left}"
    problems = fsck_problems(repo)
    assert not problems, f"git fsck after {where}:\n{problems}"
    return tip


def _points(template: Path, tmp_path: Path, old: str, new: str, code: int) -> list[str]:
    log = tmp_path / "points.log"
    done = tmp_path / "done"
    shutil.copytree(template, done, symlinks=True)
    assert _run(done, old, new, {"GITPATCH_CRASH_LOG": str(log)}) == code
    return log.read_text().split()


def test_a_kill_before_the_branch_moves_is_put_back_and_after_it_completed(
    tmp_path: Path,
) -> None:
    template = make_repo(tmp_path / "template", FILES)
    base = head(template, BRANCH)
    new = _commit_on(template, base, CHANGE)
    points = _points(template, tmp_path, base, new, 0)
    assert points.index("index.written:1") < points.index("refs.moved:1")  # git's order
    # the files and the index are written under the branch's ref lock, its CAS checked
    assert points.index("refs.locked:1") < points.index("file.renamed:1")
    put_back = landed = 0
    for n, point in enumerate(points):
        repo = tmp_path / f"kill{n}"
        shutil.copytree(template, repo, symlinks=True)
        assert _run(repo, base, new, {"GITPATCH_CRASH_AT": point}) == 137, point
        if point.startswith(("file.", "index.")):  # files written ahead of the branch
            assert head(repo, BRANCH) == base
            assert (repo / "a.txt").read_text() in ("alpha\n", "ALPHA\n")
        tip = _settled(repo, f"a kill at {point}")
        before = point.split(":")[0] in BEFORE_THE_MOVE
        assert tip == (base if before else new), f"a kill at {point} left the branch at {tip}"
        put_back += before
        landed += not before
    assert put_back >= 5 and landed >= 2


def test_a_lost_compare_and_swap_writes_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    base = head(repo, BRANCH)
    new = _commit_on(repo, base, CHANGE)
    (repo / "p.txt").write_text("person two\n")  # another writer moves the branch first
    git(repo, "commit", "-qam", "the person's commit")
    theirs = head(repo, BRANCH)
    index_before = (repo / ".git/index").read_bytes()
    disk_before = disk_files(repo)
    log = tmp_path / "points.log"
    assert _run(repo, base, new, {"GITPATCH_CRASH_LOG": str(log)}) == 4
    points = log.read_text().split()
    assert "refs.locked:1" in points  # lost under the lock, before anything was written
    assert not [p for p in points if p.startswith(("file.", "index.", "land.put_back"))], points
    assert head(repo, BRANCH) == theirs
    assert (repo / ".git/index").read_bytes() == index_before
    assert disk_files(repo) == disk_before
    assert _settled(repo, "a lost compare-and-swap") == theirs


def test_a_write_failure_puts_back_and_a_kill_while_putting_back_too(tmp_path: Path) -> None:
    """``new/c.txt`` cannot be written (an untracked file ``new`` is where its folder goes):
    the land fails under the ref lock after ``dir/b.txt`` and ``a.txt`` were written ahead;
    they go back at once, and a kill while they go back is put back by the next call."""
    template = make_repo(tmp_path / "template", FILES)
    base = head(template, BRANCH)
    new = _commit_on(template, base, CHANGE)
    (template / "new").write_text("the person's file\n")
    index_before = (template / ".git/index").read_bytes()
    points = _points(template, tmp_path, base, new, 3)
    assert "land.put_back:1" in points and "refs.moved:1" not in points
    after = points[points.index("file.renamed:1") + 1 :]
    assert any(p.startswith("file.") for p in after), after  # the put back's own renames
    done = tmp_path / "done"
    assert (done / ".git/index").read_bytes() == index_before
    assert _settled(done, "a failed write", "new") == base
    for n, point in enumerate(after):
        repo = tmp_path / f"kill{n}"
        shutil.copytree(template, repo, symlinks=True)
        assert _run(repo, base, new, {"GITPATCH_CRASH_AT": point}) == 137, point
        assert _settled(repo, f"a kill at {point} while putting back", "new") == base
        assert (repo / "a.txt").read_text() == "alpha\n" and (repo / "dir/b.txt").exists()
