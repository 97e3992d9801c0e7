"""A land killed while it held its worktree's locks, and a gitpatch call from another worktree.

Owner records live in the common git directory, the land journal in each worktree's own. A
call from a linked worktree (another agent's, a session's) recovers every dead owner's record;
freeing a killed land's ``index.lock`` and branch lock there, without putting back what it wrote
ahead, let the person's ``git commit`` in the land's worktree commit the agent's change, and the
next call in that worktree then put the files back: the agent's change staged as reverted.
Now the other worktree frees the rest (the notes lock: its own writes go on) and leaves those
two locks to the land's own worktree, whose next call settles the journal; there, the store's
recovery leaves the ``index.lock`` and the working tree's recovery adopts it, so it is never
free while what the land wrote ahead is on disk.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench import landrace
from gitpatch import Workspace
from gitpatch.checkout.worktree import WorkingTree
from gitpatch.errors import ConcurrentUpdate
from gitpatch.safety.owners import operation, read_records, record_owners
from gitpatch.store import Store
from tests.safety.proofkit import killed_at

pytestmark = pytest.mark.slow

AGENT = """
import sys
from gitpatch import Workspace
Workspace.open(sys.argv[1], mode="auto").apply(
    "*** Begin Patch\\n*** Update File: a.txt\\n@@\\n one\\n-two\\n+TWO (agent)\\n three\\n"
    "*** End Patch\\n"
)
"""
POINTS = ("file.renamed", "index.written", "refs.locked")


def _git(at: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real git in ``at``, as the person (landrace's identity), not raising."""
    return landrace.git(at, *args, check=False)


def _one_repo(tmp_path: Path, **files: str) -> Path:
    """A repository on ``work`` with a.txt (and ``files``) committed."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "work")
    for name, text in {"a.txt": "one\ntwo\nthree\n", **files}.items():
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    assert _git(repo, "commit", "-qm", "start").returncode == 0
    return repo


def _two_worktrees(tmp_path: Path) -> tuple[Path, Path]:
    repo, linked = _one_repo(tmp_path, **{"b.txt": "bee\n"}), tmp_path / "linked"
    assert _git(repo, "worktree", "add", "-q", "-b", "other", str(linked)).returncode == 0
    return repo, linked


@pytest.mark.parametrize("point", POINTS)
def test_a_call_from_another_worktree_leaves_a_killed_land_to_its_own(
    tmp_path: Path, point: str
) -> None:
    repo, linked = _two_worktrees(tmp_path)
    start = _git(repo, "rev-parse", "work").stdout.strip()

    code = killed_at([sys.executable, "-c", AGENT, str(repo)], dict(os.environ), point)
    assert code == -9, f"the land never reached {point}"
    assert (repo / ".git" / "gitpatch" / "journal.json").exists()

    # another agent's calls in the linked worktree: a read, and an edit of its own (the
    # killed land's notes lock must not hold it up)
    other = Workspace.open(linked, mode="auto")
    assert other.read("b.txt").content == "bee\n"
    other.apply("*** Begin Patch\n*** Update File: b.txt\n@@\n-bee\n+BEE\n*** End Patch\n")
    assert _git(linked, "show", "other:b.txt").stdout == "BEE\n"

    # the land's own worktree: still locked, so the person's commit cannot take what was
    # written ahead
    assert (repo / ".git" / "index.lock").exists()
    person = _git(repo, "commit", "-qam", "the person's commit")
    assert person.returncode != 0
    assert _git(repo, "rev-parse", "work").stdout.strip() == start

    # its next call settles the journal: nothing staged, nothing reverted, no lock left
    Workspace.open(repo, mode="auto")
    assert not (repo / ".git" / "index.lock").exists()
    assert not (repo / ".git" / "gitpatch" / "journal.json").exists()
    assert _git(repo, "diff", "--cached", "--stat").stdout == ""
    assert _git(repo, "status", "--porcelain").stdout == ""
    assert (repo / "a.txt").read_text() == _git(repo, "show", "work:a.txt").stdout
    locks = [p for p in (repo / ".git").rglob("*.lock")]
    assert locks == []
    assert _git(repo, "fsck", "--strict").returncode == 0


@pytest.mark.parametrize("point", POINTS)
def test_the_lands_own_worktree_adopts_its_index_lock_never_freeing_it(
    tmp_path: Path, point: str
) -> None:
    """In the land's own worktree the store's recovery settles the dead owner's refs and
    leaves its ``index.lock``; a person's ``git commit`` between that and the working tree's
    recovery still fails, and the working tree's recovery takes the lock over, puts back what
    was written ahead and frees it."""
    repo = _one_repo(tmp_path)
    start = _git(repo, "rev-parse", "work").stdout.strip()
    code = killed_at([sys.executable, "-c", AGENT, str(repo)], dict(os.environ), point)
    assert code == -9, f"the land never reached {point}"

    store = Store.open(repo)
    store.recover()  # the first of a call's two recovery steps
    assert (repo / ".git" / "index.lock").exists()
    assert _git(repo, "commit", "-qam", "the person's commit").returncode != 0
    assert _git(repo, "rev-parse", "work").stdout.strip() == start

    tree = WorkingTree.of(store)
    assert tree is not None and tree.recover()  # the second: the journal settled
    assert not (repo / ".git" / "index.lock").exists()
    assert [o for _path, o in record_owners(str(repo / ".git")) if o.dead()] == []
    assert _git(repo, "status", "--porcelain").stdout == ""
    assert (repo / "a.txt").read_text() == "one\ntwo\nthree\n"
    assert _git(repo, "commit", "--allow-empty", "-qm", "after").returncode == 0
    assert _git(repo, "fsck", "--strict").returncode == 0


def test_a_land_killed_while_its_refs_commit_is_rolled_forward_by_another_worktree(
    tmp_path: Path,
) -> None:
    """Killed inside the ref transaction's commit (the notes ref moved, the branch not): the
    transaction had begun to commit, so another worktree's call finishes it at once, before
    its own write moves the notes ref on; the land's worktree then rolls its files forward."""
    repo, linked = _two_worktrees(tmp_path)
    code = killed_at(
        [sys.executable, "-c", AGENT, str(repo)], dict(os.environ), "refs.partial.last"
    )
    assert code == -9
    other = Workspace.open(linked, mode="auto")
    other.apply("*** Begin Patch\n*** Update File: b.txt\n@@\n-bee\n+BEE\n*** End Patch\n")
    assert "TWO (agent)" in _git(repo, "show", "work:a.txt").stdout
    Workspace.open(repo, mode="auto")
    assert (repo / "a.txt").read_text() == "one\nTWO (agent)\nthree\n"
    assert _git(repo, "status", "--porcelain").stdout == ""
    assert _git(repo, "fsck", "--strict").returncode == 0


def test_a_land_killed_in_a_worktree_whose_folder_is_missing_keeps_its_index_locked(
    tmp_path: Path,
) -> None:
    """The person moved a linked worktree's folder by hand after its land was killed (git
    calls it prunable; it may also be an unmounted drive): the main worktree's call frees the
    branch lock but keeps that worktree's ``index.lock``, so the person's ``git commit`` there,
    once the folder is found again, cannot commit what the land wrote ahead; the worktree's own
    call then settles it."""
    repo, linked = _two_worktrees(tmp_path)
    code = killed_at([sys.executable, "-c", AGENT, str(linked)], dict(os.environ), "index.written")
    assert code == -9
    moved = tmp_path / "moved"
    shutil.move(linked, moved)
    Workspace.open(repo, mode="auto").read("a.txt")
    admin = repo / ".git" / "worktrees" / "linked"
    assert (admin / "index.lock").exists()
    assert not (repo / ".git" / "refs" / "heads" / "other.lock").exists()
    assert _git(moved, "worktree", "repair").returncode == 0
    assert _git(moved, "commit", "-qam", "the person's commit").returncode != 0
    Workspace.open(moved, mode="auto")
    assert not (admin / "index.lock").exists()
    assert _git(moved, "status", "--porcelain").stdout == ""
    assert (moved / "b.txt").read_text() == _git(moved, "show", "other:b.txt").stdout
    assert [o for _path, o in record_owners(str(repo / ".git")) if o.dead()] == []


def test_a_lock_a_live_owner_took_over_is_never_freed_by_a_recovery(tmp_path: Path) -> None:
    """Two records prove one ``index.lock`` (an owner killed right after it took the lock over
    from a dead land, before dropping the dead one's proof): while the live one holds it, a
    recovery settling the dead one leaves it."""
    repo = _one_repo(tmp_path)
    code = killed_at([sys.executable, "-c", AGENT, str(repo)], dict(os.environ), "index.written")
    assert code == -9
    gitdir = str(repo / ".git")
    lock = os.path.join(gitdir, "index.lock")
    dead = [r for r in read_records(gitdir) if r.owner.dead()]
    assert len(dead) == 1 and dead[0].owns(lock)
    with operation(gitdir) as live:
        live.announce([lock])
        os.link(dead[0].proof(lock), live.proof(lock))  # proved by both, as the kill leaves it
        (repo / ".git" / "gitpatch" / "journal.json").unlink()  # as if the live one settled it
        Store.open(repo).recover()
        assert os.path.exists(lock) and live.owns(lock)
        assert _git(repo, "add", "a.txt").returncode != 0
        os.unlink(lock)
        live.clear()


def test_a_land_killed_in_a_pruned_worktree_frees_its_locks(tmp_path: Path) -> None:
    """The person removed a linked worktree's folder after its land was killed, and git
    pruned it: the main worktree's call settles the record and frees the branch lock."""
    repo, linked = _two_worktrees(tmp_path)
    code = killed_at([sys.executable, "-c", AGENT, str(linked)], dict(os.environ), "index.written")
    assert code == -9
    shutil.rmtree(linked)
    assert _git(repo, "worktree", "prune").returncode == 0  # its admin folder goes too
    Workspace.open(repo, mode="auto").read("a.txt")
    locks = [p for p in (repo / ".git").rglob("*.lock") if p.parent.name != "gitpatch"]
    assert locks == []  # git's lock files (gitpatch's own flock files stay, unlocked)
    assert _git(repo, "update-ref", "refs/heads/other", "work").returncode == 0
    assert [o for _path, o in record_owners(str(repo / ".git")) if o.dead()] == []


SESSION_AGENT = """
import sys
from gitpatch import Workspace
ws = Workspace.open(sys.argv[1], mode="auto", session="s1")
ws.run(["true"])  # the session's own worktree, made
ws.apply("*** Begin Patch\\n*** Update File: a.txt\\n@@\\n-two\\n+TWO\\n*** End Patch\\n")
"""


@pytest.mark.parametrize("then", ["reopen", "end"])
def test_a_land_killed_in_a_sessions_worktree_is_settled_by_that_session(
    tmp_path: Path, then: str
) -> None:
    """A session's land killed in its own worktree on a protected branch: another session's
    edits go on, the person's checkout and uncommitted file are untouched, and opening the
    session again (or ending it from another session) settles the land's locks there."""
    repo = _one_repo(tmp_path)
    _git(repo, "branch", "-m", "main")
    (repo / "mine.txt").write_text("the person's, uncommitted\n")
    code = killed_at(
        [sys.executable, "-c", SESSION_AGENT, str(repo)], dict(os.environ), "index.written"
    )
    assert code == -9
    other = Workspace.open(repo, mode="auto", session="s2")
    other.apply("*** Begin Patch\n*** Update File: a.txt\n@@\n-two\n+TWO (s2)\n*** End Patch\n")
    if then == "reopen":
        again = Workspace.open(repo, mode="auto", session="s1")
        assert again.read("a.txt").content == "one\ntwo\nthree\n"
    else:
        assert "Ended session s1" in other.end_session("s1", force=True)
    git = repo / ".git"
    locks = [p for p in git.rglob("*.lock") if p.relative_to(git).parts[0] != "gitpatch"]
    assert locks == []  # git's lock files (gitpatch's own flock files stay, unlocked)
    assert _git(repo, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip() == "main"
    assert _git(repo, "status", "--porcelain").stdout == "?? mine.txt\n"
    assert (repo / "mine.txt").read_text() == "the person's, uncommitted\n"


def test_an_adoption_waiting_for_the_stores_recovery_says_a_killed_land_is_settled(
    tmp_path: Path,
) -> None:
    """The working tree's recovery runs before the store's has settled the dead land's ref
    moves (it was killed after this call's store recovery began): the adoption refuses,
    ``concurrent_update``, saying a killed gitpatch land is being settled and that the next
    call settles it (no "another git process": none is running), changing nothing; the next
    call does settle it."""
    repo = _one_repo(tmp_path)
    code = killed_at([sys.executable, "-c", AGENT, str(repo)], dict(os.environ), "index.written")
    assert code == -9
    lock = repo / ".git" / "index.lock"
    held = lock.read_bytes()
    tree = WorkingTree.of(Store.open(repo))
    assert tree is not None
    with pytest.raises(ConcurrentUpdate) as refused:
        tree.recover()  # the second of a call's two steps, without the first
    error = refused.value
    assert error.code == "concurrent_update"
    assert error.message == (
        f"a killed gitpatch land still holds {lock}: it is being settled, its branch first, "
        "then what it wrote to the working tree"
    )
    assert "another git process" not in error.message
    assert error.hint == (
        "Retry the call: the next one settles the killed land and goes on. Nothing was changed."
    )
    assert lock.read_bytes() == held and (repo / ".git/gitpatch/journal.json").exists()
    assert [o for _path, o in record_owners(str(repo / ".git")) if o.dead()] != []
    Workspace.open(repo, mode="auto")  # the next call: the store's step, then the tree's
    assert not lock.exists() and not (repo / ".git/gitpatch/journal.json").exists()
    assert _git(repo, "status", "--porcelain").stdout == ""
    assert (repo / "a.txt").read_text() == "one\ntwo\nthree\n"
