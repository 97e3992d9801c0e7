"""The test kit: the real ``git`` binary with a fixed author and clock, repositories made with
it, what git says about them, and the few edits and proposals every layer's tests make.

Free of pytest fixtures (those are in tests/conftest.py) so child processes (spawned or forked
by the concurrency and crash proofs) can import it cheaply: gitpatch is imported only where a
helper needs it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gitpatch import MountedFilesystem, Workspace
    from gitpatch.core.model import Proposal

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Person",
    "GIT_AUTHOR_EMAIL": "person@example.com",
    "GIT_COMMITTER_NAME": "Test Person",
    "GIT_COMMITTER_EMAIL": "person@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git_env(cwd: Path | str) -> dict[str, str]:
    """The process environment with the fixed identity and clock, ``HOME`` set to ``cwd``."""
    return {**os.environ, **GIT_ENV, "HOME": str(cwd)}


def run_git(
    cwd: Path | str, *args: str, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run the real git binary in ``cwd`` and return its raw result; never raises."""
    return subprocess.run(
        ["git", *args], cwd=cwd, env=git_env(cwd), input=input, capture_output=True, check=False
    )


def git(cwd: Path | str, *args: str, check: bool = True) -> str:
    """Run the real git binary in ``cwd`` and return its stdout as text.

    With ``check`` (the default) a failure is an AssertionError carrying git's stderr.
    """
    out = subprocess.run(
        ["git", *args], cwd=cwd, env=git_env(cwd), capture_output=True, text=True, check=False
    )
    if check and out.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {out.stderr}")
    return out.stdout


def write_files(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Write ``files`` (relative POSIX paths; bytes, or text as UTF-8) under ``root``."""
    for rel, data in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data.encode() if isinstance(data, str) else data)


def make_repo(root: Path, files: Mapping[str, str | bytes], branch: str = "work") -> Path:
    """A non-bare repository at ``root`` holding ``files`` in one commit on ``branch``.

    The default branch is not ``main`` on purpose: ``main`` and ``master`` are protected by
    default, and most tests are about plain auto-apply, not session branches.
    """
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", branch)
    git(root, "config", "user.name", "Test Person")
    git(root, "config", "user.email", "person@example.com")
    write_files(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root


def head(repo: Path, ref: str = "HEAD") -> str:
    """The full commit id ``ref`` resolves to."""
    return git(repo, "rev-parse", "--verify", f"{ref}^{{commit}}").strip()


def status_porcelain(repo: Path) -> str:
    """``git status --porcelain`` (untracked files included)."""
    return git(repo, "status", "--porcelain", "--untracked-files=all")


def repo_state(repo: Path) -> dict[str, str]:
    """Everything a refused call must leave exactly as it was, as one comparable value: every
    ref (notes included) with its target, HEAD, the index file, ``git status``, gitpatch's land
    journal, and every file of the working tree (a digest of its bytes, a link's target)."""
    gitdir = Path(repo, git(repo, "rev-parse", "--git-dir").strip())
    index = gitdir / "index"
    out = {
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
        "HEAD": git(repo, "symbolic-ref", "-q", "HEAD", check=False),
        "index": _digest(index.read_bytes()) if index.exists() else "",
        # --no-optional-locks: reading the status must not refresh (rewrite) the index; a
        # failing filter makes git status fail, and that is part of the state too
        "status": git(repo, "--no-optional-locks", "status", "--porcelain", "-uall", check=False),
        "journal": str((gitdir / "gitpatch" / "journal.json").exists()),
    }
    for path in sorted(Path(repo).rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if rel == ".git" or rel.startswith(".git/"):
            continue
        if path.is_symlink():
            out[rel] = "link:" + str(path.readlink())
        elif path.is_file():
            out[rel] = _digest(path.read_bytes())
        else:
            out[rel] = "dir"
    return out


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@contextlib.contextmanager
def before_first_publish(action: Callable[[], object]) -> Iterator[None]:
    """Run ``action`` (a person's commit or disk edit) right before the first publish of the
    write path's attempt loop (``gitpatch.workspace.propose``), so that attempt loses its race."""
    from gitpatch.workspace import propose

    real = propose.publish
    done: list[bool] = []

    def racing(*args: Any, **kw: Any) -> None:
        if not done:
            done.append(True)
            action()
        real(*args, **kw)

    propose.publish = racing  # type: ignore[assignment]
    try:
        yield
    finally:
        propose.publish = real


#: Everything an error must leave untouched (``repo_state``), by its short name.
state = repo_state


def staged(repo: Path) -> str:
    """``git diff --cached --name-status``: what is staged against HEAD."""
    return git(repo, "diff", "--cached", "--name-status")


def fsck(repo: Path) -> None:
    """``git fsck --strict`` passes."""
    git(repo, "fsck", "--strict", "--no-progress")


def commit_on(root: Path, files: dict[str, str | None], message: str = "person") -> str:
    """A commit by a person with the git binary (None deletes); returns its id."""
    for name, content in files.items():
        if content is None:
            git(root, "rm", "-q", name)
            continue
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
        git(root, "add", name)
    git(root, "commit", "-q", "-m", message)
    return head(root)


def note(root: Path, commit: str) -> str:
    """The gitpatch note on ``commit`` ('' when none)."""
    return git(root, "notes", "--ref", "gitpatch", "show", commit, check=False)


# -- edits and proposals ------------------------------------------------------------------------


def sr(search: str, replace: str) -> str:
    """One SEARCH/REPLACE block."""
    return f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


def edit(path: str, old: str, new: str, tool: str = "test") -> Proposal:
    """A proposal replacing ``old`` with ``new`` in ``path`` (the ``patch_resource`` format)."""
    from gitpatch.core.model import Proposal, Replace, UpdateFile

    return Proposal((UpdateFile(path, (Replace(old, new),)),), "patch_resource", tool=tool)


def add(path: str, content: str) -> Proposal:
    """A proposal adding the file ``path``."""
    from gitpatch.core.model import AddFile, Proposal

    return Proposal((AddFile(path, content),), "patch_resource", tool="test")


def delete(path: str) -> Proposal:
    """A proposal deleting the file ``path``."""
    from gitpatch.core.model import DeleteFile, Proposal

    return Proposal((DeleteFile(path),), "patch_resource", tool="test")


def mounted(
    root: Path, files: Mapping[str, str | bytes], **open_kw: object
) -> tuple[Path, Workspace, MountedFilesystem]:
    """A repo holding ``files``, its auto Workspace, and that Workspace at /workspace."""
    from gitpatch import MountedFilesystem, Workspace

    repo = make_repo(root, files)
    ws = Workspace.open(repo, **open_kw)  # type: ignore[arg-type]
    return repo, ws, MountedFilesystem({"/workspace": ws})


def git_commit_holding_index(where: Path, fifo: Path) -> subprocess.Popen[bytes]:
    """A ``git commit -a`` in the checkout at ``where`` that holds its ``index.lock`` until
    ``let_go(fifo, proc)`` (its editor waits on ``fifo``, then leaves an empty message, so
    git aborts the commit and removes its lock). Returns once git holds the lock."""
    os.mkfifo(fifo)
    editor = fifo.with_suffix(".sh")
    editor.write_text(f'#!/bin/sh\nread line < "{fifo}"\n: > "$1"\n')
    editor.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    lock = where / git(where, "rev-parse", "--git-path", "index.lock").strip()
    proc = subprocess.Popen(
        ["git", "commit", "-a", "-q"],
        cwd=where,
        env={**env, "GIT_EDITOR": str(editor)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    while not lock.exists():  # git takes it before it starts the editor
        assert proc.poll() is None, "git commit ended before it took index.lock"
        time.sleep(0.01)
    return proc


def let_go(fifo: Path, proc: subprocess.Popen[bytes]) -> None:
    """End ``git_commit_holding_index``'s commit (aborted: nothing committed, lock gone)."""
    fifo.write_text("done\n")
    proc.wait()


def loose_objects(repo: Path | str) -> list[str]:
    """The ids of the loose objects of the repository whose git dir is ``repo``.

    Safe to call while a packing run works on it: ``git prune-packed`` removes a folder it
    empties, so a folder that is gone by the time it is listed holds nothing.
    """
    objects = Path(repo) / "objects"
    found = []
    for folder in objects.glob("[0-9a-f][0-9a-f]"):
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            continue
        found += [folder.name + name for name in names if len(name) == 38]
    return found


#: How long ``wait_until`` waits at most: a bound for a broken run, never a timing claim (what
#: it waits for takes milliseconds on a quiet machine, seconds on a loaded CI runner).
WAIT_SECONDS = 120.0


def wait_until(condition: Callable[[], object], what: str, seconds: float = WAIT_SECONDS) -> None:
    """Return as soon as ``condition()`` is true; fail naming ``what`` if it is still false
    after ``seconds`` of wall time (a deadline, not a number of tries: a loaded machine makes
    each try slower, not the wait shorter)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: still not so after {seconds:g} s")
        time.sleep(0.01)
