"""git's index file as bytes: find its parts, patch a few entries in place, write it back.

libgit2 rewrites the whole index to change one entry (and hashes it with its slow,
collision-detecting SHA-1). A land changes a handful of existing entries, so this module
changes only their fixed-size fields (stat data, object id, mode) in a copy of the file, fixes
the cache-tree (``TREE``) extension for their parent directories, recomputes ``EOIE`` and the
checksum, and writes the result through ``index.lock``. Everything it does not handle raises
``Unsupported`` and the caller falls back to a whole-index write: index version 4 (compressed
names), mandatory extensions (split index ``link``, sparse index ``sdir``), entries that are
conflicted, skip-worktree, intent-to-add or assume-valid, and paths that are added or removed.

The functions here are pure (bytes in, bytes out) except ``rewrite_locked``, the writer, and
those of skip-worktree entries below. Format: git's ``Documentation/technical/index-format.txt``.

Skip-worktree entries: files of a sparse checkout (or hidden with ``--skip-worktree``).
git takes such a file's content from the index, never from the disk (it is usually absent),
so gitpatch reads it from the commit, never records it as deleted, and lands a change to it
in the index only, keeping the bit, without writing the disk. libgit2 drops the bit of an
entry it replaces, so the entries are updated with ``git update-index``.

A sparse index (``index.sparse``) holds a whole directory outside the cone as one entry.
``git update-index --index-info`` adds a file entry inside such a directory WITHOUT expanding
it (git 2.39): the index would then list both ``b/`` and ``b/g.txt``, and the person's next
commit would record a tree with duplicate entries. Every ``--index-info`` therefore runs with
``index.sparse=false`` when the index is sparse (``expanding``): git expands the index as any
command that is not sparse-aware does, and the next write with the person's setting collapses
what can be collapsed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import struct
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from gitpatch.checkout import gitbin
from gitpatch.safety.owners import take_lock
from gitpatch.safety.recovery import crashpoint

__all__ = [
    "EntryUpdate",
    "Layout",
    "Unsupported",
    "expanding",
    "layout",
    "mandatory_extensions",
    "patch",
    "read_index",
    "read_mandatory_extensions",
    "remember",
    "rewrite_locked",
    "skipped",
    "update_entries",
    "write_locked",
]

_SIGNATURE = b"DIRC"
_HASH = 20
_FIXED = 62  # stat data (40) + object id (20) + flags (2)
_NAME_MASK = 0x0FFF
_REGULAR = (0o100644, 0o100755)
_VALID_MODES = (0o100644, 0o100755, 0o120000, 0o160000, 0o040000)
#: Optional extensions kept as they are: they stay true when only stat data and ids change.
_KEPT = (b"TREE", b"REUC", b"UNTR", b"FSMN", b"IEOT", b"EOIE")
_TREE_NODE = re.compile(rb"([^\x00]*)\x00(-?[0-9]+) ([0-9]+)\n")
#: Where the entries end, by the index's checksum: walking 20,000 entries costs milliseconds.
_ENDS: dict[bytes, int] = {}
_ENDS_MAX = 16


class Unsupported(Exception):
    """The index is in a shape this module does not patch; write it another way."""


@dataclass(frozen=True)
class Extension:
    """One extension: its signature and where its payload is in the file."""

    signature: bytes
    start: int
    size: int


@dataclass(frozen=True)
class Layout:
    """Where the parts of an index file are: entries from 12 to ``entries_end``, then the
    extensions, then the checksum."""

    version: int
    count: int
    entries_end: int
    extensions: tuple[Extension, ...]


@dataclass(frozen=True)
class EntryUpdate:
    """New content for one existing stage-0 entry: object id (20 bytes), mode, and the stat
    data of the file on disk (``os.stat_result``)."""

    oid: bytes
    mode: int
    stat: os.stat_result


# -- reading ------------------------------------------------------------------------------------


def layout(data: bytes) -> Layout:
    """The header, the end of the entries and the extensions of index ``data``."""
    if len(data) < 12 + _HASH or data[:4] != _SIGNATURE:
        raise Unsupported("not an index file")
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (2, 3, 4):
        raise Unsupported(f"index version {version}")
    end = _entries_end(data, version, count)
    return Layout(version, count, end, tuple(_extensions(data, end)))


def mandatory_extensions(data: bytes) -> list[str]:
    """The mandatory extensions (lowercase signature: ``link``, ``sdir``) of index ``data``;
    these are what libgit2 refuses to read."""
    return [
        ext.signature.decode("ascii", "replace")
        for ext in layout(data).extensions
        if not ext.signature[:1].isupper()
    ]


def read_mandatory_extensions(index_path: str) -> list[str]:
    """``mandatory_extensions`` of the index file at ``index_path``, reading only its tail
    when this process already knows where its entries end (the usual case)."""
    with open(index_path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size >= 12 + _HASH:
            fh.seek(size - _HASH)
            end = _ENDS.get(fh.read(_HASH))
            if end is not None and end <= size - _HASH:
                fh.seek(end)
                tail = fh.read()
                return [
                    ext.signature.decode("ascii", "replace")
                    for ext in _extensions(tail, 0)
                    if not ext.signature[:1].isupper()
                ]
        fh.seek(0)
        return mandatory_extensions(fh.read())


def _entries_end(data: bytes, version: int, count: int) -> int:
    trailer = bytes(data[-_HASH:])
    if trailer == bytes(_HASH):
        raise Unsupported("index without a checksum (index.skipHash)")
    if trailer in _ENDS:
        return _ENDS[trailer]
    end = _end_from_eoie(data)
    if end is None and version != 4:
        end = _end_before_tree(data)
    if end is None:
        end = _walk(data, version, count)
    _remember(trailer, end)
    return end


def _remember(trailer: bytes, end: int) -> None:
    if len(_ENDS) >= _ENDS_MAX:
        _ENDS.clear()
    _ENDS[trailer] = end


def _end_from_eoie(data: bytes) -> int | None:
    """The entries' end recorded by an ``EOIE`` extension (the last one), when there is one."""
    at = len(data) - _HASH - 8 - 24
    if at < 12 or data[at : at + 8] != b"EOIE\x00\x00\x00\x18":
        return None
    (end,) = struct.unpack_from(">I", data, at + 8)
    return int(end) if 12 <= end <= at else None


def _end_before_tree(data: bytes) -> int | None:
    """Where the entries end when the cache tree is the first extension (git's usual layout):
    searched for, then checked, so a walk over every entry is not needed. The place must be an
    entry boundary (12 + multiples of 8), the extension headers from there must lead exactly
    to the checksum, the tree's root node must start there, and the bytes before must end a
    plausible entry."""
    limit = len(data) - _HASH
    at = data.find(b"TREE\x00", 12, limit)
    while at >= 0:
        if (
            at % 8 == 4
            and data[at + 8 : at + 9] == b"\x00"
            and _headers_reach(data, at, limit)
            and _ends_an_entry(data, at)
        ):
            return at
        at = data.find(b"TREE\x00", at + 1, limit)
    return None


def _headers_reach(data: bytes, pos: int, limit: int) -> bool:
    while pos < limit:
        if pos + 8 > limit or not data[pos : pos + 4].isalpha():
            return False
        (size,) = struct.unpack_from(">I", data, pos + 4)
        pos += 8 + size
    return pos == limit


def _ends_an_entry(data: bytes, end: int) -> bool:
    """True when some entry of a plausible shape (stat, id, flags, name, NUL padding) ends at
    ``end``."""
    for length in range(_FIXED + 2, min(end - 12, _FIXED + 2 + _NAME_MASK + 8) + 1, 8):
        start = end - length
        flags = data[start + 60] << 8 | data[start + 61]
        fixed = _FIXED + 2 if flags & 0x4000 else _FIXED
        n = flags & _NAME_MASK
        if n < _NAME_MASK and (fixed + n + 8) & ~7 == length:
            name, pad = data[start + fixed : start + fixed + n], data[start + fixed + n : end]
            if b"\x00" not in name and pad.count(0) == len(pad):
                return True
    return False


def _walk(data: bytes, version: int, count: int) -> int:
    if version == 4:
        return _walk_v4(data, count)
    pos = 12
    limit = len(data) - _HASH
    for _ in range(count):
        flags = data[pos + 60] << 8 | data[pos + 61]
        fixed = _FIXED + 2 if flags & 0x4000 else _FIXED
        n = flags & _NAME_MASK
        if n == _NAME_MASK:
            n = data.index(b"\x00", pos + fixed) - pos - fixed
        pos += (fixed + n + 8) & ~7
        if pos > limit:
            raise Unsupported("truncated index")
    return pos


def _walk_v4(data: bytes, count: int) -> int:
    """The end of the entries of a version 4 index: each entry's name is a varint (how much
    of the previous name to drop) and a NUL-terminated suffix, with no padding. Enough to
    find the extensions (a split or sparse index in v4); entries are never patched there."""
    pos = 12
    limit = len(data) - _HASH
    for _ in range(count):
        flags = data[pos + 60] << 8 | data[pos + 61]
        pos += _FIXED + 2 if flags & 0x4000 else _FIXED
        while pos < limit and data[pos] & 0x80:
            pos += 1
        nul = data.find(b"\x00", pos + 1, limit)
        if nul < 0:
            raise Unsupported("truncated index")
        pos = nul + 1
    return pos


def _extensions(data: bytes, end: int) -> Iterator[Extension]:
    pos, limit = end, len(data) - _HASH
    while pos < limit:
        if pos + 8 > limit:
            raise Unsupported("truncated extension header")
        sig = data[pos : pos + 4]
        (size,) = struct.unpack_from(">I", data, pos + 4)
        if pos + 8 + size > limit:
            raise Unsupported("truncated extension")
        yield Extension(sig, pos + 8, size)
        pos += 8 + size


def find_entry(data: bytes, where: Layout, path: str) -> int:
    """The offset of the plain stage-0 entry for ``path``: no flags but the name length (so
    not conflicted, assume-valid, skip-worktree or intent-to-add); else ``Unsupported``."""
    # Bytes read_index holds stay alive there, so identity names the very same index.
    found = next((r[2] for r in _READS.values() if r[1] is data), None)
    if found is None:
        return _scan(data, where, path)
    if path not in found:
        found[path] = _scan(data, where, path)
    return found[path]


def _scan(data: bytes, where: Layout, path: str) -> int:
    if where.version == 4:
        raise Unsupported("index version 4 (prefix-compressed names)")
    name = path.encode("utf-8")
    if len(name) >= _NAME_MASK:
        raise Unsupported("very long path")
    needle = struct.pack(">H", len(name)) + name + b"\x00"
    found = -1
    start = 12 + 60
    while True:
        at = data.find(needle, start, where.entries_end)
        if at < 0:
            break
        # Names hold no NUL, so a hit is an entry's flags and name unless the bytes around it
        # (stat data, id) happen to spell them: check the entry's shape and its neighbour's.
        if _plausible(data, at - 60, where.entries_end, len(name)):
            if found >= 0:
                raise Unsupported(f"{path}: ambiguous entry")
            found = at - 60
        start = at + 1
    if found < 0:
        raise Unsupported(f"{path}: no plain stage-0 entry")
    return found


def _plausible(data: bytes, entry: int, end: int, n: int) -> bool:
    (mode,) = struct.unpack_from(">I", data, entry + 24)
    if entry < 12 or mode not in _VALID_MODES:
        return False
    stop = entry + ((_FIXED + n + 8) & ~7)
    pad = data[entry + _FIXED + n : stop]
    if stop > end or pad.count(0) != len(pad):
        return False
    if stop == end:
        return True
    if stop + _FIXED > end:
        return False
    flags = data[stop + 60] << 8 | data[stop + 61]
    fixed = _FIXED + 2 if flags & 0x4000 else _FIXED
    nul = data.find(b"\x00", stop + fixed, end)
    return nul >= 0 and (flags & _NAME_MASK in (nul - stop - fixed, _NAME_MASK))


# -- patching -----------------------------------------------------------------------------------


def patch(
    data: bytes,
    updates: Mapping[str, EntryUpdate],
    trees: Mapping[str, tuple[bytes | None, bytes | None]],
) -> bytearray:
    """Index ``data`` with the entries of ``updates`` rewritten, and its new checksum.

    ``trees`` maps each parent directory of the updated paths (``""`` for the root) to its
    tree id before and after the change: a cache-tree entry holding the "before" id is moved
    to the "after" id, any other is invalidated, as git does when it cannot tell.
    """
    where = layout(data)
    out = bytearray(data)
    del out[where.entries_end :]
    for path, update in updates.items():
        at = find_entry(data, where, path)
        (mode,) = struct.unpack_from(">I", data, at + 24)
        if mode not in _REGULAR or update.mode not in _REGULAR or len(update.oid) != _HASH:
            raise Unsupported(f"{path}: not a regular file")
        out[at : at + 60] = _entry_fields(update)
    exts: list[tuple[bytes, bytes]] = []
    for ext in where.extensions:
        payload = data[ext.start : ext.start + ext.size]
        if not ext.signature[:1].isupper():
            raise Unsupported(f"mandatory extension {ext.signature!r}")
        if ext.signature == b"TREE":
            payload = patch_cache_tree(payload, trees)
        if ext.signature in _KEPT:
            exts.append((ext.signature, payload))
    for sig, payload in exts:
        if sig == b"EOIE":
            payload = _eoie(where.entries_end, exts)
        out += sig + struct.pack(">I", len(payload)) + payload
    out += hashlib.sha1(out).digest()
    _remember(bytes(out[-_HASH:]), where.entries_end)
    return out


def _entry_fields(update: EntryUpdate) -> bytes:
    """The stat data, mode and id of an entry, as git records them (32-bit fields)."""
    st = update.stat
    mask = 0xFFFFFFFF
    return (
        struct.pack(
            ">10I",
            int(st.st_ctime) & mask,
            st.st_ctime_ns % 1_000_000_000,
            int(st.st_mtime) & mask,
            st.st_mtime_ns % 1_000_000_000,
            st.st_dev & mask,
            st.st_ino & mask,
            update.mode,
            st.st_uid & mask,
            st.st_gid & mask,
            st.st_size & mask,
        )
        + update.oid
    )


def stat_matches(data: bytes, at: int, st: os.stat_result, index_mtime_ns: int) -> bytes | None:
    """The object id of the entry at ``at`` when ``st`` is exactly its recorded stat data and
    the entry is not racy (recorded before the index file was written): git's own test that
    a file is unchanged. None when git would look at the content."""
    (mode,) = struct.unpack_from(">I", data, at + 24)
    if data[at : at + 40] != _entry_fields(EntryUpdate(bytes(_HASH), mode, st))[:40]:
        return None
    seconds, nanos = struct.unpack_from(">II", data, at + 8)
    if seconds * 1_000_000_000 + nanos >= index_mtime_ns:
        return None
    return data[at + 40 : at + 60]


def _eoie(entries_end: int, exts: list[tuple[bytes, bytes]]) -> bytes:
    digest = hashlib.sha1()
    for sig, payload in exts:
        if sig != b"EOIE":
            digest.update(sig + struct.pack(">I", len(payload)))
    return struct.pack(">I", entries_end) + digest.digest()


def patch_cache_tree(
    payload: bytes, trees: Mapping[str, tuple[bytes | None, bytes | None]]
) -> bytes:
    """The ``TREE`` extension with the directories of ``trees`` moved or invalidated.

    Nodes come in pre-order (a node, then its subtrees); the walk stops after the last
    directory of ``trees`` and copies the rest as it is.
    """
    out = bytearray()
    pos, left = 0, len(trees)
    stack: list[list[Any]] = []  # [path, subtrees still to come under it]
    while pos < len(payload) and left:
        node = _TREE_NODE.match(payload, pos)
        if node is None:
            raise Unsupported("malformed TREE extension")
        name, entries, subtrees = node.groups()
        pos = node.end()
        oid = None
        if entries != b"-1":
            oid = payload[pos : pos + _HASH]
            pos += _HASH
        while stack and stack[-1][1] == 0:
            stack.pop()
        if stack:
            stack[-1][1] -= 1
            path = stack[-1][0] + b"/" + name if stack[-1][0] else name
        else:
            path = name
        stack.append([path, int(subtrees)])
        key = path.decode("utf-8", "surrogateescape")
        if key in trees:
            left -= 1
            before, after = trees[key]
            if oid is not None and oid == before and after is not None:
                oid = after
            elif oid is not None:
                oid, entries = None, b"-1"
        out += name + b"\x00" + entries + b" " + subtrees + b"\n" + (oid or b"")
    out += payload[pos:]
    return bytes(out)


# -- writing ------------------------------------------------------------------------------------


def rewrite_locked(index_path: str, change: Callable[[bytes], bytes | bytearray]) -> None:
    """Take ``index.lock``, read the index, write ``change(data)`` and rename it into place.

    The lock is taken before reading, as git does, so no writer can slip in between. A held
    lock raises ``FileExistsError`` (an ``OSError``); ``Unsupported`` from ``change`` (or any
    error) leaves the index untouched and the lock removed. The new file keeps the old one's
    permissions (``core.sharedRepository`` may have widened them).
    """
    lock = index_path + ".lock"
    fd = take_lock(lock)  # proved as this process's, so recovery may remove it after a kill
    try:
        data, _mtime = read_index(index_path)
        new = bytes(change(data))
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(lock)
        raise
    write_locked(fd, index_path, new)


def write_locked(fd: int, index_path: str, data: bytes) -> None:
    """Write ``data`` through the taken ``index.lock`` (open as ``fd``, which this closes) and
    rename it into place, with the old index's permissions; on any error the lock is removed
    and the index is untouched."""
    lock = index_path + ".lock"
    try:
        with contextlib.suppress(FileNotFoundError):
            os.fchmod(fd, os.stat(index_path).st_mode & 0o7777)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.close(fd)
        fd = -1
        os.replace(lock, index_path)
        _keep(index_path, os.stat(index_path), data)  # the next call's checks read this
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(lock)
        raise


# index path -> (stat key, bytes, path -> entry offset found in them, settled) of its last
# read or write; see read_index. The offsets spare a repeated scan of an unchanged index.
_READS: dict[str, tuple[tuple[int, ...], bytes, dict[str, int], bool]] = {}
#: How long ago a file must have changed for its stat data alone to tell it from its next
#: version: file times come from a coarse clock, so two writes within a tick may share them.
_SETTLED_NS = 100_000_000


def _key(st: os.stat_result) -> tuple[int, ...]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _kept(index_path: str, st: os.stat_result) -> bytes | None:
    """The bytes kept for ``index_path`` when they are still the file's: the same stat data
    and the same trailing checksum (a SHA-1 of all the rest), or, for an index written without
    one (``index.skipHash``), the same stat data of a file that had settled when it was read."""
    kept = _READS.get(index_path)
    if kept is None or kept[0] != _key(st):
        return None
    tail = kept[1][-_HASH:]
    if not any(tail):
        return kept[1] if kept[3] else None
    try:
        fd = os.open(index_path, os.O_RDONLY)
        try:
            same = os.pread(fd, _HASH, st.st_size - _HASH) == tail
        finally:
            os.close(fd)
    except OSError:
        return None
    return kept[1] if same else None


def remember(index_path: str, data: bytes) -> None:
    """``data`` was just renamed into place at ``index_path``: the next ``read_index`` may use
    it (while the file's stat data and checksum still say so, see ``_kept``)."""
    _keep(index_path, os.stat(index_path), data)


def _keep(index_path: str, st: os.stat_result, data: bytes) -> None:
    settled = time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > _SETTLED_NS
    if settled or any(data[-_HASH:]):
        _READS[index_path] = (_key(st), data, {}, settled)
    else:
        _READS.pop(index_path, None)


def read_index(index_path: str) -> tuple[bytes, int]:
    """The bytes of the index file at ``index_path`` and its mtime (ns).

    A call reads it once, however many checks look at it: the bytes of the last read (or of
    gitpatch's own last write) are reused while they are provably still the file's (see
    ``_kept``). Git and libgit2 always replace the index with a new file.
    """
    st = os.stat(index_path)
    data = _kept(index_path, st)
    if data is not None:
        return data, st.st_mtime_ns
    with open(index_path, "rb") as fh:
        st = os.fstat(fh.fileno())
        data = fh.read()
    _keep(index_path, st, data)
    return data, st.st_mtime_ns


_NULL = "0" * 40


def skipped(gitdir: Path, root: Path, paths: Iterable[str]) -> set[str]:
    """Those of ``paths`` whose index entry has the skip-worktree bit.

    The bit lives in the extended entry flags, which need index version 3 or 4: a version 2
    index (the usual one) answers at once, without starting git.
    """
    wanted = list(paths)
    if not wanted or _index_version(gitdir) < 3:
        return set()
    stamp, known = _CACHE.get(str(gitdir), (None, {}))
    now = _stamp(gitdir)
    if stamp != now:
        known = {}
        _CACHE[str(gitdir)] = (now, known)
    asked = [p for p in dict.fromkeys(wanted) if p not in known]
    if asked:
        out = gitbin.run(
            str(gitdir), str(root), ["--literal-pathspecs", "ls-files", "-t", "-z", "--", *asked]
        )
        rows = out.decode("utf-8", "surrogateescape").split("\0")
        hidden = {row[2:] for row in rows if row.startswith("S ")}
        known.update((p, p in hidden) for p in asked)
    return {p for p in wanted if known[p]}


# git directory -> (index file stamp, path -> has the bit): the bits change only with the index
# file, which git and libgit2 always replace (a new inode), so its stat tells a new one.
_CACHE: dict[str, tuple[tuple[int, int, int] | None, dict[str, bool]]] = {}


def _stamp(gitdir: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(gitdir / "index")
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def update_entries(
    gitdir: Path, root: Path, tree: pygit2.Tree | None, paths: Sequence[str], index: str
) -> None:
    """Point the entries of ``paths`` at their blobs in ``tree`` (removing the ones it lacks),
    the skip-worktree bit kept; the disk is not touched. ``index``: the land's scratch index
    (``checkout.index``): the two git steps below reach the real index in one rename, so
    a kill between them never leaves an entry without its bit."""
    if not paths:
        return
    lines = []
    kept = []
    for path in paths:
        obj = _blob(tree, path)
        if obj is None:
            lines.append(f"0 {_NULL}\t{path}\0")
        else:
            lines.append(f"{int(obj.filemode):o} {obj.id}\t{path}\0")
            kept.append(path)
    run = gitbin.run
    info = [*expanding(index), "update-index", "-z", "--index-info"]
    run(str(gitdir), str(root), info, _bytes("".join(lines)), index=index)
    crashpoint("index.skip_worktree")
    if kept:
        stdin = _bytes("".join(f"{p}\0" for p in kept))
        args = ["update-index", "-z", "--skip-worktree", "--stdin"]
        run(str(gitdir), str(root), args, stdin, index=index)


def expanding(index: str) -> list[str]:
    """git options that make an index-writing command expand a sparse index first (empty
    for any other index): see the module docstring on a sparse index. ``index``: the index
    file's path."""
    try:
        sparse_index = "sdir" in read_mandatory_extensions(index)
    except (OSError, Unsupported):
        sparse_index = False
    return ["-c", "index.sparse=false"] if sparse_index else []


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _blob(tree: pygit2.Tree | None, path: str) -> pygit2.Object | None:
    if tree is None:
        return None
    try:
        obj = tree[path]
    except KeyError:
        return None
    return obj if obj.type == pygit2.enums.ObjectType.BLOB else None


def _index_version(gitdir: Path) -> int:
    try:
        with open(gitdir / "index", "rb") as fh:
            header = fh.read(8)
    except OSError:
        return 0
    return int.from_bytes(header[4:8], "big") if header[:4] == b"DIRC" else 0
