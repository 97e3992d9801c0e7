"""A land's renames against a person's saves, for ``gitpatch.checkout.worktree``.

An editor knows nothing of git's locks: it may save a file between the land's last check and
its rename. Each rename therefore swaps the files (``atomic.exchange``) so the replaced one is
kept and checked again; a save that slipped in is put back (appended lines appended again,
any other save merged with the change, or left as the person saved it). The replaced file is
then kept until the land is over and checked once more (``settle``; ``Kept``), for an
editor that wrote to it after that check through a descriptor opened before the rename. A
person's bytes are never dropped. What a file "held when the land checked it" is told by its
``identity`` (inode, size, mtime), or by its content when that cannot tell.

The files a land replaced are kept here until the land is over (``Kept``). An editor that
opened a file before the rename (``O_APPEND``, as a log or an autosave does) may still write to
it after the land's check: the write goes to the replaced file. So the replaced file is kept,
under a name that says what it held when checked, until the land is over (index written, branch
moved), then checked once more (``settle``). The name is given before the swap (``name``), so
a kill at any point leaves a file that recovery recognises and settles the same way
(``recover``), in ``.git/gitpatch/tmp`` (or beside the file when that folder is on another
file system):
``.kept.<path key>.<blob checked>.<blob the land wrote>.<size checked>.<pid>.<ns>.gitpatch-tmp``.

A save that can go back neither in place nor merged waits in ``.git/gitpatch/saves/`` of the
repository's common git directory, whichever worktree it comes from, so that removing a
linked worktree never takes one (``rescue`` moves there those an older gitpatch kept in a
linked worktree's own git directory). The working tree lists each one it set aside
(``WorkingTree.set_aside``), for the call's result to say so, and ``listing`` finds them all,
for the person (``gitpatch saves``).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import signal
import stat
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import pygit2

from gitpatch.checkout.files import KEPT_PREFIX, TMP_SUFFIX, Staging
from gitpatch.checkout.filters import Filters
from gitpatch.safety import atomic
from gitpatch.safety.owners import common_dir
from gitpatch.safety.recovery import crashpoint
from gitpatch.store import Store

__all__ = [
    "Kept",
    "Mark",
    "Saved",
    "found",
    "holds",
    "identity",
    "key",
    "listing",
    "mark",
    "name",
    "put",
    "recover",
    "rescue",
    "settle",
]

#: What tells a file from any later save of it: its ``identity``, or a digest of its bytes
#: when it changed too recently for that; None when there is no regular file.
Mark = tuple[int, int, int] | str | None


class WorkingTree(Protocol):
    """What of ``checkout.worktree.WorkingTree`` the renames use (that module imports this)."""

    root: Path
    store: Store
    filters: Filters
    staging: Staging
    #: the files the running land replaced, checked again when it is over (``settle``)
    kept: list[Kept]
    #: (path, file) of each save set aside in ``.git/gitpatch/saves/``, until a caller takes
    #: them to tell (path "": not known)
    set_aside: list[tuple[str, Path]]

    def read(self, path: str) -> bytes | None: ...
    def disk_blob(self, path: str) -> str | None: ...
    def disk_mode(self, path: str) -> int | None: ...
    def as_checked_out(self, path: str, oid: pygit2.Oid) -> bool: ...
    def seen_identity(self, path: str) -> Mark: ...


def key(path: str) -> str:
    """A short stable key of a repository path, for a kept file's name."""
    return hashlib.sha1(path.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def name(src: Path, path: str, expect: str | None, wrote: str, size: int, folder: Path) -> Path:
    """Rename ``src`` into ``folder`` under the name of a kept file: the land's new file for
    ``path``, which once swapped holds the file that held the blob ``expect`` (``size`` bytes)
    when the land checked it, ``wrote`` being what the land put in its place ("none": the
    land deletes ``path``, and ``src`` is the file itself)."""
    kept = folder / (
        f"{KEPT_PREFIX}{key(path)}.{expect or 'none'}.{wrote}.{size}."
        f"{os.getpid()}.{time.monotonic_ns()}{TMP_SUFFIX}"
    )
    os.rename(src, kept)
    return kept


@dataclass(frozen=True)
class Kept:
    """One kept file: the file ``file`` replaced at ``path`` held ``expect`` (``size`` bytes,
    -1 unknown) when the land checked it, and the land wrote ``wrote`` in its place; ``mark``
    (``mark``, taken right before that check) or, when None, its content tells whether
    anything wrote to it since."""

    path: str
    file: Path
    expect: str | None
    wrote: str
    size: int
    mark: Mark = None

    @classmethod
    def of(cls, file: Path, path: str | None, mark: Mark = None) -> Kept | None:
        """The kept file ``file`` read from its name (None when it is not one); ``path`` is
        the repository path its key names (None: unknown, an orphan)."""
        parts = file.name[len(KEPT_PREFIX) : -len(TMP_SUFFIX)].split(".")
        if not file.name.startswith(KEPT_PREFIX) or len(parts) != 6:
            return None
        _key, expect, wrote, size = parts[:4]
        try:
            count = int(size)
        except ValueError:
            return None
        return cls(path or "", file, None if expect == "none" else expect, wrote, count, mark)

    def key(self) -> str:
        """The path key in this file's name."""
        return self.file.name[len(KEPT_PREFIX) :].split(".", 1)[0]


def found(folders: Iterable[Path]) -> list[Path]:
    """The kept files in ``folders`` (a killed land's)."""
    out: list[Path] = []
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        out += [folder / n for n in names if n.startswith(KEPT_PREFIX) and n.endswith(TMP_SUFFIX)]
    return out


#: How many saves racing one rename a land merges and puts back before the person's last save
#: simply stays (each round takes well under a millisecond; an editor saves every few ms).
_PUT_BACK_ROUNDS = 50

#: How long the end of a land waits for another process to close a file it replaced before
#: the last check (``_unheld``); a process holding it longer (a log) is not waited for.
_HELD_WAIT_S = 0.05
#: The longest path label of a set-aside save's name; a longer path is named by its key and
#: its file name's tail (a file name has at most 255 bytes, temp suffixes included)
_ASIDE_NAME_BYTES = 120
_SETLEASE: int | None = getattr(fcntl, "F_SETLEASE", None)

#: A file written this recently may be written again within the same tick of the file clock,
#: keeping its size and mtime: its identity proves nothing then, its content is read.
_SETTLING_NS = 50_000_000


def identity(full: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime) of the file ``full`` when that tells it from any later save: a
    save by rename brings a new inode, one in place a new mtime (or size); None when the file
    is missing, not regular or changed too recently for its mtime to tell (``_SETTLING_NS``).
    The inode survives the land's own rename of it (``atomic.exchange``), its ctime does not."""
    try:
        st = full.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or time.time_ns() - st.st_mtime_ns < _SETTLING_NS:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def mark(full: Path, like: Mark = None) -> Mark:
    """The ``Mark`` of the file ``full``: its identity when it has settled, else (or when
    ``like`` is a digest) a digest of its bytes. A land compares marks, not blob ids, so a
    change of the attributes it lands (``.gitattributes`` deleted first) cannot make the
    file it checked look changed."""
    if not isinstance(like, str):
        found = identity(full)
        if found is not None:
            return found
    try:
        if not stat.S_ISREG(full.lstat().st_mode):
            return None
        return hashlib.sha1(full.read_bytes()).hexdigest()
    except OSError:
        return None


def put(tree: WorkingTree, path: str, tmp: Path, before: str | None, new: pygit2.Oid) -> bool:
    """Rename ``tmp`` (the content ``new``) to ``path`` unless a person's save is there.

    The last check runs right before the rename, under the land's locks; the rename then
    swaps the files (``atomic.exchange``), so what it replaced is kept and checked again.
    A save found by the check gets the change merged into it (``_onto``); one that slipped
    in between is put back: appended lines are appended again, any other save is merged
    with the change, or stays as the person saved it. A person's bytes are never dropped.
    True when ``path`` holds the change alone."""
    full = tree.root / path
    if before is not None and before.startswith("<"):  # a symlink or device: git's way
        os.replace(tmp, full)
        return True
    expect = before  # what the rename may replace
    landed = True  # tmp holds the change alone (not merged into a save)
    wrote = str(new)  # the blob tmp holds
    for _round in range(_PUT_BACK_ROUNDS):
        if not holds(tree, path, full, expect):  # a save since the land checked the disk
            person = tree.read(path)
            tmp.unlink(missing_ok=True)
            merged = _onto(tree, path, person, before, new)
            if merged is None or person is None:
                return False  # their save stays as it is
            tmp, landed, wrote = merged[0], False, merged[1]
            expect = str(pygit2.hash(tree.filters.to_blob(path, person)))
            continue
        # named for what it will keep: a kill after the swap leaves it for recovery (``Kept``)
        tmp = name(tmp, path, expect, wrote, _size(full), tmp.parent)
        crashpoint("file.kept")
        try:
            swapped = atomic.exchange(tmp, full)
        except FileExistsError:
            continue  # a file appeared where there was none: checked again above
        if not swapped:
            os.replace(tmp, full)  # this file system cannot swap: the check was the last
            return landed
        if not os.path.lexists(tmp):
            return landed  # there was no file: nothing replaced
        was = mark(tmp, tree.seen_identity(path))  # before the check: a later write shows
        if not holds(tree, path, tmp, expect):
            _put_back(tree, path, tmp, expect, before, new)  # a save slipped in
            return False
        tree.kept.append(Kept(path, tmp, expect, wrote, _size(tmp), was))  # checked when over
        return landed
    tmp.unlink(missing_ok=True)  # the change only: the person's last save stays
    return False


def _put_back(
    tree: WorkingTree, path: str, saved: Path, was: str | None, before: str | None, new: pygit2.Oid
) -> None:
    """A save slipped in between the last check and the rename: ``saved`` (the file the
    rename replaced) holds it, ``was`` is what the check saw. Lines it appended are
    appended to the file now at ``path``; any other save gets the change merged in, or
    goes back as it is (``_put``, whose own check covers a further save)."""
    now = mark(saved)  # before reading: a write after the read shows in it
    data = saved.read_bytes() if saved.is_file() and not saved.is_symlink() else None
    old = pygit2.Oid(hex=was) if was is not None else None
    known = old is not None and tree.store.has_blob(old)
    if data is not None and old is not None and known and not tree.filters.converts(path):
        base = tree.store.blob_data(old, path)
        if data.startswith(base):  # appended in place, as a log or an autosave does
            fd = os.open(tree.root / path, os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, data[len(base) :])
            finally:
                os.close(fd)
            _kept_again(tree, path, saved, data, now, new)
            return
    merged = _onto(tree, path, data, before, new)
    here = tree.disk_blob(path)
    if merged is not None:
        if data is not None:
            _kept_again(tree, path, saved, data, now, new)
        else:
            saved.unlink()
        put(tree, path, merged[0], here, pygit2.Oid(hex=merged[1]))
    else:
        put(tree, path, saved, here, pygit2.Oid(hex=_blob_of(tree, path, saved)))


def _kept_again(
    tree: WorkingTree, path: str, saved: Path, data: bytes, now: Mark, new: pygit2.Oid
) -> None:
    """``saved`` (a replaced file whose save was just put back) kept until the land is over,
    named for what it held (``data``, marked ``now``): a process still writing through a
    descriptor opened before the rename writes there, and ``settle`` puts that back too."""
    blob = str(pygit2.hash(tree.filters.to_blob(path, data)))
    again = name(saved, path, blob, str(new), len(data), saved.parent)
    tree.kept.append(Kept(path, again, blob, str(new), len(data), now))


def _onto(
    tree: WorkingTree,
    path: str,
    person: bytes | None,
    before: str | None,
    new: pygit2.Oid,
) -> tuple[Path, str] | None:
    """A temp file holding the person's save ``person`` with the change (``before`` ->
    ``new``) merged in, and its blob (hex); None when they cannot be merged."""
    found = pygit2.Oid(hex=before) if before is not None else None
    if person is None or found is None or not tree.store.has_blob(found):
        return None  # what the person's save is based on is not known: no merge
    theirs = tree.filters.to_blob(path, person)
    base = tree.store.blob_data(found, path)
    change = tree.store.blob_data(new, path)
    merged = tree.store.merge_file(path, base, theirs, change)
    if merged is None:
        return None
    oid = tree.store.write_blob(merged)
    mode = tree.disk_mode(path) or 0o100644
    data = tree.filters.checkout_bytes(path, oid)
    # not fsynced: the person's file is at stake, not the land (the journal has that)
    return tree.staging.temp_file(tree.root / path, data, mode, fsync=False), str(oid)


def _blob_of(tree: WorkingTree, path: str, full: Path) -> str:
    """The blob (hex) ``git add`` would make of the file ``full`` if it were at ``path``."""
    return str(pygit2.hash(tree.filters.to_blob(path, full.read_bytes())))


def holds(tree: WorkingTree, path: str, full: Path, expect: str | None) -> bool:
    """True when the file ``full`` holds what ``path`` held when the land checked it (the
    blob ``expect``, or nothing), as git would compare it."""
    if expect is None:
        return not os.path.lexists(full)
    try:
        st = full.lstat()
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    seen = tree.seen_identity(path)
    if seen is not None and mark(full, seen) == seen:
        return True  # the very file the land checked, untouched since (see ``mark``)
    if full != tree.root / path:
        return _blob_of(tree, path, full) == expect
    if tree.disk_blob(path) == expect:
        return True
    return tree.as_checked_out(path, pygit2.Oid(hex=expect))


def remove(tree: WorkingTree, path: str, full: Path, expect: str) -> bool:
    """Remove the file ``full`` at ``path`` unless a person saved it since the land checked
    it (it then stays: False). The last check runs right before the rename out of the way;
    the file is then checked again, and kept until the land is over, as a replaced one is."""
    if not holds(tree, path, full, expect):
        return False
    folder = tree.staging.where(full) or full.parent
    trash = name(full, path, expect, "none", _size(full), folder)
    was = mark(trash, tree.seen_identity(path))  # before the check: a later write shows
    if not holds(tree, path, trash, expect):  # a save slipped in: it goes back
        with contextlib.suppress(FileExistsError):
            if not atomic.exchange(trash, full):
                os.rename(trash, full)
        trash.unlink(missing_ok=True)
        return False
    tree.kept.append(Kept(path, trash, expect, "none", _size(trash), was))
    return True


def _size(full: Path) -> int:
    """The size of the file at ``full`` (-1 when there is none)."""
    try:
        return full.lstat().st_size
    except OSError:
        return -1


def settle(tree: WorkingTree) -> None:
    """The land is over (its index written, its branch moved): each file it replaced
    (``tree.kept``) is checked once more, and a save written to it since the land checked it
    (an editor holding it open across the rename) is put back (``_keep``); then it goes."""
    for round_ in range(_PUT_BACK_ROUNDS):
        todo, tree.kept = tree.kept, []
        if not todo:
            return
        for item in todo:
            _unheld(item.file)
            data = _saved(tree, item)
            if data is not None:
                _keep(tree, item, data, last=round_ == _PUT_BACK_ROUNDS - 1)
            item.file.unlink(missing_ok=True)


def recover(tree: WorkingTree, paths: Sequence[str]) -> None:
    """Settle the files a killed land kept (``Kept``), ``paths`` being its journal's:
    a save in them is put back as ``settle`` does. One whose path is not known (no journal)
    and that holds neither blob of its name is set aside (``_aside``): never dropped."""
    keys = {key(p): p for p in paths}
    folders = {tree.staging.folder, *((tree.root / p).parent for p in paths)}
    for file in found(folders):
        item = Kept.of(file, None)
        if item is None:
            continue
        path = keys.get(item.key())
        if path is not None:
            tree.kept.append(Kept(path, file, item.expect, item.wrote, item.size))
            continue
        try:
            data = file.read_bytes()
        except OSError:
            continue
        if str(pygit2.hash(data)) not in (item.expect, item.wrote):
            path = _path_of(tree, item.key())  # named for its key only: HEAD's path of it
            theirs = tree.filters.to_blob(path, data) if path is not None else data
            if str(pygit2.hash(theirs)) not in (item.expect, item.wrote):  # as git adds it
                _aside(tree, replace(item, path=path or ""), data)
        file.unlink(missing_ok=True)
    settle(tree)


def _path_of(tree: WorkingTree, wanted: str) -> str | None:
    """The path of HEAD's tree whose ``key`` is ``wanted`` (None: none has it). Read only
    for a kept file that holds neither blob of its name byte for byte: git's conversions
    (autocrlf) may be all that tells them apart, and they depend on the path."""
    head = tree.store.ref_target("HEAD")
    if head is None:
        return None
    return next((p for p in tree.store.files(head) if key(p) == wanted), None)


def _unheld(file: Path) -> None:
    """Wait (``_HELD_WAIT_S`` at most) until no other process holds ``file`` open, so that a
    write through a descriptor opened before the rename (an editor between its open and its
    write) is in the file before its last check: a read lease (Linux ``F_SETLEASE``) is
    granted only when no other process has it open for writing. Returns at once where leases
    are not available (not the owner, another file system, another system)."""
    if _SETLEASE is None:
        return
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        # a lease break (another process opening it for writing meanwhile) signals the
        # holder, SIGIO by default, which would end this process: SIGURG is ignored
        with contextlib.suppress(OSError, AttributeError):
            fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGURG)
        deadline = time.monotonic() + _HELD_WAIT_S
        while True:
            try:
                # a read lease: granted while no other process has it open for writing
                # (readers such as `tail -f` or an indexer cost nothing)
                fcntl.fcntl(fd, _SETLEASE, fcntl.F_RDLCK)
            except OSError as exc:
                if exc.errno != errno.EAGAIN or time.monotonic() > deadline:
                    return
                time.sleep(0.001)  # held open elsewhere: a write may still come
                continue
            fcntl.fcntl(fd, _SETLEASE, fcntl.F_UNLCK)
            return
    finally:
        os.close(fd)


def _saved(tree: WorkingTree, item: Kept) -> bytes | None:
    """The bytes of ``item``'s file when something wrote to it since the land checked it,
    else None (it holds what was checked, or the land's own file that was never swapped)."""
    full = item.file
    if item.mark is not None and mark(full, item.mark) == item.mark:
        return None
    try:
        if not stat.S_ISREG(full.lstat().st_mode):
            return None
        data = full.read_bytes()
    except OSError:
        return None
    blob = str(pygit2.hash(tree.filters.to_blob(item.path, data)))
    return None if blob in (item.expect, item.wrote) else data


def _base(tree: WorkingTree, item: Kept, theirs: bytes) -> bytes | None:
    """What ``item``'s file held when the land checked it (as a blob), None when unknown:
    its first ``size`` bytes when they are that blob (a save appended), else the blob."""
    if 0 <= item.size <= len(theirs) and item.expect is not None:
        head = theirs[: item.size]
        if str(pygit2.hash(head)) == item.expect:
            return head
    if item.expect is not None and tree.store.has_blob(found := pygit2.Oid(hex=item.expect)):
        return tree.store.blob_data(found, item.path)
    return None


def _keep(tree: WorkingTree, item: Kept, data: bytes, *, last: bool) -> None:
    """Put back a save ``data`` that reached the kept ``item`` after the land's check: lines
    it appended are appended to the file at its path; any other save is merged with what that
    file holds now (base: what the land checked), or goes back as the person saved it when that
    file still holds the land's committed bytes; else (or on the ``last`` round) it is set
    aside (``_aside``)."""
    full = tree.root / item.path
    converts = tree.filters.converts(item.path)
    theirs = tree.filters.to_blob(item.path, data)
    base = _base(tree, item, theirs)
    regular = os.path.isfile(full) and not os.path.islink(full)
    if base is not None and regular and not converts and theirs.startswith(base):
        fd = os.open(full, os.O_WRONLY | os.O_APPEND)  # appended in place: a log, an autosave
        try:
            os.write(fd, theirs[len(base) :])
        finally:
            os.close(fd)
        return
    if item.wrote == "none" and not os.path.lexists(full):  # the land deleted it
        try:
            executable = os.stat(item.file).st_mode & 0o111
        except OSError:
            executable = 0
        mode = 0o100755 if executable else 0o100644
        tmp = tree.staging.temp_file(full, data, mode, fsync=False)
        if put(tree, item.path, tmp, None, tree.store.write_blob(theirs)):
            return
    now = tree.read(item.path) if regular else None
    if now is not None and not last:
        ours = tree.filters.to_blob(item.path, now)
        here = str(pygit2.hash(ours))
        merged = None if base is None else tree.store.merge_file(item.path, base, ours, theirs)
        if merged is None and here == item.wrote:
            merged = theirs  # the land's bytes, committed: the person's save goes back whole
        if merged is not None:
            oid = tree.store.write_blob(merged)
            mode = tree.disk_mode(item.path) or 0o100644
            out = tree.filters.checkout_bytes(item.path, oid)
            tmp = tree.staging.temp_file(full, out, mode, fsync=False)
            if put(tree, item.path, tmp, here, oid):
                return
    _aside(tree, item, data)


def _aside(tree: WorkingTree, item: Kept, data: bytes) -> None:
    """Keep a person's save that cannot go back in place in the repository's common
    ``.git/gitpatch/saves/`` (never a linked worktree's own git directory, which goes when the
    worktree is removed), where nothing of gitpatch deletes; listed in ``tree.set_aside``."""
    common = common_dir(str(tree.staging.gitdir))
    label = _label(item.path, item.key())
    where = str(tree.root)
    file = common / "gitpatch" / "saves" / f"{label}.{time.time_ns()}.w{key(where)}"
    file.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_atomic(file, data, durable=True)
    tree.set_aside.append((item.path, file))
    # the save first, then what names it: a record the disk refuses loses no save (it is
    # then listed with its worktree, or its key-named path, unknown)
    with contextlib.suppress(OSError):
        _from(common, tree.root)
        if item.path and label.startswith("%"):  # named for its key: the path kept beside it
            _record(common / "gitpatch" / "saved-paths", item.key(), item.path)


def _label(path: str, path_key: str) -> str:
    """A save's label: its path, each ``/`` a ``%`` (a path never starts with ``/``); or, when
    the path is not known, holds a ``%``, is not UTF-8 or is long, ``%`` and its key (then
    ``%`` and its file name's tail, for people)."""
    try:
        size = len(path.encode("utf-8"))
    except UnicodeEncodeError:
        size = _ASIDE_NAME_BYTES + 1
    if path and "%" not in path and size <= _ASIDE_NAME_BYTES:
        return path.replace("/", "%")
    tail = os.path.basename(path).encode("utf-8", "surrogateescape")[-64:]
    named = tail.decode("utf-8", "ignore")
    return f"%{path_key}%{named}" if named else f"%{path_key}"


def _from(common: Path, root: Path) -> str:
    """The key of the worktree folder ``root`` a save comes from, its path kept in
    ``.git/gitpatch/saved-from/<key>`` (a save outlives the worktree)."""
    where = str(root)
    mark = key(where)
    _record(common / "gitpatch" / "saved-from", mark, where)
    return mark


def _record(folder: Path, mark: str, text: str) -> None:
    """Keep ``text`` (a path, whose ``key`` is ``mark``) in ``folder/mark``, once."""
    record = folder / mark
    if not record.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        atomic.write_atomic(record, text.encode("utf-8", "surrogateescape"), durable=True)


def rescue(gitdir: Path, root: Path) -> None:
    """Move the saves an older gitpatch set aside in the linked worktree's own git directory
    ``gitdir`` (its folder ``root``) into the common ``.git/gitpatch/saves/``, named as
    ``_aside`` names them: removing the worktree then takes none of them."""
    folder = gitdir / "gitpatch" / "saves"
    try:
        names = os.listdir(folder)
    except OSError:
        return
    common = common_dir(str(gitdir))
    into = common / "gitpatch" / "saves"
    into.mkdir(parents=True, exist_ok=True)
    for entry in names:
        named = _OLD_NAME.fullmatch(entry)
        if named is None or not (folder / entry).is_file():
            continue  # not a save (a temp file of one being written): left with the folder
        label = named["label"]
        keyed = _OLD_KEY.fullmatch(label)
        if keyed is not None and key(label.replace("%", "/")) != keyed["key"]:
            label = "%" + label  # named for its key
        os.rename(folder / entry, into / f"{label}.{named['ns']}.w{_from(common, root)}")


#: A set-aside save's name: its label (``_label``), when (ns), and the key of its worktree
#: folder (``_from``).
_SAVED_NAME = re.compile(r"(?P<label>.+)\.(?P<ns>[0-9]+)\.w(?P<wt>[0-9a-f]{16})", re.DOTALL)
_KEY_LABEL = re.compile(r"%(?P<key>[0-9a-f]{16})(%.*)?", re.DOTALL)
#: The name an older gitpatch gave: label then when, a key label not marked (``rescue``).
_OLD_NAME = re.compile(r"(?P<label>.+)\.(?P<ns>[0-9]+)", re.DOTALL)
_OLD_KEY = re.compile(r"(?P<key>[0-9a-f]{16})(%.*)?", re.DOTALL)


@dataclass(frozen=True)
class Saved:
    """A person's save set aside in ``file``: the save of ``path`` ("" when not known),
    set aside at ``time_ns``, in the worktree at ``worktree`` ("" when not known)."""

    path: str
    file: Path
    time_ns: int
    worktree: str


def listing(store: Store) -> list[Saved]:
    """Every save set aside in the repository, oldest first: those in the common
    ``.git/gitpatch/saves/``, and those an older gitpatch left in a linked worktree's own git
    directory. Only regular files named as a save are; anything else there is not listed."""
    common = common_dir(str(store.git_dir))
    found: list[Saved] = []
    paths: dict[str, str] | None = None
    older = [(g, _worktree_of(g)) for g in sorted((common / "worktrees").glob("*/"))]
    for gitdir, where in [(common, _main_folder(common)), *older]:
        folder = gitdir / "gitpatch" / "saves"
        for entry in _entries(folder):
            named = _SAVED_NAME.fullmatch(entry) if gitdir == common else None
            if named is not None:
                label, keyed = named["label"], _KEY_LABEL.fullmatch(named["label"])
                if label.startswith("%") and keyed is None:
                    continue  # a marked label that is no key: not a name gitpatch gives
                path = "" if keyed is not None else label.replace("%", "/")
                from_ = _recorded(common, named["wt"])
            else:  # as an older gitpatch named it, kept where it put it
                named = _OLD_NAME.fullmatch(entry)
                if named is None:
                    continue
                label, keyed = named["label"], _OLD_KEY.fullmatch(named["label"])
                path = label.replace("%", "/")
                if keyed is not None and key(path) == keyed["key"]:
                    keyed = None  # a path that happens to look like its own key
                from_ = where
            if keyed is not None:  # named for its key: the path kept for it, else HEAD's
                path = _recorded(common, keyed["key"], "saved-paths")
                if key(path) == keyed["key"]:
                    found.append(Saved(path, folder / entry, int(named["ns"]), from_))
                    continue
                if paths is None:
                    head = store.ref_target("HEAD")
                    paths = {key(p): p for p in (store.files(head) if head is not None else ())}
                path = paths.get(keyed["key"], "")
            found.append(Saved(path, folder / entry, int(named["ns"]), from_))
    return sorted(found, key=lambda s: (s.time_ns, str(s.file)))


def _entries(folder: Path) -> list[str]:
    """The names in ``folder`` that may be saves: regular files, named in UTF-8."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    out = []
    for entry in names:
        try:
            entry.encode("utf-8")
        except UnicodeEncodeError:
            continue
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.lstat(folder / entry).st_mode):
                out.append(entry)
    return out


def _recorded(common: Path, mark: str, kind: str = "saved-from") -> str:
    """What ``_record`` kept for ``mark`` in ``kind``: the worktree folder a save comes from
    (``_from``), or the path of a save named for its key (``_aside``); "" when not recorded."""
    try:
        return (common / "gitpatch" / kind / mark).read_bytes().decode("utf-8", "surrogateescape")
    except OSError:
        return ""


def _main_folder(common: Path) -> str:
    """The main worktree's folder: the one holding ``.git`` ("" for a separate git dir)."""
    return str(common.parent) if common.name == ".git" else ""


def _worktree_of(gitdir: Path) -> str:
    """The folder of the linked worktree whose git directory is ``gitdir`` ("" unknown)."""
    try:
        text = (gitdir / "gitdir").read_text(encoding="utf-8").strip()
    except OSError:
        return ""
    return str(Path(text).parent)
