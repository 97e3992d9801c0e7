"""An editor's save written to the file a land replaced, after the land checked it (issue 26).

An editor that opened a file (``O_APPEND``, as a log or an autosave does) before a land's rename
and writes after it writes to the replaced file, not to the one now at the path. The land keeps
the replaced file until it is over and checks it once more (``saves.settle``); a kill in between
leaves it for the next call's recovery (``saves.recover``). Either way the line is on disk
afterwards, as the person's uncommitted change, and the agent's change is committed.

Each test opens the file in a real child process (the editor) before a real land
(``WorkingTree.land`` through the store's ref transaction) reaches its rename, stops the land at
a crash point after it (``GITPATCH_CRASH_HOW=pause`` or ``stop``), has the editor write there,
then lets the land go on, or SIGKILLs it and recovers as the next call does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench import landrace
from gitpatch.porcelain.workspace import Workspace
from tests.safety.proofkit import fsck_problems, paused_at

pytestmark = pytest.mark.slow

#: the agent: one land through ``WorkingTree.land`` and the store's ref transaction, turning
#: ``agent 0`` into ``AGENT 0`` in shared.txt (argv[2] "edit") or deleting gone.txt ("delete")
AGENT = """
import sys
import pygit2
from gitpatch.checkout.worktree import WorkingTree
from gitpatch.store import Store

store = Store.open(sys.argv[1])
repo = pygit2.Repository(sys.argv[1])
old = repo.references["refs/heads/work"].target
commit = repo[old]
builder = repo.TreeBuilder(commit.tree)
if sys.argv[2] == "edit":
    path = "shared.txt"
    text = repo[commit.tree[path].id].data.replace(b"agent 0\\n", b"AGENT 0\\n")
    builder.insert(path, repo.create_blob(text), pygit2.enums.FileMode.BLOB)
else:
    path = "gone.txt"
    builder.remove(path)
sig = pygit2.Signature("Agent", "agent@example.com")
new = repo.create_commit(None, sig, sig, "agent", builder.write(), [old])


def move(ahead):
    store.update_refs([("refs/heads/work", new, old)], "agent", while_locked=ahead)


WorkingTree(store).land(str(old), str(new), [path], move, ref="refs/heads/work")
"""

#: the editor: opens argv[1] for appending, says so, writes one line when told; with argv[2]
#: "poke" it opens it for writing and overwrites ``agent 1`` with ``PERSN 1`` in place instead
EDITOR = """
import os, sys
poke = sys.argv[2] == "poke"
fd = os.open(sys.argv[1], os.O_WRONLY | (0 if poke else os.O_APPEND))
print("open", flush=True)
sys.stdin.readline()
if poke:
    os.pwrite(fd, b"PERSN 1", len(b"agent 0\\n\\n"))
else:
    os.write(fd, b"editor 1\\n")
os.close(fd)
"""

#: points after the rename of the land's one file: before the branch moved, and after it
BEFORE_THE_MOVE = ("file.renamed", "index.written")
AFTER_THE_MOVE = ("refs.moved",)


def _repo(tmp_path: Path) -> Path:
    repo = landrace.make(tmp_path, 2)
    (repo / "gone.txt").write_text("gone\n")
    landrace.git(repo, "add", "gone.txt")
    landrace.git(repo, "commit", "-qm", "gone")
    return repo


def _editor(path: Path, how: str = "append") -> subprocess.Popen[bytes]:
    """A real process holding ``path`` open for writing (before the land starts)."""
    child = subprocess.Popen(
        [sys.executable, "-c", EDITOR, str(path), how],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stdout.readline() == b"open\n"
    return child


def _save(editor: subprocess.Popen[bytes]) -> None:
    """The editor writes its line now (through the descriptor it opened before the land)."""
    editor.communicate(b"go\n")
    assert editor.returncode == 0


def _git(repo: Path, *args: str) -> str:
    return landrace.git(repo, *args).stdout


def _env() -> dict[str, str]:
    return {**os.environ, **landrace.ENV}


def _nothing_left(repo: Path) -> None:
    kept = [p.name for p in (repo / ".git").rglob(".kept.*")]
    assert kept == [], kept
    assert not (repo / ".git/gitpatch/saves").exists()
    assert fsck_problems(repo) == ""


@pytest.mark.parametrize("point", ("file.renamed", "index.written", "refs.moved"))
def test_a_line_written_to_the_replaced_file_after_the_rename_is_kept(
    tmp_path: Path, point: str
) -> None:
    repo = _repo(tmp_path)
    editor = _editor(repo / "shared.txt")
    argv = [sys.executable, "-c", AGENT, str(repo), "edit"]
    with paused_at(argv, _env(), point) as agent:
        assert "AGENT 0" in (repo / "shared.txt").read_text()  # renamed, checked already
        _save(editor)
    _out, err = agent.communicate()
    assert agent.returncode == 0, err.decode()
    disk = (repo / "shared.txt").read_text()
    assert "AGENT 0\n" in disk and disk.endswith("editor 1\n"), disk
    # the agent's change committed and staged; the person's line their uncommitted change
    assert "AGENT 0" in _git(repo, "show", "work:shared.txt")
    assert _git(repo, "status", "--porcelain") == " M shared.txt\n"
    added = [r for r in _git(repo, "diff").splitlines() if r.startswith(("+", "-"))]
    assert added == ["--- a/shared.txt", "+++ b/shared.txt", "+editor 1"]
    _nothing_left(repo)


def test_a_save_in_place_to_the_replaced_file_is_merged_with_the_change(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    editor = _editor(repo / "shared.txt", "poke")
    argv = [sys.executable, "-c", AGENT, str(repo), "edit"]
    with paused_at(argv, _env(), "index.written") as agent:
        _save(editor)
    _out, err = agent.communicate()
    assert agent.returncode == 0, err.decode()
    assert (repo / "shared.txt").read_text() == "AGENT 0\n\nPERSN 1\n\nend\n\n\n"
    assert _git(repo, "show", "work:shared.txt") == "AGENT 0\n\nagent 1\n\nend\n\n\n"
    assert _git(repo, "status", "--porcelain") == " M shared.txt\n"
    _nothing_left(repo)


def test_a_line_written_to_a_deleted_file_after_the_delete_is_kept(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    editor = _editor(repo / "gone.txt")
    argv = [sys.executable, "-c", AGENT, str(repo), "delete"]
    with paused_at(argv, _env(), "file.deleted") as agent:
        assert not (repo / "gone.txt").exists()
        _save(editor)
    _out, err = agent.communicate()
    assert agent.returncode == 0, err.decode()
    # the delete is committed; the person's file, with their line, is theirs (untracked)
    assert _git(repo, "ls-tree", "--name-only", "work") == "person.txt\nshared.txt\n"
    assert (repo / "gone.txt").read_text() == "gone\neditor 1\n"
    assert _git(repo, "status", "--porcelain") == "?? gone.txt\n"
    _nothing_left(repo)


@pytest.mark.parametrize("point", ("file.kept", *BEFORE_THE_MOVE, *AFTER_THE_MOVE))
def test_a_kill_after_the_rename_keeps_the_line(tmp_path: Path, point: str) -> None:
    repo = _repo(tmp_path)
    start = _git(repo, "rev-parse", "work").strip()
    editor = _editor(repo / "shared.txt")
    agent = subprocess.Popen(
        [sys.executable, "-c", AGENT, str(repo), "edit"],
        env={**_env(), "GITPATCH_CRASH_AT": point, "GITPATCH_CRASH_HOW": "stop"},
        stdin=subprocess.DEVNULL,
    )
    _pid, status = os.waitpid(agent.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status), f"never reached {point}"
    _save(editor)
    os.kill(agent.pid, signal.SIGKILL)
    os.waitpid(agent.pid, 0)
    agent.returncode = -9
    Workspace.open(repo)  # the next call recovers
    disk = (repo / "shared.txt").read_text()
    assert disk.count("editor 1\n") == 1, disk
    # file.kept: the new file is named for what it will keep, not yet swapped; the line went
    # to the file at the path itself
    moved = _git(repo, "rev-parse", "work").strip() != start
    assert moved == (point in AFTER_THE_MOVE)
    # moved: the agent's change is there; not moved: it is put back, the line stays
    assert ("AGENT 0\n" in disk) == moved and ("agent 0\n" in disk) != moved, disk
    assert _git(repo, "status", "--porcelain") == " M shared.txt\n"
    added = [r for r in _git(repo, "diff").splitlines() if r.startswith(("+", "-"))]
    assert added == ["--- a/shared.txt", "+++ b/shared.txt", "+editor 1"]
    _nothing_left(repo)
