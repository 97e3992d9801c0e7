"""Owners: a process is provably dead only on this host, and the flock file goes with its holder."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import resource
import signal
from pathlib import Path
from typing import Any

import pytest

from gitpatch.errors import GitpatchError
from gitpatch.safety import owners
from gitpatch.safety.owners import Owner, Record, flocked, read_records, record_owners
from tests.ownerkit import LiveHolder


def test_me_is_alive_and_a_reused_pid_or_another_boot_is_dead() -> None:
    me = Owner.me()
    assert me.pid == os.getpid() and not me.dead()
    assert dataclasses.replace(me, start=me.start + 1).dead()  # the pid now runs someone else
    assert dataclasses.replace(me, boot="0" * 12).dead()  # the machine restarted since


def test_another_host_is_never_provably_dead() -> None:
    assert not dataclasses.replace(Owner.me(), host="elsewhere", pid=1, start=1).dead()


def test_a_finished_process_is_dead_a_live_one_is_not(tmp_path: Path) -> None:
    holder = LiveHolder(tmp_path, [], take=False)
    try:
        [(path, owner)] = list(record_owners(str(tmp_path)))
        assert owner.pid == holder.pid and not owner.dead()
    finally:
        holder.close()
    assert owner.dead() and path.exists()


def test_a_record_names_its_owner_and_its_plan(tmp_path: Path) -> None:
    record = Record.create(str(tmp_path))
    record.announce(["/r/refs/heads/x.lock"], [("refs/heads/x", "", "ab" * 20)])
    [read] = list(read_records(str(tmp_path)))
    assert read.owner == Owner.me() and read.plan["locks"] == ["/r/refs/heads/x.lock"]
    record.clear()
    assert next(read_records(str(tmp_path))).plan == {"active": True}
    record.drop()
    assert list(read_records(str(tmp_path))) == []


def test_locks_kept_across_a_callback_stay_listed_and_proved_through_nested_announcements(
    tmp_path: Path,
) -> None:
    """A ref transaction runs a land's write-ahead while it holds its ref lock (``keeping``):
    the index lock's own announce / clear inside must neither drop the ref lock and its move
    from the plan nor remove its proof, or a kill there would leave a lock recovery cannot
    free (and a partial commit it cannot finish)."""
    lock = str(tmp_path / "x.lock")
    move = ("refs/heads/x", "", "ab" * 20)
    record = Record.create(str(tmp_path))
    record.announce([lock], [move])
    os.close(record.take(lock))
    with record.keeping([lock], [move]):
        index_lock = str(tmp_path / "index.lock")
        os.close(record.pin(index_lock))  # announces, with the kept lock and move
        record.unpin(index_lock)  # clears: the kept lock stays
        [read] = list(read_records(str(tmp_path)))
        assert read.plan["locks"] == [lock] and read.plan["refs"] == [list(move)]
        assert read.owns(lock)
    record.clear()  # the transaction's own clear, once it committed: now released
    assert next(read_records(str(tmp_path))).plan == {"active": True}
    assert not record.owns(lock) and record.proofs() == []
    record.drop()


def test_the_flock_file_goes_with_its_last_holder(tmp_path: Path) -> None:
    lock = tmp_path / "land.lock"
    with flocked(lock):
        assert Owner.from_tag(lock.read_text()) == Owner.me()
        # a second holder (another open file) must wait
        with pytest.raises(GitpatchError) as err, flocked(lock, wait=0):
            pass
        assert err.value.code == "concurrent_update"
        assert f"pid {os.getpid()}" in err.value.message
    assert not lock.exists()
    with flocked(lock, shared=True), flocked(lock, shared=True):
        assert lock.exists()
    assert not lock.exists()


def _hold_then_die(path: str, conn: Any) -> None:
    from gitpatch.safety.owners import flocked

    with flocked(Path(path)):
        conn.send("holding")
        os._exit(0)  # killed holding it: the file stays, the kernel drops the flock


def test_a_killed_holders_flock_file_is_taken_and_removed(tmp_path: Path) -> None:
    lock = tmp_path / "land.lock"
    ctx = multiprocessing.get_context("fork")
    ours, theirs = ctx.Pipe()
    child = ctx.Process(target=_hold_then_die, args=(str(lock), theirs))
    child.start()
    assert ours.recv() == "holding"
    child.join()
    assert lock.exists()
    with flocked(lock, wait=0):
        pass
    assert not lock.exists()


def test_owner_records_live_in_the_common_dir_of_a_linked_worktree(tmp_path: Path) -> None:
    linked = tmp_path / ".git" / "worktrees" / "wt"
    linked.mkdir(parents=True)
    (linked / "commondir").write_text("../..\n")
    assert owners.owners_dir(str(linked)) == (tmp_path / ".git" / "gitpatch" / "owners")


def test_a_git_dirs_common_dir_is_kept_only_once_it_cannot_change(tmp_path: Path) -> None:
    """Asked several times per change, the answer is kept, but only where it cannot change:
    a git dir with its own ``objects`` is its own common dir, a linked worktree's stays one.
    A folder that is neither yet (git making a worktree) is looked at again next time."""
    main = tmp_path / ".git"
    (main / "objects").mkdir(parents=True)
    assert owners.common_dir(str(main)) == main
    making = main / "worktrees" / "wt"
    making.mkdir(parents=True)
    assert owners.common_dir(str(making)) == making  # no commondir yet: not kept
    (making / "commondir").write_text("../..\n")
    assert owners.common_dir(str(making)) == main.resolve()
    (making / "commondir").unlink()  # kept from now on: a linked worktree's git dir stays one
    assert owners.common_dir(str(making)) == main.resolve()


def _open_on(path: Path) -> int:
    """How many of this process's descriptors are open on ``path``."""
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if os.path.realpath(fd) == str(path.resolve()))


def test_an_operation_rewrites_its_record_through_one_descriptor_closed_at_its_end(
    tmp_path: Path,
) -> None:
    """Each plan the operation writes is on disk at once (a kill finds it), written through
    the descriptor ``begin`` opened; none is left open between operations."""
    gitdir = tmp_path / ".git"
    (gitdir / "objects").mkdir(parents=True)
    with owners.operation(str(gitdir)) as record:
        assert _open_on(record.path) == 1
        record.announce([str(gitdir / "refs" / "heads" / "main.lock")])
        [seen] = [r for r in read_records(str(gitdir)) if r.path == record.path]
        assert seen.plan["locks"] == [str(gitdir / "refs" / "heads" / "main.lock")]
        record.clear()
        [seen] = [r for r in read_records(str(gitdir)) if r.path == record.path]
        assert "locks" not in seen.plan
    assert _open_on(record.path) == 0
    [seen] = [r for r in read_records(str(gitdir)) if r.path == record.path]
    assert seen.plan == {}


def test_an_operation_that_cannot_write_its_record_keeps_no_descriptor(tmp_path: Path) -> None:
    """The record's first plan is refused (here: a file-size limit of 0, as a full disk
    refuses): the operation does not start, with a stable code, and leaves no descriptor."""
    gitdir = tmp_path / ".git"
    (gitdir / "objects").mkdir(parents=True)
    with owners.operation(str(gitdir)) as record:  # the thread's record exists from now on
        pass
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    before = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, hard))
    try:
        with pytest.raises(GitpatchError) as refused, owners.operation(str(gitdir)):
            pass
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, before)
    assert refused.value.code == "filesystem_error"
    assert _open_on(record.path) == 0
    assert owners.current() is None
