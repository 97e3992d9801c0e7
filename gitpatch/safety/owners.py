"""Who holds what: one owner record per gitpatch operation, and proving an owner dead.

A record is a file ``<common git dir>/gitpatch/owners/<host>+<boot>+<pid>+<start>+<n>.json``:
its NAME says whose it is (host name, kernel boot id, pid, and the process start time from
``/proc/<pid>/stat``), so even a record cut short by a kill identifies its owner. It exists
while the operation runs (objects are being written) and its CONTENT lists the lock files the
operation is about to take and the refs it is about to move, written before the first lock is
taken. An owner is provably dead when it ran on this host and its boot is over, its pid is gone,
or the pid now belongs to a process started at another time. A record of another host, or of a
live process, is never touched.

Announcing a lock proves nothing about who took it: a process killed after announcing and
before taking leaves a record that names a lock file a person's ``git commit`` may hold a
moment later. A lock file is provably an owner's only through its *proof*: a hard link
``<record>.<hash of the lock path>.proof`` next to the record, to the lock file's inode. A lock
gitpatch takes itself (``take_lock``) is made as the proof first and linked to the lock name
(as atomic as git's ``O_EXCL``), so no moment exists where it is taken and unproved; a lock
libgit2 takes inside a call that returns holding it (a ref transaction's ``lock_ref``) is
proved right after (``prove_lock``). The link pins the inode, so no later file can reuse it.
A lock taken and released inside one libgit2 call (a whole-index write, ``set_head``, a config
write, ``packed-refs`` in a commit) is never proved: a kill inside that call leaves it behind,
exactly as a killed git does, and gitpatch refuses clearly rather than remove it.

``gitpatch.safety.recovery`` uses the records to finish or undo what a dead owner left and to
remove exactly the lock files it had taken.

The locks around the working tree for ``gitpatch.checkout.worktree`` live here too. The land
lock is an ``flock`` on ``.git/gitpatch/land.lock`` (``land_lock``, through ``flocked``): the
kernel drops it when a process dies, so it never goes stale, and its last holder removes the
file. git's own ``*.lock`` files (index.lock) are announced in the operation's owner record
before they are taken, so recovery can remove those of a killed process, and only those;
``retry_locked`` waits out a live one.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import hashlib
import itertools
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitpatch.core.retry import retry
from gitpatch.errors import ConcurrentUpdate
from gitpatch.safety.refusals import refused as _refused

__all__ = [
    "Owner",
    "Record",
    "announced",
    "common_dir",
    "config_lock",
    "holding",
    "current",
    "flocked",
    "operation",
    "owners_dir",
    "prove_lock",
    "take_lock",
    "read_records",
    "record_owners",
    "LOCK_WAIT_SECONDS",
    "land_lock",
    "retry_locked",
]

_SEQ = itertools.count(1)
_SEQ_LOCK = threading.Lock()


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")[:12]
    except OSError:
        return "noboot"


def _start_time(pid: int) -> int | None:
    """Field 22 of ``/proc/<pid>/stat`` (clock ticks since boot), None when there is no pid."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    except OSError:
        return -1  # it exists but cannot be read: alive as far as we can tell
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[19])


@dataclass(frozen=True)
class Owner:
    """A process on a host: enough to tell, later, whether it is still the same live process."""

    host: str
    boot: str
    pid: int
    start: int

    @classmethod
    def me(cls) -> Owner:
        """This process (computed per pid, so a forked child is its own owner)."""
        pid = os.getpid()
        cached = _ME.get(pid)
        if cached is None:
            host = socket.gethostname().replace("+", "-") or "localhost"
            cached = _ME[pid] = cls(host, _boot_id(), pid, _start_time(pid) or 0)
        return cached

    def tag(self) -> str:
        """``host+boot+pid+start``: the owner part of a record's file name."""
        return f"{self.host}+{self.boot}+{self.pid}+{self.start}"

    @classmethod
    def from_tag(cls, tag: str) -> Owner | None:
        """Parse ``tag()``; None when the text is not one."""
        parts = tag.split("+")
        if len(parts) != 4 or not parts[2].isdigit() or not parts[3].isdigit():
            return None
        return cls(parts[0], parts[1], int(parts[2]), int(parts[3]))

    def dead(self) -> bool:
        """True only when this owner is provably gone: same host, and another boot, no such
        pid, or the pid reused by a process started at another time."""
        me = Owner.me()
        if self.host != me.host:
            return False
        if self.boot != me.boot:
            return True
        if self.pid == me.pid:
            return self.start != me.start
        start = _start_time(self.pid)
        return start is None or (start != -1 and start != self.start)

    def describe(self) -> str:
        """Words for an error message: ``pid 123 on host``."""
        return f"pid {self.pid} on {self.host}"


_ME: dict[int, Owner] = {}


#: The common git dir of each git dir asked about. Only answers that cannot change are kept: a
#: linked worktree's git dir (it has a ``commondir`` file) stays one, and a git dir holding
#: its own ``objects`` folder is a repository's own; any other is looked at again each time.
#: The write path asks several times per change, and a ``stat`` lets other threads in.
_COMMON: dict[str, Path] = {}


def common_dir(gitdir: str) -> Path:
    """The git dir holding refs and objects (a linked worktree's ``commondir``)."""
    found = _COMMON.get(gitdir)
    if found is not None:
        return found
    common = os.path.join(gitdir, "commondir")
    if os.path.isfile(common):
        base = Path(gitdir)
        found = (base / (base / "commondir").read_text().strip()).resolve()
    else:
        found = Path(gitdir)
        if not os.path.isdir(os.path.join(gitdir, "objects")):
            return found  # neither kind yet (being made): not kept
    if len(_COMMON) > 4096:
        _COMMON.clear()
    _COMMON[gitdir] = found
    return found


def config_lock(gitdir: str) -> Path:
    """The lock file git and libgit2 take to write the repository's config."""
    return common_dir(gitdir) / "config.lock"


def owners_dir(gitdir: str) -> Path:
    """``<common git dir>/gitpatch/owners`` (a linked worktree shares its refs, so its owners)."""
    return common_dir(gitdir) / "gitpatch" / "owners"


@dataclass
class Record:
    """One operation's owner record; ``plan`` is what it is about to lock and move."""

    path: Path
    owner: Owner
    plan: dict[str, Any] = field(default_factory=dict)
    #: Lock files held across the nested announcements of one step (``pinned``): every plan
    #: written meanwhile lists them, and ``clear`` keeps them and their proofs.
    pinned: list[str] = field(default_factory=list)
    #: Ref moves (name, old hex, new hex) kept in every plan written inside ``keeping``.
    kept_refs: list[list[str]] = field(default_factory=list)
    #: The record's file, open from ``begin`` to ``end``: an operation rewrites its plan a few
    #: times, each a ``pwrite`` then, not an open, a write and a close.
    _fd: int | None = field(default=None, repr=False, compare=False)

    @classmethod
    def create(cls, gitdir: str) -> Record:
        """Write a new, empty record for this process (before any object is written)."""
        folder = owners_dir(gitdir)
        owner = Owner.me()
        with _SEQ_LOCK:
            seq = next(_SEQ)
        path = folder / f"{owner.tag()}+{seq}.json"
        try:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileNotFoundError:
                folder.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except OSError as exc:
            raise _refused("gitpatch's owner record", exc) from exc
        os.close(fd)
        return cls(path, owner)

    def begin(self) -> None:
        """An operation starts: it may write objects from now on (``active``)."""
        self.plan = {"active": True}
        try:
            self._fd = os.open(self.path, os.O_WRONLY)
        except OSError as exc:
            raise _refused("gitpatch's owner record", exc) from exc
        try:
            self._write(json.dumps(self.plan))
        except BaseException:
            self._close()  # no operation started: nothing will end it
            raise

    def end(self) -> None:
        """The operation is over; the record stays for this thread's next one."""
        self.plan = {}
        try:
            self._write("")
        finally:
            self._close()

    def _close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def announce(self, locks: Sequence[str], refs: Sequence[tuple[str, str, str]] = ()) -> None:
        """Say which lock files (absolute paths) and refs (name, old, new hex or '') this
        operation is about to take and move: always before the first of them is taken."""
        every = [*self.pinned, *(lock for lock in locks if lock not in self.pinned)]
        moves = [*self.kept_refs, *(list(r) for r in refs if list(r) not in self.kept_refs)]
        self.plan = {"active": True, "locks": every, "refs": moves}
        self._write(json.dumps(self.plan))

    def clear(self) -> None:
        """Nothing is held any more but the pinned locks (the others are released, their
        proofs go)."""
        rest: dict[str, Any] = {"active": True, "locks": list(self.pinned)}
        if not self.pinned:
            rest.pop("locks")
        if self.kept_refs:
            rest["refs"] = list(self.kept_refs)
        if self.plan != rest:
            for lock in self.plan.get("locks", ()):
                if lock not in self.pinned:
                    with contextlib.suppress(OSError):
                        os.unlink(self.proof(lock))
            self.plan = rest
            self._write(json.dumps(self.plan))

    def pin(self, lock: str) -> int:
        """Announce and take git's lock file ``lock`` (``take``) to hold it across the nested
        announcements of a step (see ``pinned``); ``FileExistsError`` when it is held."""
        self.pinned.append(lock)
        self.announce([])
        try:
            return self.take(lock)
        except BaseException:
            self.unpin(lock)
            raise

    @contextlib.contextmanager
    def keeping(self, locks: Sequence[str], refs: Sequence[tuple[str, str, str]]) -> Iterator[None]:
        """For the block, the lock files ``locks`` (announced and taken already) and the moves
        ``refs`` stay in every plan written, as pinned locks do: a callback run while a ref
        transaction holds its locks may announce and clear its own (the index lock), and a
        kill anywhere in it still finds the transaction's locks proved and its moves listed.
        At the end they are the caller's again (its ``clear`` releases them)."""
        added = [lock for lock in locks if lock not in self.pinned]
        kept = self.kept_refs
        self.pinned.extend(added)
        self.kept_refs = [*kept, *(list(r) for r in refs)]
        try:
            yield
        finally:
            for lock in added:
                with contextlib.suppress(ValueError):
                    self.pinned.remove(lock)
            self.kept_refs = kept

    def adopt(self, lock: str, proof: Path) -> int:
        """Take over git's lock file ``lock`` from a dead owner whose ``proof`` (a hard link
        to it) says it held it, pinned as ``pin`` takes one: announced first, then proved ours
        by a hard link of our own, the dead owner's proof removed last. Never unlinked in
        between, so no other process can take it meanwhile. ``FileExistsError`` when ``lock``
        is no longer the file ``proof`` names."""
        self.pinned.append(lock)
        self.announce([])
        mine = self.proof(lock)
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(mine)
            os.link(proof, mine)
            if not os.path.samefile(lock, mine):
                os.unlink(mine)
                raise FileExistsError(lock)
            fd = os.open(lock, os.O_WRONLY)
        except BaseException:
            self.unpin(lock)
            raise
        with contextlib.suppress(FileNotFoundError):
            os.unlink(proof)
        return fd

    def narrow(self, locks: Sequence[str], *, settled: bool = False) -> None:
        """A dead owner's record, now listing only ``locks`` of its plan (the rest freed by
        a recovery that leaves the others to another worktree's); its moves stay, unless
        ``settled`` (the recovery carried them out)."""
        plan = {**self.plan, "locks": [p for p in self.plan.get("locks", ()) if p in locks]}
        if settled:
            plan.pop("refs", None)
        self.plan = plan
        self._write(json.dumps(self.plan))

    def unpin(self, lock: str) -> None:
        """``lock`` is no longer held (renamed into place or removed): it and its proof go
        from the plan."""
        with contextlib.suppress(ValueError):
            self.pinned.remove(lock)
        with contextlib.suppress(OSError):
            os.unlink(self.proof(lock))
        self.clear()

    def proof(self, lock: str) -> Path:
        """The hard link that proves this owner took the lock file ``lock`` (module doc)."""
        digest = hashlib.sha1(lock.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        return self.path.with_name(f"{self.path.stem}.{digest}.proof")

    def proofs(self) -> list[Path]:
        """Every proof file of this record (a dead owner's are removed with its record)."""
        prefix = f"{self.path.stem}."
        try:
            names = os.listdir(self.path.parent)
        except FileNotFoundError:
            return []
        return [
            self.path.with_name(n) for n in names if n.startswith(prefix) and n.endswith(".proof")
        ]

    def owns(self, lock: str) -> bool:
        """True when the lock file ``lock`` is the very file this owner proved it took."""
        try:
            return os.path.samefile(lock, self.proof(lock))
        except OSError:
            return False

    def take(self, lock: str) -> int:
        """Take the lock file ``lock`` (``FileExistsError`` when it is held), proved from the
        first moment: the proof is created, then linked to the lock's name. A file system
        without hard links gets a plain ``O_EXCL`` lock, never proved. Returns a write fd."""
        proof = self.proof(lock)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(proof)  # a proof of an earlier lock of the same path, released
        fd = os.open(proof, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            os.link(proof, lock)
        except FileExistsError:
            os.close(fd)
            os.unlink(proof)
            raise
        except OSError as exc:
            os.close(fd)
            os.unlink(proof)
            if exc.errno not in (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP):
                raise
            return os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        return fd

    def prove(self, lock: str) -> None:
        """Prove a lock file libgit2 just took for this owner (and still holds)."""
        proof = self.proof(lock)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(proof)
        with contextlib.suppress(OSError):  # no hard links: the lock stays unproved
            os.link(lock, proof)

    def _write(self, text: str) -> None:
        # In place, never truncated (freeing a block costs a synchronous discard on some disks):
        # a length header, then the plan. A kill mid-write leaves a plan that does not parse,
        # which can only happen before the first lock is taken (the plan is written first).
        raw = text.encode()
        data = b"%08d\n" % len(raw) + raw
        try:
            if self._fd is not None:
                os.pwrite(self._fd, data, 0)
                return
            fd = os.open(self.path, os.O_WRONLY)
            try:
                os.pwrite(fd, data, 0)
            finally:
                os.close(fd)
        except OSError as exc:
            raise _refused("gitpatch's owner record", exc) from exc

    def drop(self) -> None:
        """The operation is over: remove the record."""
        self._close()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def written_ns(self) -> int:
        """When the plan was last written (the record's mtime)."""
        return os.stat(self.path).st_mtime_ns


def record_owners(gitdir: str) -> Iterator[tuple[Path, Owner]]:
    """Every record's path and owner, from the file names alone (nothing is read)."""
    folder = owners_dir(gitdir)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return
    for name in names:
        if name.endswith(".json"):
            owner = Owner.from_tag(name.removesuffix(".json").rsplit("+", 1)[0])
            if owner is not None:
                yield folder / name, owner


def read_records(gitdir: str) -> Iterator[Record]:
    """Every record under ``gitdir`` (any owner), with its plan when it parses."""
    for path, owner in record_owners(gitdir):
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            continue
        try:
            size = int(raw[:8]) if raw else 0
            plan = json.loads(raw[9 : 9 + size]) if size else {}
        except ValueError:
            plan = {}
        yield Record(path, owner, plan if isinstance(plan, dict) else {})


_local = threading.local()


def current() -> Record | None:
    """The record of the operation this thread is running, if any."""
    return getattr(_local, "record", None)


_mine: list[Record] = []


def take_lock(lock: str) -> int:
    """Take the lock file ``lock`` proved in this thread's record (``Record.take``); a plain
    ``O_EXCL`` lock outside an operation. Returns a write fd."""
    record = current()
    if record is None:
        return os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    return record.take(lock)


def prove_lock(lock: str) -> None:
    """Prove, in this thread's record, the lock file ``lock`` libgit2 just took for it."""
    record = current()
    if record is not None:
        record.prove(lock)


@contextlib.contextmanager
def holding(gitdir: str, locks: Sequence[str]) -> Iterator[None]:
    """Within an operation (this thread's, or one for the block), announce ``locks`` for the
    block: for a libgit2 call that takes them."""
    with operation(gitdir), announced(locks):
        yield


@contextlib.contextmanager
def announced(locks: Sequence[str]) -> Iterator[None]:
    """Announce ``locks`` in this thread's current record for the block (before taking them);
    without a current operation, nothing is recorded."""
    record = current()
    if record is None:
        yield
        return
    record.announce(locks)
    try:
        yield
    finally:
        record.clear()


@contextlib.contextmanager
def operation(gitdir: str) -> Iterator[Record]:
    """Run one operation under this thread's owner record (the enclosing one when nested).

    A thread keeps one record per repository for its life (created at its first operation,
    removed at exit; a killed process's is removed by recovery): an operation only rewrites
    it in place, which costs no file creation.
    """
    outer = current()
    if outer is not None:
        yield outer
        return
    record = _thread_record(gitdir)
    record.begin()
    _local.record = record
    try:
        yield record
    finally:
        _local.record = None
        record.end()


def _thread_record(gitdir: str) -> Record:
    folder = owners_dir(gitdir)
    records: dict[Path, Record] = getattr(_local, "records", None) or {}
    record = records.get(folder)
    if record is None or record.owner.pid != os.getpid() or not record.path.exists():
        record = Record.create(gitdir)
        records[folder] = record
        _local.records = records
        with _SEQ_LOCK:
            if not _mine:
                atexit.register(_drop_mine)
            _mine.append(record)
    return record


def _drop_mine() -> None:
    """At exit: this process's records go (only those it created, not a parent's)."""
    for record in _mine:
        if record.owner.pid == os.getpid():
            record.drop()


@contextlib.contextmanager
def flocked(path: Path, *, shared: bool = False, wait: float = 30.0) -> Iterator[None]:
    """Hold an ``flock`` on ``path`` (alone, or ``shared`` among readers) for the block.

    The kernel drops an flock when its process dies, so it never goes stale; the file itself
    is removed by the last holder (and by anyone later finding it free), so none is left
    behind. A holder alone writes its owner tag in it, named when a wait times out.
    """
    deadline = time.monotonic() + wait
    fd = _acquire(path, fcntl.LOCK_SH if shared else fcntl.LOCK_EX, deadline)
    try:
        if not shared:
            os.ftruncate(fd, 0)
            os.pwrite(fd, Owner.me().tag().encode(), 0)
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else holds it: remove it
            os.unlink(path)
        os.close(fd)


def _acquire(path: Path, kind: int, deadline: float) -> int:
    delay = 0.0005
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            continue
        except OSError as exc:
            raise _refused(str(path), exc) from exc
        try:
            fcntl.flock(fd, kind | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() > deadline:
                raise _busy(path, wait_owner(path)) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.01)
            continue
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # removed by its last holder meanwhile: take the new one


def wait_owner(path: Path) -> str:
    """Who holds the flock file ``path``, as its owner tag says (empty when unknown)."""
    try:
        owner = Owner.from_tag(path.read_text(encoding="utf-8").strip())
    except OSError:
        return ""
    return owner.describe() if owner is not None else ""


def _busy(path: Path, who: str) -> ConcurrentUpdate:
    by = f" ({who})" if who else ""
    return ConcurrentUpdate(
        f"another gitpatch process{by} kept {path} busy",
        hint="Retry the call; if it keeps failing, look for a hung process.",
        details={"path": str(path), "holder": who},
        reason="locked",
    )


#: How long a land waits for another process's land before ``ConcurrentUpdate`` (locked).
LOCK_WAIT_SECONDS = 30.0


@contextlib.contextmanager
def land_lock(state_dir: Path, *, shared: bool = False) -> Iterator[None]:
    """Hold ``state_dir/land.lock``: alone for a land, ``shared`` among readers."""
    with flocked(state_dir / "land.lock", shared=shared, wait=LOCK_WAIT_SECONDS):
        yield


def retry_locked(action: Callable[[], object], attempts: int = 50) -> None:
    """Run ``action``, retrying while git's own lock file is held by another process."""
    retry(action, attempts=attempts, catch=OSError, cap=0.1)
