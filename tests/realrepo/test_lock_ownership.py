"""Recovery removes only the lock files a killed gitpatch process provably took.

A process killed after announcing a lock in its owner record, and before taking it, leaves a
record naming a lock file that a person's git may take a moment later: that lock is the
person's and must survive every gitpatch call, for each kind gitpatch takes (index, HEAD,
config, packed-refs, refs).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import git, git_env, head
from tests.ownerkit import LiveHolder, killed_holding
from tests.realrepo.kit import edit, make_repo, state, status

pytestmark = pytest.mark.slow  # kills processes holding locks, and runs a person's git commit

FILES = {"f.txt": "a\n", "p.txt": "person\n"}
KINDS = ["index.lock", "HEAD.lock", "config.lock", "packed-refs.lock", "refs/heads/work.lock"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", FILES)


def announced_then_killed(gitdir: Path, locks: list[Path]) -> None:
    """A gitpatch process announced ``locks`` and was killed before it took them."""
    LiveHolder(gitdir, locks, take=False).close()


def wait_for(path: Path, proc: subprocess.Popen[bytes]) -> None:
    """Until ``path`` exists (the editor started); fails if git ended first."""
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode() if proc.stderr else "git ended")
        time.sleep(0.01)


@contextlib.contextmanager
def committing(repo: Path, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A person's ``git commit -a`` holding index.lock while its editor waits for ``go``."""
    ready, go = tmp_path / "ready", tmp_path / "go"
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import os, sys, time\n"
        f"open({str(ready)!r}, 'w').close()\n"
        f"while not os.path.exists({str(go)!r}):\n    time.sleep(0.01)\n"
        "open(sys.argv[1], 'w').write('person commit\\n')\n"
    )
    (repo / "p.txt").write_text("person\nmore\n")
    env = {**git_env(repo), "GIT_EDITOR": f"{sys.executable} {editor}"}
    proc = subprocess.Popen(["git", "commit", "-a"], cwd=repo, env=env, stderr=subprocess.PIPE)
    try:
        wait_for(ready, proc)
        yield proc, go
    finally:
        go.touch()
        proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def test_a_persons_commit_keeps_its_index_lock_after_a_killed_announcer(
    repo: Path, tmp_path: Path
) -> None:
    # the killed gitpatch process announced index.lock; the person's git took it afterwards
    announced_then_killed(repo / ".git", [repo / ".git/index.lock"])
    with committing(repo, tmp_path) as (proc, go):
        assert (repo / ".git/index.lock").exists()
        Workspace.open(repo).read("p.txt")
        assert (repo / ".git/index.lock").exists()
        go.touch()
        assert proc.wait() == 0, proc.stderr.read().decode() if proc.stderr else ""
    assert git(repo, "log", "-1", "--format=%s") == "person commit\n"
    assert git(repo, "show", "HEAD:p.txt") == "person\nmore\n"
    assert status(repo) == ""


@pytest.mark.parametrize("kind", KINDS)
def test_a_lock_only_announced_by_a_killed_process_is_never_removed(repo: Path, kind: str) -> None:
    lock = repo / ".git" / kind
    announced_then_killed(repo / ".git", [lock])
    lock.write_text(f"{head(repo)}\n")  # a person's git took it after the kill, and wrote it
    Workspace.open(repo).read("f.txt")
    assert lock.exists()


def test_a_persons_ref_lock_refuses_the_land_and_changes_nothing(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("gitpatch.store._refs.LOCK_RETRIES", 2)
    lock = repo / ".git/refs/heads/work.lock"
    announced_then_killed(repo / ".git", [lock])
    lock.write_text(f"{head(repo)}\n")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo).propose(edit("f.txt", "a", "A"))
    assert err.value.code == "concurrent_update" and str(lock) in err.value.message
    assert lock.exists()
    lock.unlink()
    assert state(repo) == before


def test_every_lock_kind_a_killed_process_provably_took_is_removed(repo: Path) -> None:
    locks = [repo / ".git" / kind for kind in KINDS]
    killed_holding(repo / ".git", locks)
    assert all(lock.exists() for lock in locks)
    base = head(repo)
    res = Workspace.open(repo).propose(edit("f.txt", "a", "A"))
    assert not any(lock.exists() for lock in locks)
    assert head(repo) == res.version != base and status(repo) == ""
    assert not list((repo / ".git/gitpatch/owners").glob("*.proof"))


def test_a_proved_lock_is_the_file_itself_not_its_name(repo: Path) -> None:
    """A lock the dead owner took and released, then taken again by git, is git's."""
    lock = repo / ".git/index.lock"
    killed_holding(repo / ".git", [lock])
    lock.unlink()  # released (renamed into place, say) before the kill
    lock.write_bytes(b"DIRC")  # git's own lock now, same name
    Workspace.open(repo).read("f.txt")
    assert lock.exists()
