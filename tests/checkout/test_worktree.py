"""WorkingTree: landing commits on disk, crash recovery, dirty checks — on real repositories."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from gitpatch.checkout.worktree import Journal, WorkingTree
from gitpatch.errors import ConcurrentUpdate, FilesystemError, RepositoryError
from gitpatch.store import Store
from tests.gitkit import git, status_porcelain
from tests.ownerkit import killed_holding

SIG = pygit2.Signature("Test Person", "person@example.com", 1767225600, 0)


def commit_files(repo: Path, files: dict[str, str | None], message: str = "c") -> str:
    """Commit ``files`` (None deletes) on top of HEAD with the git binary; return the id."""
    for name, content in files.items():
        full = repo / name
        if content is None:
            git(repo, "rm", "-q", name)
        else:
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_text(content)
            git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def build_commit(
    repo: pygit2.Repository,
    parent: str,
    files: dict[str, str | None],
    exec_paths: tuple[str, ...] = (),
) -> str:
    """A commit on top of ``parent`` built in memory, touching neither disk nor index."""
    index = pygit2.Index()
    index.read_tree(repo[parent].peel(pygit2.Tree))
    for name, content in files.items():
        if content is None:
            index.remove(name)
        else:
            mode = (
                pygit2.enums.FileMode.BLOB_EXECUTABLE
                if name in exec_paths
                else pygit2.enums.FileMode.BLOB
            )
            index.add(pygit2.IndexEntry(name, repo.create_blob(content.encode()), mode))
    tree = index.write_tree(repo)
    return str(repo.create_commit(None, SIG, SIG, "built", tree, [pygit2.Oid(hex=parent)]))


def mover(repo: pygit2.Repository, ref: str, old: str, new: str):  # type: ignore[no-untyped-def]
    """A land's ``move_ref``: the compare-and-swap, the write-ahead once it passed, the move
    (as ``Store.update_refs`` with ``while_locked``, without its locks)."""

    def move(ahead: Callable[[], None] = lambda: None) -> None:
        reference = repo.references[ref]
        if str(reference.target) != old:
            raise ConcurrentUpdate("moved")
        ahead()
        reference.set_target(pygit2.Oid(hex=new), "test land")

    return move


@pytest.fixture
def setup(git_repo: Path) -> tuple[Path, pygit2.Repository, WorkingTree, str]:
    base = commit_files(git_repo, {"a.txt": "a\n", "dir/b.txt": "b\n", "keep.txt": "k\n"})
    repo = pygit2.Repository(str(git_repo))
    return git_repo, repo, WorkingTree(Store(repo)), base


def test_land_writes_changed_paths_and_index(setup) -> None:  # type: ignore[no-untyped-def]
    path, repo, wt, base = setup
    new = build_commit(
        repo,
        base,
        {"a.txt": "A\n", "dir/b.txt": None, "new/deep/c.txt": "c\n", "run.sh": "x\n"},
        exec_paths=("run.sh",),
    )
    paths = ["a.txt", "dir/b.txt", "new/deep/c.txt", "run.sh"]
    wt.land(base, new, paths, mover(repo, "refs/heads/main", base, new), ref="refs/heads/main")
    assert (path / "a.txt").read_text() == "A\n"
    assert not (path / "dir").exists()  # emptied directory pruned
    assert (path / "new/deep/c.txt").read_text() == "c\n"
    assert os.stat(path / "run.sh").st_mode & stat.S_IXUSR
    assert git(path, "rev-parse", "HEAD").strip() == new
    assert status_porcelain(path) == ""
    assert git(path, "diff-files", "--name-only") == ""  # stat data in the index is fresh
    assert not wt.journal_path.exists()
    assert not [p for p in path.rglob("*gitpatch-tmp*")]


def test_land_move_ref_failure_changes_nothing(setup) -> None:  # type: ignore[no-untyped-def]
    path, repo, wt, base = setup
    new = build_commit(repo, base, {"a.txt": "A\n"})
    index_before = (path / ".git/index").read_bytes()

    def lose(_ahead: Callable[[], None]) -> None:
        raise ConcurrentUpdate("lost the race")

    with pytest.raises(ConcurrentUpdate):
        wt.land(base, new, ["a.txt"], lose, ref="refs/heads/main")
    assert (path / "a.txt").read_text() == "a\n"
    assert (path / ".git/index").read_bytes() == index_before
    assert git(path, "rev-parse", "HEAD").strip() == base
    assert not wt.journal_path.exists()


def test_land_replaces_directory_with_file_after_delete(setup) -> None:  # type: ignore[no-untyped-def]
    path, repo, wt, base = setup
    new = build_commit(repo, base, {"dir/b.txt": None, "dir": "now a file\n"})
    wt.land(
        base,
        new,
        ["dir/b.txt", "dir"],
        mover(repo, "refs/heads/main", base, new),
        ref="refs/heads/main",
    )
    assert (path / "dir").read_text() == "now a file\n"
    assert status_porcelain(path) == ""


def test_recover_rolls_forward_only_old_content(setup) -> None:  # type: ignore[no-untyped-def]
    path, repo, wt, base = setup
    new = build_commit(repo, base, {"a.txt": "A\n", "keep.txt": "K\n", "add.txt": "n\n"})
    # Simulate a crash after the ref moved: journal written, ref moved, no file written; then a
    # person edited keep.txt before the next call.
    wt.state_dir.mkdir(exist_ok=True)
    paths = ("a.txt", "keep.txt", "add.txt")
    wt.journal_path.write_text(Journal("refs/heads/main", base, new, paths).to_json())
    repo.references["refs/heads/main"].set_target(pygit2.Oid(hex=new))
    (path / "keep.txt").write_text("person\n")
    (path / ".a.txt.1.2.gitpatch-tmp").write_text("half")
    assert wt.recover() is True
    assert (path / "a.txt").read_text() == "A\n"
    assert (path / "add.txt").read_text() == "n\n"
    assert (path / "keep.txt").read_text() == "person\n"
    assert not (path / ".a.txt.1.2.gitpatch-tmp").exists()
    assert not wt.journal_path.exists()
    assert status_porcelain(path) == " M keep.txt\n"
    assert wt.recover() is False


def test_recover_discards_journal_when_ref_did_not_move(setup) -> None:  # type: ignore[no-untyped-def]
    path, repo, wt, base = setup
    new = build_commit(repo, base, {"a.txt": "A\n"})
    wt.state_dir.mkdir(exist_ok=True)
    wt.journal_path.write_text(Journal("refs/heads/main", base, new, ("a.txt",)).to_json())
    assert wt.recover() is True
    assert (path / "a.txt").read_text() == "a\n"
    assert not wt.journal_path.exists()
    assert status_porcelain(path) == ""


def test_recover_drops_truncated_journal(setup) -> None:  # type: ignore[no-untyped-def]
    path, repo, wt, base = setup
    wt.state_dir.mkdir(exist_ok=True)
    wt.journal_path.write_text('{"ref": "refs/hea')
    assert wt.recover() is True
    assert not wt.journal_path.exists()
    assert status_porcelain(path) == ""


def test_only_a_dead_owners_locks_are_removed(setup) -> None:  # type: ignore[no-untyped-def]
    path, repo, wt, base = setup
    ours = [path / ".git/index.lock", path / ".git/refs/heads/main.lock"]
    killed_holding(path / ".git", ours)
    unclaimed = path / ".git/HEAD.lock"  # a person's git, say: an hour old, still not ours
    unclaimed.write_text("")
    past = time.time() - 3600
    os.utime(unclaimed, (past, past))
    Store(repo).recover()
    assert not any(lock.exists() for lock in ours)
    assert unclaimed.exists()
    unclaimed.unlink()


def test_modified_reports_only_differing_paths(setup) -> None:  # type: ignore[no-untyped-def]
    path, repo, wt, base = setup
    (path / "a.txt").write_text("edited\n")
    (path / "dir/b.txt").unlink()
    (path / "untracked.txt").write_text("u\n")
    (path / "sub").mkdir()
    (path / "sub" / "inner.txt").write_text("i\n")
    (path / "empty").mkdir()
    asked = ["a.txt", "dir/b.txt", "keep.txt", "untracked.txt", "absent.txt", "sub", "empty"]
    assert wt.modified(base, asked) == ["a.txt", "dir/b.txt", "untracked.txt", "sub"]
    # The second call must agree (it may use the stat cache).
    assert wt.modified(base, asked) == ["a.txt", "dir/b.txt", "untracked.txt", "sub"]
    (path / "a.txt").write_text("a\n")
    assert wt.modified(base, ["a.txt"]) == []


def test_modified_sees_same_size_rewrite_after_cache(setup) -> None:  # type: ignore[no-untyped-def]
    path, repo, wt, base = setup
    assert wt.modified(base, ["a.txt"]) == []
    (path / "a.txt").write_text("b\n")
    assert wt.modified(base, ["a.txt"]) == ["a.txt"]


def test_bare_repository_has_no_working_tree(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "bare.git"), bare=True)
    with pytest.raises(RepositoryError):
        WorkingTree(Store(repo))


def test_land_without_ref_uses_head(setup) -> None:  # type: ignore[no-untyped-def]
    path, repo, wt, base = setup
    new = build_commit(repo, base, {"a.txt": "A\n"})
    wt.land(base, new, ["a.txt"], mover(repo, "refs/heads/main", base, new))
    assert (path / "a.txt").read_text() == "A\n"
    assert status_porcelain(path) == ""


def test_land_verify_refuses_disk_changed_since_old(setup) -> None:  # type: ignore[no-untyped-def]
    path, repo, wt, base = setup
    new = build_commit(repo, base, {"a.txt": "A\n"})
    (path / "a.txt").write_text("someone else\n")
    index_before = (path / ".git/index").read_bytes()
    move = mover(repo, "refs/heads/main", base, new)
    with pytest.raises(ConcurrentUpdate) as err:
        wt.land(base, new, ["a.txt"], move, ref="refs/heads/main", verify=True)
    assert err.value.reason == "disk"
    assert (path / "a.txt").read_text() == "someone else\n"
    assert git(path, "rev-parse", "HEAD").strip() == base
    assert (path / ".git/index").read_bytes() == index_before
    assert not wt.journal_path.exists()


def test_reading_lock_is_shared_and_released(setup) -> None:  # type: ignore[no-untyped-def]
    path, repo, wt, base = setup
    other = WorkingTree(Store(repo))
    with wt.reading(), other.reading():
        pass  # two readers at once
    new = build_commit(repo, base, {"a.txt": "A\n"})
    wt.land(base, new, ["a.txt"], mover(repo, "refs/heads/main", base, new))
    assert (path / "a.txt").read_text() == "A\n"


def test_an_error_after_the_branch_moved_keeps_the_land(setup) -> None:  # type: ignore[no-untyped-def]
    """A ref transaction that moves the branch and then fails (its owner record, a check after
    the commit) must not put the disk back: the branch holds the change, and a disk put back
    under it would be the agent's change staged as reverted, ready for `git commit -a`."""
    path, repo, wt, base = setup
    new = build_commit(repo, base, {"a.txt": "A\n"})
    move = mover(repo, "refs/heads/main", base, new)

    def move_then_fail(ahead: Callable[[], None]) -> None:
        move(ahead)
        raise OSError("the owner record could not be cleared")

    wt.land(base, new, ["a.txt"], move_then_fail, ref="refs/heads/main")
    assert git(path, "rev-parse", "HEAD").strip() == new
    assert (path / "a.txt").read_text() == "A\n"
    assert status_porcelain(path) == ""  # no revert staged or in the working tree
    assert not wt.journal_path.exists()
    assert not list((path / ".git/gitpatch").glob("index.*.before"))


def test_a_lost_race_puts_back_and_keeps_a_save_made_meanwhile(setup) -> None:  # type: ignore[no-untyped-def]
    """Files go before the branch: a person who saves the landed file before the land learns
    that its compare-and-swap was lost keeps their line; only the change is taken back out."""
    path, repo, wt, _base = setup
    base = commit_files(path, {"a.txt": "one\ntwo\nthree\nfour\nfive\n"})
    new = build_commit(repo, base, {"a.txt": "ONE\ntwo\nthree\nfour\nfive\n"})
    index_before = (path / ".git/index").read_bytes()

    def save_then_lose(ahead: Callable[[], None]) -> None:
        ahead()  # the transaction wrote ahead under its locks, then failed to commit
        assert (path / "a.txt").read_text().startswith("ONE\n")  # written ahead
        with open(path / "a.txt", "a") as fh:
            fh.write("six\n")
        raise ConcurrentUpdate("lost the race")

    with pytest.raises(ConcurrentUpdate):
        wt.land(base, new, ["a.txt"], save_then_lose, ref="refs/heads/main")
    assert (path / "a.txt").read_text() == "one\ntwo\nthree\nfour\nfive\nsix\n"
    assert (path / ".git/index").read_bytes() == index_before
    assert git(path, "rev-parse", "HEAD").strip() == base
    assert status_porcelain(path).strip() == "M a.txt"
    assert not wt.journal_path.exists()


def test_a_write_failure_before_the_branch_moves_puts_back_and_changes_nothing(setup) -> None:  # type: ignore[no-untyped-def]
    """Files and index go first: a file that cannot be written (a directory still holding an
    untracked file where a file goes) refuses the land after ``dir/b.txt`` was deleted; that
    delete is put back, the index is the same bytes, the branch never moved."""
    path, repo, wt, base = setup
    new = build_commit(repo, base, {"dir/b.txt": None, "dir": "now a file\n"})
    (path / "dir/untracked.txt").write_text("keeps the directory alive\n")
    index_before = (path / ".git/index").read_bytes()
    move = mover(repo, "refs/heads/main", base, new)
    with pytest.raises(FilesystemError) as err:
        wt.land(base, new, ["dir/b.txt", "dir"], move, ref="refs/heads/main")
    assert err.value.code == "filesystem_error" and err.value.hint
    assert not wt.journal_path.exists()
    assert git(path, "rev-parse", "HEAD").strip() == base
    assert (path / "dir/b.txt").read_text() == "b\n"
    assert (path / ".git/index").read_bytes() == index_before
    assert status_porcelain(path).strip() == "?? dir/untracked.txt"
    (path / "dir/untracked.txt").unlink()
    wt.land(base, new, ["dir/b.txt", "dir"], move, ref="refs/heads/main")
    assert (path / "dir").read_text() == "now a file\n"
    assert status_porcelain(path) == ""


def _journal_with_note(
    base: str, new: str, before: dict[str, str] | None, after: dict[str, str]
) -> Journal:
    notes = ((new, json.dumps(before, sort_keys=True), json.dumps(after, sort_keys=True)),)
    return Journal("refs/heads/main", base, new, ("a.txt",), notes)


def _note(path: Path, commit: str) -> dict[str, str] | None:
    shown = git(path, "notes", "--ref", "gitpatch", "show", commit, check=False)
    return json.loads(shown) if shown else None


def test_recover_writes_notes_a_kill_separated_from_their_ref(setup) -> None:  # type: ignore[no-untyped-def]
    """libgit2 commits a ref transaction one lock at a time: the branch may move, its note not."""
    path, repo, wt, base = setup
    new = build_commit(repo, base, {"a.txt": "A\n"})
    note = {"id": "abc123abc123", "status": "applied", "tool": "patch"}
    wt.state_dir.mkdir(exist_ok=True)
    wt.journal_path.write_text(_journal_with_note(base, new, None, note).to_json())
    repo.references["refs/heads/main"].set_target(pygit2.Oid(hex=new))
    assert wt.recover() is True
    assert _note(path, new) == note
    assert (path / "a.txt").read_text() == "A\n"
    assert status_porcelain(path) == ""


def test_recover_removes_a_note_whose_ref_did_not_move(setup) -> None:  # type: ignore[no-untyped-def]
    """The other order: the notes ref moved, the branch did not; the new note goes away."""
    path, repo, wt, base = setup
    new = build_commit(repo, base, {"a.txt": "A\n"})
    note = {"id": "abc123abc123", "status": "applied"}
    Store(repo).update_note(pygit2.Oid(hex=new), lambda _old: note)
    wt.state_dir.mkdir(exist_ok=True)
    wt.journal_path.write_text(_journal_with_note(base, new, None, note).to_json())
    assert wt.recover() is True
    assert _note(path, new) is None
    assert (path / "a.txt").read_text() == "a\n"
    assert status_porcelain(path) == ""


def test_recover_restores_the_previous_note_when_the_ref_did_not_move(setup) -> None:  # type: ignore[no-untyped-def]
    path, repo, wt, base = setup
    new = build_commit(repo, base, {"a.txt": "A\n"})
    before, after = {"status": "proposed"}, {"status": "approved"}
    Store(repo).update_note(pygit2.Oid(hex=new), lambda _old: after)
    wt.state_dir.mkdir(exist_ok=True)
    wt.journal_path.write_text(_journal_with_note(base, new, before, after).to_json())
    assert wt.recover() is True
    assert _note(path, new) == before


def test_recover_keeps_the_note_when_a_person_committed_on_top(setup) -> None:  # type: ignore[no-untyped-def]
    """The land finished the ref; a commit made since moved it further: the note is right."""
    path, repo, wt, base = setup
    new = build_commit(repo, base, {"a.txt": "A\n"})
    later = build_commit(repo, new, {"keep.txt": "K\n"})
    note = {"status": "applied"}
    wt.state_dir.mkdir(exist_ok=True)
    wt.journal_path.write_text(_journal_with_note(base, new, None, note).to_json())
    repo.references["refs/heads/main"].set_target(pygit2.Oid(hex=later))
    assert wt.recover() is True
    assert _note(path, new) == note


def test_land_journals_the_notes_that_move_with_the_ref(setup) -> None:  # type: ignore[no-untyped-def]
    path, repo, wt, base = setup
    new = build_commit(repo, base, {"a.txt": "A\n"})
    seen: list[Journal] = []

    def move(ahead: Callable[[], None]) -> None:
        seen.append(Journal.from_json(wt.journal_path.read_text()))
        mover(repo, "refs/heads/main", base, new)(ahead)

    wt.land(base, new, ["a.txt"], move, ref="refs/heads/main", notes={new: (None, {"s": "x"})})
    assert seen[0].notes == ((new, "null", json.dumps({"s": "x"})),)
    assert not wt.journal_path.exists()


def test_a_land_that_first_finishes_a_killed_one_still_holds_index_lock(setup) -> None:  # type: ignore[no-untyped-def]
    # a journal whose ref moved: the next land rolls it forward (its index written) and then
    # lands its own change, index.lock held to the end (it was given up after the first write)
    path, repo, wt, base = setup
    first = build_commit(repo, base, {"a.txt": "A\n"})
    mover(repo, "refs/heads/main", base, first)()
    wt.state_dir.mkdir(exist_ok=True)
    Journal("refs/heads/main", base, first, ("a.txt",)).write(wt.journal_path, durable=False)
    second = build_commit(repo, first, {"keep.txt": "K\n"})
    seen: list[bool] = []

    def move(ahead: Callable[[], None]) -> None:
        seen.append((path / ".git/index.lock").exists())
        mover(repo, "refs/heads/main", first, second)(ahead)

    wt.land(first, second, ["keep.txt"], move, ref="refs/heads/main")
    assert seen == [True]
    assert (path / "a.txt").read_text() == "A\n" and (path / "keep.txt").read_text() == "K\n"
    assert status_porcelain(path) == "" and not (path / ".git/index.lock").exists()
