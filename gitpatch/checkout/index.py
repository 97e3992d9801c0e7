"""The index during a land: git's ``index.lock`` held across it, and the landed paths' entries.

A land holds git's ``index.lock`` from before it writes its files until its branch moved, as
git's own commands take it before they write the index and keep it until they have moved
their branch. A land does the same across its whole step, in git's order (the file
renames, the index renamed into place, then the ref transaction), so a person's ``git commit``,
``git commit -a``, ``git stash``, ``git add`` or ``git checkout`` runs wholly before the land or
wholly after it (or fails at once with git's own "Another git process seems to be running"). A
person's git that read the index before the land sees the branch it read move under it and its
own compare-and-swap fails; one that reads the branch after the land moved it reads the new
index too, since the index was renamed first. None records the agent's change as reverted.

Every index change of one land is committed by ONE rename of a scratch copy in ``.git/gitpatch``
over the index, the lock still held until the land ends: entries patched in the index's bytes
(``indexfile``) are written there, and what only the git binary does (split and sparse indexes,
filters, the skip-worktree bit) runs on it with ``GIT_INDEX_FILE``. A kill before that rename
leaves the old index, a kill after it the new one; either way the land's journal stays, and
recovery puts the index back (the branch never moved) or writes it again (it did).

The lock is taken through the operation's owner record (``Record.pin``): listed in every plan
written while it is held and proved, so recovery removes it after a kill, and only then.

What this does not do: it does not stop readers (``git status``, ``git diff`` read without the
lock, as they do while git itself writes), nor an editor, which knows nothing of git's locks
(``WorkingTree`` checks the disk again right before each rename).

The index entries of landed paths are brought up to date the cheapest way that stays exact.
Every write goes through the land's held ``index.lock`` (``HeldIndex``), committed by one
rename after the branch moved. Three ways, tried in order by ``sync``:

1. patch: when every path is an existing plain entry of a regular file that keeps existing,
   with no conversion between disk and blob (no ``core.autocrlf``, ``text``, ``eol``,
   ``filter``, ``ident`` or ``working-tree-encoding`` attribute), only those entries change,
   in a copy of the index bytes (``gitpatch.indexfile``): no whole-index rewrite.
2. git: everything else (and always an index libgit2 cannot read: split index
   ``core.splitIndex``, sparse index ``index.sparse``, in any index version) is updated by the
   ``git`` binary itself on the held index's scratch copy (``git update-index``, as ``git add``
   does), which keeps the format the user chose.
3. libgit2, only when there is no git binary: the whole index rewritten by libgit2, which
   takes ``index.lock`` itself, so the held lock is released for it (the one gap left).

``check_writable`` is the pre-flight: it refuses, before anything moves, an index that only
git can write when no ``git`` binary is found.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pygit2

from gitpatch.checkout import gitbin, indexfile
from gitpatch.errors import ConcurrentUpdate, RepositoryError
from gitpatch.safety.owners import Record, operation, retry_locked
from gitpatch.safety.recovery import adopt_index_lock

__all__ = [
    "INDEX_LOCK_WAIT_SECONDS",
    "HeldIndex",
    "check_writable",
    "held_index",
    "index_path",
    "needs_git",
    "plain_entries",
    "recorded_blob",
    "remove_scratch",
    "sync",
]

#: How long a land waits for a git command holding ``index.lock`` before it refuses
#: (``concurrent_update``, locked): git's own commands hold it for milliseconds.
INDEX_LOCK_WAIT_SECONDS = 2.0


class HeldIndex:
    """``index.lock`` of one checkout, held; the index changes a land makes, committed at once."""

    def __init__(self, gitdir: Path, record: Record) -> None:
        self.path = str(gitdir / "index")
        self.lock = self.path + ".lock"
        self._record = record
        self._fd = -1
        self._scratch = gitdir / "gitpatch" / f"index.{os.getpid()}.scratch"
        # a hard link to the index a land replaced, to put back if its branch does not move
        self._before = gitdir / "gitpatch" / f"index.{os.getpid()}.before"
        self._had_index = True
        self._pending: bytes | None = None  # patched bytes not yet written anywhere
        self._copied = False  # the scratch copy exists and holds the land's index
        #: the index file was replaced since this was last set False (a land that fails
        #: before that has no index entries to put back)
        self.changed = False

    def _take(self, wait: float, adopt: bool = False) -> None:
        if adopt:  # a killed land's lock, taken over without ever being free
            with contextlib.suppress(FileExistsError, FileNotFoundError):
                self._fd = adopt_index_lock(os.path.dirname(self.path), self._record)
            if self._fd >= 0:
                return
        deadline = time.monotonic() + wait
        delay = 0.002
        while True:
            try:
                self._fd = self._record.pin(self.lock)
                return
            except FileExistsError:
                if time.monotonic() > deadline:
                    raise ConcurrentUpdate(
                        f"another git process holds {self.lock} (a commit, add, stash or "
                        "checkout is running)",
                        hint="Retry in a moment; if it persists and no git command is running, "
                        "remove the stale index.lock. Nothing was changed.",
                        details={"lock": self.lock},
                        reason="locked",
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)

    def owns(self) -> bool:
        """True while this process holds the lock."""
        return self._fd >= 0

    def read(self) -> bytes:
        """The index as this land has changed it so far (the file's bytes before any change)."""
        if self._pending is not None:
            return self._pending
        if self._copied:
            return self._scratch.read_bytes()
        data, _mtime = indexfile.read_index(self.path)
        return data

    def put(self, data: bytes) -> None:
        """The index bytes this land ends with, unless a later step changes them again."""
        if self._copied:
            self._scratch.write_bytes(data)
        else:
            self._pending = data

    def scratch(self) -> str:
        """The scratch copy for ``GIT_INDEX_FILE`` (made on first use, from the changes so far);
        git takes its own ``.lock`` beside it, never ``index.lock``."""
        if not self._copied:
            self._scratch.parent.mkdir(parents=True, exist_ok=True)
            self._scratch.unlink(missing_ok=True)
            if self._pending is not None:
                self._scratch.write_bytes(self._pending)
                self._pending = None
            elif os.path.exists(self.path):
                shutil.copyfile(self.path, self._scratch)
            self._copied = True
        return str(self._scratch)

    def begin(self) -> None:
        """A land starts writing: the index as it is now is the one ``restore`` puts back."""
        self._before.unlink(missing_ok=True)
        self.changed = False

    def _keep_before(self) -> None:
        """Keep the index about to be replaced (a hard link: nothing is copied)."""
        if self.changed:
            return
        self._before.unlink(missing_ok=True)
        try:
            os.link(self.path, self._before)
            self._had_index = True
        except FileNotFoundError:
            self._had_index = False
        self.changed = True

    def restore(self) -> None:
        """Put back the index this land replaced since ``begin``, byte for byte (the lock
        was held all along, so nothing else wrote it meanwhile)."""
        if not self.changed:
            return
        if self._had_index:
            os.replace(self._before, self.path)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        self.changed = False

    def forget_before(self) -> None:
        """The land's branch moved: the index it replaced is no longer needed."""
        self._before.unlink(missing_ok=True)
        self.changed = False

    def commit(self) -> None:
        """Put the changed index in place, in one rename of the scratch copy; the lock stays
        held until the ``held_index`` block ends: a land moves its branch after this, and a
        recovery that runs first in a land commits too."""
        if self._pending is not None and not self._copied:
            # patched bytes alone: written to the scratch copy, and kept for the next read
            data, self._pending = self._pending, None
            self._scratch.parent.mkdir(parents=True, exist_ok=True)
            self._scratch.write_bytes(data)
            with contextlib.suppress(FileNotFoundError):
                shutil.copymode(self.path, self._scratch)
            self._keep_before()
            os.replace(self._scratch, self.path)
            indexfile.remember(self.path, data)
            return
        if self._copied:
            with contextlib.suppress(FileNotFoundError):
                shutil.copymode(self.path, self._scratch)
            self._keep_before()
            os.replace(self._scratch, self.path)
            self._copied = False

    def handover(self, write: Callable[[], object]) -> None:
        """Release the lock for a writer that takes it itself (libgit2, when there is no
        git binary), then run ``write``, waiting out a git command that took it meanwhile."""
        self._release()
        self._keep_before()
        retry_locked(write)

    def _release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            # only the lock file this took (proved ours, or unprovable): never a person's
            # git's, taken after a recovery wrongly freed this one
            proof = self._record.proof(self.lock)
            if not os.path.exists(proof) or self._record.owns(self.lock):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.lock)
            self._record.unpin(self.lock)
        if self._copied:
            self._scratch.unlink(missing_ok=True)
            self._copied = False
        self._before.unlink(missing_ok=True)
        self._pending = None


@contextlib.contextmanager
def held_index(
    gitdir: Path, wait: float = INDEX_LOCK_WAIT_SECONDS, *, adopt: bool = False
) -> Iterator[HeldIndex]:
    """Hold ``gitdir``'s ``index.lock`` for the block (waiting ``wait`` seconds for a git
    command that has it); what the block does not ``commit`` is dropped, the lock released.
    With ``adopt`` (recovery), a lock a killed land still holds is taken over from it."""
    with operation(str(gitdir)) as record:
        held = HeldIndex(gitdir, record)
        held._take(wait, adopt)
        try:
            yield held
        finally:
            held._release()


def remove_scratch(gitdir: Path) -> None:
    """Drop scratch indexes a killed land left in ``.git/gitpatch`` (called under the land
    lock, when no land of this checkout runs)."""
    folder = gitdir / "gitpatch"
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            if name.startswith("index.") and name.endswith(
                (".scratch", ".scratch.lock", ".before")
            ):
                (folder / name).unlink(missing_ok=True)


_SETTINGS = {"link": "core.splitIndex", "sdir": "index.sparse"}
_NULL_ID = "0" * 40


def index_path(repo: pygit2.Repository) -> str:
    """The index file of ``repo``'s working tree (a linked worktree has its own)."""
    return os.path.join(repo.path, "index")


def needs_git(repo: pygit2.Repository) -> list[str]:
    """The mandatory extensions of the index that libgit2 cannot read (``link``, ``sdir``)."""
    try:
        return indexfile.read_mandatory_extensions(index_path(repo))
    except (FileNotFoundError, indexfile.Unsupported):
        return []


def check_writable(repo: pygit2.Repository) -> None:
    """Refuse (``repository_error``, reason ``unsupported_index``) an index only the ``git``
    binary can update when there is no ``git`` on PATH; run before anything moves."""
    mandatory = needs_git(repo)
    if not mandatory or gitbin.available():
        return
    settings = sorted({_SETTINGS.get(ext, f"the {ext!r} extension") for ext in mandatory})
    raise RepositoryError(
        f"the index uses {', '.join(settings)}, which only the git binary can update, and "
        "no git command was found",
        hint=f"Install git, or turn {' and '.join(settings)} off and rewrite the index "
        "(for example `git config core.splitIndex false && git update-index --no-split-index`"
        ", or `git sparse-checkout init --no-sparse-index`).",
        details={"reason": "unsupported_index", "settings": settings, "extensions": mandatory},
    )


def sync(
    repo: pygit2.Repository,
    held: HeldIndex,
    index: Callable[[], pygit2.Index],
    old: pygit2.Tree | None,
    new: pygit2.Tree | None,
    landed: Sequence[str],
    kept: Sequence[str],
    written: Mapping[str, os.stat_result],
    converts: Callable[[str], bool],
) -> None:
    """Point the index entries of ``landed`` (on disk as in ``new``) and ``kept`` (on disk with
    someone else's content) at ``new`` in ``held``; only ``landed`` entries get fresh stat data.

    ``index()`` gives libgit2's index, up to date with the file. ``written``: the ``fstat``
    of the files the land wrote, taken before their rename; a file whose inode, size or mtime
    differ afterwards was changed by someone else since, and is not patched in place.
    ``converts(path)``: whether git may convert the path (``Filters.converts``); such paths
    are never patched in place.
    """
    if needs_git(repo):
        _with_git(repo, held, new, landed, kept)
    elif not kept and _patch(repo, held, old, new, landed, written, converts):
        return
    elif gitbin.available():
        _with_git(repo, held, new, landed, kept)
    else:
        held.handover(lambda: _with_libgit2(index(), new, landed, kept))


def _with_libgit2(
    index: pygit2.Index, new: pygit2.Tree | None, landed: Sequence[str], kept: Sequence[str]
) -> None:
    """libgit2's way: change the entries in memory and rewrite the whole index."""
    for path in [*landed, *kept]:
        want = _blob(new, path) if new is not None else None
        if want is None:
            with contextlib.suppress(OSError, KeyError):
                index.remove(path)
            continue
        entry = pygit2.IndexEntry(path, want.id, pygit2.enums.FileMode(want.filemode))
        if path in kept:
            index.add(entry)
            continue
        index.add(path)
        # A clean filter (autocrlf, text=auto) may have hashed the file differently from
        # the blob gitpatch committed; the index must name the committed blob.
        if index[path].id != want.id:
            index.add(entry)
    retry_locked(index.write)


def recorded_blob(
    repo: pygit2.Repository, path: str, st: os.stat_result, converts: Callable[[str], bool]
) -> str | None:
    """The blob id (hex) the index records for ``path`` when the file's stat data ``st`` is
    exactly the entry's and the entry is not racy, as git decides a file is unchanged without
    reading it; None when the content must be read (also whenever git may convert it, as
    ``converts``, the working tree's ``Filters.converts``, tells)."""
    try:
        data, index_mtime = indexfile.read_index(index_path(repo))
        where = indexfile.layout(data)
        if where.extensions and any(not e.signature[:1].isupper() for e in where.extensions):
            return None
        oid = indexfile.stat_matches(data, indexfile.find_entry(data, where, path), st, index_mtime)
    except (OSError, indexfile.Unsupported):
        return None
    if oid is None or converts(path):
        return None
    return oid.hex()


def plain_entries(path: str, paths: Sequence[str]) -> dict[str, tuple[str, int]] | None:
    """(blob hex, mode) of each of ``paths`` when every one is a plain stage-0 entry of the
    index file at ``path`` (looked up in its bytes, no whole-index parse); None when one is
    not (absent, conflicted, flagged) or the index is in a shape this cannot read."""
    try:
        data, _mtime = indexfile.read_index(path)
        where = indexfile.layout(data)
        if any(not e.signature[:1].isupper() for e in where.extensions):
            return None
        out: dict[str, tuple[str, int]] = {}
        for name in paths:
            at = indexfile.find_entry(data, where, name)
            mode = int.from_bytes(data[at + 24 : at + 28], "big")
            out[name] = (data[at + 40 : at + 60].hex(), mode)
    except (OSError, indexfile.Unsupported):
        return None
    return out


# -- patch in place -----------------------------------------------------------------------------


def _patch(
    repo: pygit2.Repository,
    held: HeldIndex,
    old: pygit2.Tree | None,
    new: pygit2.Tree | None,
    paths: Sequence[str],
    written: Mapping[str, os.stat_result],
    converts: Callable[[str], bool],
) -> bool:
    if old is None or new is None or not paths or any(converts(p) for p in paths):
        return False
    root = repo.workdir
    updates: dict[str, indexfile.EntryUpdate] = {}
    for path in paths:
        now = _blob(new, path)
        before = written.get(path)
        if now is None or _blob(old, path) is None or before is None:
            return False
        st = os.lstat(os.path.join(root, path))
        same = (st.st_ino, st.st_size, st.st_mtime_ns) == (
            before.st_ino,
            before.st_size,
            before.st_mtime_ns,
        )
        if not same or not stat.S_ISREG(st.st_mode):
            return False
        updates[path] = indexfile.EntryUpdate(now.id.raw, int(now.filemode), st)
    trees = _parent_trees(old, new, paths)
    try:
        held.put(bytes(indexfile.patch(held.read(), updates, trees)))
    except (indexfile.Unsupported, FileNotFoundError):
        return False
    return True


def _blob(tree: pygit2.Tree, path: str) -> pygit2.Object | None:
    try:
        obj = tree[path]
    except KeyError:
        return None
    return obj if obj.type == pygit2.enums.ObjectType.BLOB else None


def _parent_trees(
    old: pygit2.Tree, new: pygit2.Tree, paths: Sequence[str]
) -> dict[str, tuple[bytes | None, bytes | None]]:
    """Each parent directory of ``paths`` -> its tree id (raw) in ``old`` and ``new``."""
    out: dict[str, tuple[bytes | None, bytes | None]] = {}
    for path in paths:
        parts = path.split("/")[:-1]
        for depth in range(len(parts) + 1):
            folder = "/".join(parts[:depth])
            if folder not in out:
                out[folder] = (_tree_id(old, folder), _tree_id(new, folder))
    return out


def _tree_id(tree: pygit2.Tree, folder: str) -> bytes | None:
    if not folder:
        return tree.id.raw
    try:
        obj = tree[folder]
    except KeyError:
        return None
    return obj.id.raw if obj.type == pygit2.enums.ObjectType.TREE else None


# -- through git --------------------------------------------------------------------------------


def _with_git(
    repo: pygit2.Repository,
    held: HeldIndex,
    new: pygit2.Tree | None,
    landed: Sequence[str],
    kept: Sequence[str],
) -> None:
    """Record ``landed`` from disk as ``git add`` does (``update-index --add --remove``), and
    set ``kept`` entries (and any landed one git hashed differently, through a filter) to
    the ids of ``new`` with ``--index-info``, on ``held``'s scratch index. Not ``--refresh``:
    it writes a split index back unsplit."""
    scratch = held.scratch()
    want = {path: _index_line(new, path) for path in dict.fromkeys([*landed, *kept])}
    gone = [p for p in landed if new is None or _blob(new, p) is None]
    if gone:  # first: a directory may stand where a removed file was (a/ replacing a)
        _git(repo, scratch, ["update-index", "--force-remove", "-z", "--stdin"], _z(gone))
    landed = [p for p in landed if p not in gone]
    if landed:
        args = ["update-index", "--add", "--replace", "-z", "--stdin"]
        _git(repo, scratch, args, _z(landed))
        staged = _git(repo, scratch, ["ls-files", "--stage", "-z", "--", *landed], "")
        have = {}
        for row in staged.split("\0"):
            if "\t" in row:
                meta, path = row.split("\t", 1)
                have[path] = f"{meta.rsplit(' ', 1)[0]}\t{path}"
        landed = [p for p in landed if have.get(p) != want[p].rstrip("\0") and p in want]
    fix = [want[p] for p in dict.fromkeys([*landed, *kept])]
    if fix:
        # expanded first: --index-info does not expand a sparse directory (``expanding``)
        info = [*indexfile.expanding(scratch), "update-index", "-z", "--index-info"]
        _git(repo, scratch, info, "".join(fix))


def _z(paths: Sequence[str]) -> str:
    return "".join(f"{p}\0" for p in paths)


def _index_line(new: pygit2.Tree | None, path: str) -> str:
    """An ``--index-info -z`` record setting ``path`` to its blob in ``new`` (or removing it)."""
    obj = _blob(new, path) if new is not None else None
    if obj is None:
        return f"0 {_NULL_ID}\t{path}\0"
    return f"{int(obj.filemode):o} {obj.id}\t{path}\0"


def _git(repo: pygit2.Repository, index: str, args: list[str], stdin: str) -> str:
    """``git args`` on ``repo``'s checkout, with the index file ``index``, through the one
    git runner; a failure is an ``OSError`` (the land reports it, its journal kept)."""
    try:
        out = gitbin.run(
            repo.path, repo.workdir, args, stdin.encode("utf-8", "surrogateescape"), index=index
        )
    except gitbin.GitFailed as exc:
        raise OSError(f"git {' '.join(args)} failed: {exc.stderr}") from exc
    return out.decode("utf-8", "surrogateescape")
