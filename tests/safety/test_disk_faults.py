"""A full or read-only disk, or a file size limit: the call fails cleanly and the next one works.

Real faults at the OS boundary, no fakes: a size-limited tmpfs (mounted by the test; the suite
runs as root here), remounted read-only for the read-only case; and ``RLIMIT_FSIZE`` in a forked
child, which makes the kernel refuse any write past a chosen byte (``EFBIG``), to aim at one
write: an object, the land journal, a working-tree file or the index. Every time the error is
``filesystem_error`` naming what could not be written, nothing changed (refs, notes, disk, index,
no temp or lock file left), and the same call succeeds once the space is back.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.killtrials import leftovers
from gitpatch.core.model import AddFile, Proposal, Replace, UpdateFile
from gitpatch.errors import GitpatchError
from gitpatch.porcelain.workspace import Workspace
from tests.gitkit import git, make_repo, status_porcelain
from tests.safety.proofkit import assert_fsck_clean, disk_files, refs_snapshot, tree_files

#: full disks and refused writes in forked children: `make test-fast` leaves these out.
pytestmark = pytest.mark.slow


def _state(repo: Path) -> tuple[str, dict[str, bytes], str]:
    return refs_snapshot(repo), disk_files(repo), status_porcelain(repo)


def _assert_unchanged(repo: Path, before: tuple[str, dict[str, bytes], str]) -> None:
    assert _state(repo) == before
    assert leftovers(repo) == []
    assert_fsck_clean(repo)


def _assert_landed(repo: Path) -> None:
    assert status_porcelain(repo) == ""
    assert disk_files(repo) == tree_files(repo, "HEAD")
    assert leftovers(repo) == []
    assert_fsck_clean(repo)


# -- a small tmpfs ------------------------------------------------------------------------------


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 3 MB tmpfs at ``tmp_path/fs``, unmounted afterwards."""
    mount = tmp_path / "fs"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(folder: Path) -> Path:
    """Fill the file system of ``folder`` up; return the filler (delete it to free the space)."""
    filler = folder / "filler"
    with open(filler, "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass
    return filler


@pytest.mark.parametrize("mode", ["auto", "review"])
def test_a_full_disk_refuses_the_objects_and_the_retry_lands(small_fs: Path, mode: str) -> None:
    repo = make_repo(small_fs / "repo", {"a.txt": "alpha\n"})
    ws = Workspace.open(repo, mode=mode)  # type: ignore[arg-type]
    big = os.urandom(400_000).hex()  # incompressible: its blob cannot fit
    proposal = Proposal((AddFile("big.txt", big),), "patch_resource")
    before = _state(repo)
    filler = _fill(small_fs)
    with pytest.raises(GitpatchError) as err:
        ws.propose(proposal)
    assert err.value.code == "filesystem_error", err.value
    assert "could not write" in err.value.message
    filler.unlink()
    _assert_unchanged(repo, before)
    result = ws.propose(proposal)
    if mode == "auto":
        assert (repo / "big.txt").read_text() == big
        _assert_landed(repo)
    else:
        assert git(repo, "show", f"{result.version}:big.txt") == big


def test_a_read_only_file_system_refuses_at_open_and_works_when_writable(small_fs: Path) -> None:
    repo = make_repo(small_fs / "repo", {"a.txt": "alpha\n"})
    Workspace.open(repo).propose(_edit(0))
    before = _state(repo)
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    try:
        with pytest.raises(GitpatchError) as err:
            Workspace.open(repo).propose(_edit(1))
        assert err.value.code == "filesystem_error"
        assert "read-only" in err.value.message
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_fs)], check=True)
    _assert_unchanged(repo, before)
    Workspace.open(repo).propose(_edit(1))
    assert (repo / "a.txt").read_text() == "alpha 2\n"
    _assert_landed(repo)


def _edit(n: int) -> Proposal:
    old = "alpha\n" if n == 0 else f"alpha {n}\n"
    return Proposal((UpdateFile("a.txt", (Replace(old, f"alpha {n + 1}\n"),)),), "patch_resource")


# -- a file size limit: one chosen write fails ----------------------------------------------------


def _limited(repo: str, limit: int, make: Callable[[], Proposal], conn: Any) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a signal
    try:
        ws = Workspace.open(repo)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        ws.propose(make())
        conn.send(("landed", "", ""))
    except GitpatchError as exc:
        conn.send((exc.code, exc.message, str(exc.details.get("path", ""))))
    except BaseException as exc:  # a bug: report it, the parent fails the test
        conn.send(("crash", repr(exc), ""))
    os._exit(0)


def _propose_limited(repo: Path, limit: int, make: Callable[[], Proposal]) -> tuple[str, ...]:
    ctx = multiprocessing.get_context("fork")
    ours, theirs = ctx.Pipe()
    child = ctx.Process(target=_limited, args=(str(repo), limit, make, theirs))
    child.start()
    theirs.close()
    outcome: tuple[str, ...] = ours.recv()
    child.join()
    return outcome


def _many_paths() -> Proposal:
    ops = [
        UpdateFile(f"{_DIR}{d:02d}/{_FILE}{f:02d}.txt", (Replace("v0", "v1"),))
        for d in range(30)
        for f in range(10)
    ]
    return Proposal(tuple(ops), "patch_resource")


_DIR = "a_folder_with_a_rather_long_name_"
_FILE = "and_a_file_with_a_long_name_too_"

CASES: dict[str, tuple[dict[str, str], int, Callable[[], Proposal], str]] = {
    # an incompressible blob is larger than the limit
    "object": (
        {"a.txt": "a\n"},
        64_000,
        lambda: Proposal((AddFile("big.txt", os.urandom(60_000).hex()),), "patch_resource"),
        "to the repository",
    ),
    # 300 long paths: the journal passes the limit, each small tree and blob does not
    "journal": (
        {f"{_DIR}{d:02d}/{_FILE}{f:02d}.txt": "v0\n" for d in range(30) for f in range(10)},
        12_000,
        _many_paths,
        "the land journal",
    ),
    # a compressible file: its blob is small, the file itself is not
    "working-tree file": (
        {"a.txt": "a\n"},
        64_000,
        lambda: Proposal((AddFile("big.txt", "same line\n" * 20_000),), "patch_resource"),
        "the new files to the working tree",
    ),
    # 3,000 files: the index is larger than the limit, the one-line change is not
    "index": (
        {f"d{i // 100}/f{i}.txt": f"{i}\n" for i in range(3000)},
        150_000,
        lambda: Proposal((UpdateFile("d0/f1.txt", (Replace("1\n", "one\n"),)),), "patch_resource"),
        "the new files to the working tree",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_write_refused_at_a_chosen_byte_changes_nothing(case: str, tmp_path: Path) -> None:
    files, limit, make, what = CASES[case]
    repo = make_repo(tmp_path / "repo", files)
    if case == "index":
        assert (repo / ".git" / "index").stat().st_size > limit
    before = _state(repo)
    code, message, named = _propose_limited(repo, limit, make)
    assert code == "filesystem_error", (code, message)
    assert what in named, (named, message)
    ws = Workspace.open(repo)  # the next call (no limit here): it settles the dead child's record
    _assert_unchanged(repo, before)
    ws.propose(make())
    _assert_landed(repo)
