"""The only code that writes the working tree: crash-safe landing of a commit onto disk.

A land moves a branch and then rewrites the few paths that changed. A process killed between
the two would leave the branch ahead of the files, so ``land`` writes a journal first and
``recover`` (run at the start of every Workspace call) finishes the job: if the branch reached
the new commit, the paths still holding their old content are rolled forward; otherwise the
journal is dropped. Files are replaced by temp file + fsync + rename, so a reader sees the old
or the new content, never a truncated file.

Lands from several processes are serialised by an ``flock`` on ``.git/gitpatch/land.lock``: the
kernel drops it when a process dies, so it can never go stale, and it is held only while one
land runs (never across a tool call). It also keeps index updates from different processes
from overwriting each other. The locks themselves are in ``gitpatch.repo.locks``.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2

from gitpatch.errors import ConcurrentUpdate, FilesystemError, RepositoryError
from gitpatch.repo import sparse
from gitpatch.repo._modes import disk_mode, file_mode
from gitpatch.repo._trees import entry as _entry
from gitpatch.repo._trees import is_dir
from gitpatch.repo.filters import Filters
from gitpatch.repo.locks import land_lock, remove_stale_locks, retry_locked
from gitpatch.store import Store

__all__ = ["Journal", "WorkingTree"]

_TMP_SUFFIX = ".gitpatch-tmp"
_DEFAULT_STALE_SECONDS = 30.0
# A stat-cache entry is trusted only once the file's mtime is this far behind the moment the
# entry was recorded: a write within the same clock tick could otherwise go unseen.
_RACY_NS = 2_000_000_000


@dataclass(frozen=True)
class Journal:
    """An interrupted land: ``ref`` was to move ``old`` -> ``new`` and rewrite ``paths``.

    ``notes`` (commit hex, note before as JSON or ``"null"``, note after as JSON) are the notes
    that move with the ref in the same ref transaction. libgit2 commits a transaction one lock
    file at a time, so a process killed in between can leave one moved without the other;
    recovery completes the notes when the ref moved and puts them back when it did not.
    """

    ref: str
    old: str | None
    new: str
    paths: tuple[str, ...]
    notes: tuple[tuple[str, str, str], ...] = ()

    def to_json(self) -> str:
        """Serialise for ``.git/gitpatch/journal.json``."""
        return json.dumps(
            {
                "ref": self.ref,
                "old": self.old,
                "new": self.new,
                "paths": list(self.paths),
                "notes": [list(n) for n in self.notes],
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Journal:
        """Parse a journal file; raises ValueError when it is not one."""
        data: Any = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("new"), str):
            raise ValueError("not a gitpatch journal")
        notes = data.get("notes") or []
        return cls(
            str(data["ref"]),
            data.get("old"),
            data["new"],
            tuple(data.get("paths", ())),
            tuple((str(c), str(b), str(a)) for c, b, a in notes),
        )


def _replace_with(note: dict[str, Any]) -> Callable[[dict[str, Any] | None], dict[str, Any]]:
    """A note change that writes ``note`` whatever was there (recovery runs before any other
    change to that note could have been made: every call recovers first)."""
    return lambda _old: note


class WorkingTree:
    """The working directory and index of a non-bare repository, written only through ``land``."""

    def __init__(self, repo: pygit2.Repository, *, stale_lock_seconds: float | None = None):
        if repo.is_bare or repo.workdir is None:
            raise RepositoryError(
                "the repository is bare: it has no working tree",
                hint="Open the Workspace on a bare repository without a working tree.",
            )
        self.repo = repo
        self.root = Path(repo.workdir)
        self.gitdir = Path(repo.path)
        self.state_dir = self.gitdir / "gitpatch"
        self.journal_path = self.state_dir / "journal.json"
        if stale_lock_seconds is None:
            env = os.environ.get("GITPATCH_STALE_LOCK_SECONDS", "")
            try:
                stale_lock_seconds = float(env) if env else _DEFAULT_STALE_SECONDS
            except ValueError:
                stale_lock_seconds = _DEFAULT_STALE_SECONDS
        self.stale_lock_seconds = stale_lock_seconds
        self._index: pygit2.Index | None = None
        self.filters = Filters(repo)  # git's conversions (autocrlf, eol, filter drivers)
        config = repo.config
        self._exec_bit = "core.filemode" not in config or config.get_bool("core.filemode")
        # path -> (mtime_ns, ctime_ns, size, ino, recorded_ns, blob hex): files whose content
        # this process wrote or hashed, so a large unchanged file is not hashed again.
        self._stat_cache: dict[str, tuple[int, int, int, int, int, str]] = {}

    @classmethod
    def of(cls, store: Store) -> WorkingTree | None:
        """The working tree of ``store``'s repository, None when it is bare.

        The working tree is the one other holder of the pygit2 repository: it owns the index.
        """
        return None if store.is_bare else cls(store.repo)

    # -- landing -----------------------------------------------------------------------------

    def land(
        self,
        old: str | None,
        new: str,
        paths: Sequence[str],
        move_ref: Callable[[], object],
        *,
        ref: str = "",
        verify: bool = False,
        notes: Mapping[str, tuple[Mapping[str, Any] | None, Mapping[str, Any]]] | None = None,
        preflight: Callable[[], object] = lambda: None,
    ) -> None:
        """Move a branch with ``move_ref()`` (the CAS) and bring ``paths`` on disk to ``new``.

        The journal is written before the ref moves and removed after the files and index
        entries are written; if ``move_ref`` raises, nothing on disk changed and the error
        propagates. With ``verify``, a path whose disk content is no longer the one at ``old``
        (someone wrote it since it was read) raises ``ConcurrentUpdate`` before anything moves.
        ``notes`` (commit hex -> (note before, note after)) are the notes ``move_ref`` writes
        with the ref, mended by recovery if a kill separated them from it.
        """
        kept = tuple(
            (c, json.dumps(before, sort_keys=True), json.dumps(after, sort_keys=True))
            for c, (before, after) in (notes or {}).items()
        )
        journal = Journal(ref, old, new, tuple(dict.fromkeys(paths)), kept)
        with self._land_lock():
            self._recover_locked()
            preflight()  # under the lock: no other land is half done
            changed = self.modified(old, journal.paths) if verify else []
            if changed:
                raise ConcurrentUpdate(
                    f"{', '.join(changed)} changed on disk while the proposal was prepared",
                    hint="Read the file again and retry.",
                    details={"paths": changed},
                    reason="disk",
                )
            self._write_journal(journal)
            try:
                move_ref()
            except BaseException:
                self._remove_journal()
                raise
            self._apply_or_explain(journal, only_if_old=False)
            self._remove_journal()

    def recover(self, refs: Sequence[str] | None = None) -> bool:
        """Finish or discard an interrupted land and remove stale lock files.

        ``refs``: only these refs' locks (and those at the top of ``.git``) are looked at, which
        keeps a per-call check O(1); None sweeps everything under ``.git/refs``. Returns True
        when a journal was found (rolled forward or discarded).
        """
        self.remove_stale_locks(refs)
        if not self.journal_path.exists():
            return False
        with self._land_lock():
            return self._recover_locked()

    def _recover_locked(self) -> bool:
        if not self.journal_path.exists():
            return False
        journal = self._read_journal()
        if journal is not None:
            moved = self._ref_target(journal.ref) == journal.new
            self._mend_notes(journal, moved)
            if moved:
                self._apply_or_explain(journal, only_if_old=True)
        self._remove_journal()
        return True

    def _mend_notes(self, journal: Journal, moved: bool) -> None:
        """Give the journal's notes the state that matches the ref (see ``Journal``)."""
        if not journal.notes:
            return
        store = Store(self.repo)
        tip = self._ref_target(journal.ref)
        # A person may have committed on top since the land: the ref then moved past it.
        landed = moved or (
            tip is not None and store.is_ancestor(pygit2.Oid(hex=journal.new), pygit2.Oid(hex=tip))
        )
        for commit, before_text, after_text in journal.notes:
            oid = pygit2.Oid(hex=commit)
            before, after = json.loads(before_text), json.loads(after_text)
            now = store.read_note(oid)
            if landed and now != after:
                store.update_note(oid, _replace_with(after))
            elif not landed and now == after and before != after:
                if before is None:
                    store.remove_note(oid)
                else:
                    store.update_note(oid, _replace_with(before))

    def _apply_or_explain(self, journal: Journal, *, only_if_old: bool) -> None:
        """``_apply``; an OS error (permissions, disk full) keeps the journal for the next call."""
        try:
            self._apply(journal, only_if_old=only_if_old)
        except OSError as exc:
            raise RepositoryError(
                f"the change is committed ({journal.new[:12]} on {journal.ref or 'HEAD'}) but "
                f"writing it to the working tree failed: {exc}",
                hint="Fix the cause (permissions, free space); the next gitpatch call finishes "
                "writing those files. Nothing else needs to be done.",
                details={"paths": list(journal.paths), "commit": journal.new},
            ) from exc

    def read(self, path: str) -> bytes | None:
        """The bytes of the file at ``path`` on disk, None when there is none."""
        try:
            return (self.root / path).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as exc:
            raise FilesystemError.of(path, exc, "read") from exc

    def _apply(self, journal: Journal, *, only_if_old: bool) -> None:
        """Write each journal path's content at ``new`` to disk, then its index entry.

        With ``only_if_old`` (recovery) a path is rewritten only while its disk content is still
        the one at ``old``: a person may have edited it since, and their edit wins (its index
        entry still follows the branch, so ``git status`` shows their edit as unstaged).
        """
        new_tree = self._tree(journal.new)
        old_tree = self._tree(journal.old) if only_if_old else None
        skipped = sparse.skipped(self.gitdir, self.root, journal.paths)
        self._remove_temp_files(journal.paths)
        to_delete: list[str] = []
        to_write: list[tuple[str, pygit2.Oid, int]] = []
        landed: list[str] = []
        for path in (p for p in journal.paths if p not in skipped):  # index only (below)
            want = _entry(new_tree, path)
            if only_if_old:
                disk = self.disk_blob(path)
                if disk == (str(want[0]) if want else None):
                    landed.append(path)
                    continue
                have = _entry(old_tree, path)
                if disk != (str(have[0]) if have else None):
                    continue
            landed.append(path)
            if want is None:
                to_delete.append(path)
            else:
                to_write.append((path, want[0], want[1]))
        # Deletes first: a move or an add may need the place a deleted file or directory held.
        for path in to_delete:
            self._delete(path)
        for path, oid, mode in to_write:
            self._write(path, oid, mode)
        kept = [p for p in journal.paths if p not in landed and p not in skipped]
        self._update_index(new_tree, landed, kept)
        sparse.update_entries(self.gitdir, self.root, new_tree, sorted(skipped))

    # -- disk state --------------------------------------------------------------------------

    def modified(self, commit: str | None, paths: Iterable[str]) -> list[str]:
        """The paths whose disk content differs from their content at ``commit``.

        A path missing on disk and at ``commit`` is unchanged; anything that is not a regular
        file (a directory, a symlink) counts as different.
        """
        tree = self._tree(commit)
        out: list[str] = []
        wanted = list(paths)  # skip-worktree paths: git compares them with the index only
        skipped = sparse.skipped(self.gitdir, self.root, wanted)
        for path in (p for p in wanted if p not in skipped):
            want, have = _entry(tree, path), self.disk_blob(path)
            if have == "<directory>" and is_dir(tree, path):
                continue  # a directory then and now: its files are paths of their own
            if have != (str(want[0]) if want else None):
                out.append(path)
            elif want is not None and self.disk_mode(path) not in (None, want[1]):
                out.append(path)  # `chmod +x` is a change, as git sees it
        return out

    def disk_mode(self, path: str) -> int | None:
        """The mode ``git add`` would record for the file at ``path`` (see ``_modes``)."""
        try:
            return disk_mode((self.root / path).lstat(), self._exec_bit)
        except OSError:
            return None

    def disk_blob(self, path: str) -> str | None:
        """The blob id (hex) of the regular file at ``path``, ``None`` when there is none.

        A directory or a symlink answers ``"<type>"``-style sentinels that match no blob id.
        """
        full = self.root / path
        try:
            st = full.lstat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISDIR(st.st_mode):
            # git does not track empty directories: one left by a delete counts as no file
            with os.scandir(full) as entries:
                return "<directory>" if any(entries) else None
        if not stat.S_ISREG(st.st_mode):
            return "<special>"
        cached = self._stat_cache.get(path)
        key = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        if cached and cached[:4] == key and cached[4] - st.st_mtime_ns > _RACY_NS:
            return cached[5]
        try:
            blob = self.filters.hash_file(path, full)
        except OSError as exc:
            raise FilesystemError.of(path, exc, "read") from exc
        self._stat_cache[path] = (*key, time.time_ns(), blob)
        return blob

    # -- index -------------------------------------------------------------------------------

    @property
    def index(self) -> pygit2.Index:
        """The repository index, loaded once and re-read only when it changed on disk."""
        if self._index is None:
            self._index = self.repo.index  # libgit2's copy may be old (attribute lookups load it)
        self._index.read(False)
        return self._index

    def _update_index(
        self, tree: pygit2.Tree | None, landed: Sequence[str], kept: Sequence[str] = ()
    ) -> None:
        """Point the index entries of ``landed`` (on disk as in ``tree``) and ``kept`` (on disk
        with someone else's content) at ``tree``; only ``landed`` entries get fresh stat data."""
        if not landed and not kept:
            return
        index = self.index
        for path in [*landed, *kept]:
            want = _entry(tree, path)
            if want is None:
                with contextlib.suppress(OSError, KeyError):
                    index.remove(path)
                continue
            entry = pygit2.IndexEntry(path, want[0], pygit2.enums.FileMode(want[1]))
            if path in kept:
                index.add(entry)
                continue
            index.add(path)
            # A clean filter (autocrlf, text=auto) may have hashed the file differently from
            # the blob gitpatch committed; the index must name the committed blob.
            if index[path].id != want[0]:
                index.add(entry)
        retry_locked(index.write)

    # -- files -------------------------------------------------------------------------------

    def _write(self, path: str, oid: pygit2.Oid, mode: int) -> None:
        full = self.root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        if full.is_dir() and not full.is_symlink():
            full.rmdir()  # only an empty one; a non-empty directory raises and is reported
        data = self.filters.checkout_bytes(path, oid)
        tmp = full.parent / f".{full.name}.{os.getpid()}.{time.monotonic_ns()}{_TMP_SUFFIX}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, file_mode(mode))
        try:
            with os.fdopen(fd, "wb", closefd=False) as fh:
                fh.write(data)
                fh.flush()
            os.fchmod(fd, file_mode(mode))
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        os.replace(tmp, full)
        self._stat_cache.pop(path, None)

    def _delete(self, path: str) -> None:
        full = self.root / path
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            full.unlink()
        self._stat_cache.pop(path, None)
        parent = full.parent
        while parent != self.root and self.root in parent.parents:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent

    def _remove_temp_files(self, paths: Iterable[str]) -> None:
        """Drop temp files a killed land left next to ``paths``."""
        for parent in {(self.root / p).parent for p in paths}:
            try:
                names = os.listdir(parent)
            except OSError:
                continue
            for name in names:
                if name.endswith(_TMP_SUFFIX):
                    with contextlib.suppress(OSError):
                        (parent / name).unlink()

    # -- locks and journal -------------------------------------------------------------------

    def remove_stale_locks(self, refs: Sequence[str] | None = None) -> list[str]:
        """Remove ``*.lock`` files older than the limit: at the top of ``.git`` and, for
        ``refs`` None, anywhere under ``.git/refs``, else only those of ``refs``."""
        return remove_stale_locks(self.gitdir, refs, self.stale_lock_seconds)

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Hold off lands while the caller reads the branch head and disk together.

        A land moves the ref before it writes the files; a reader between the two would take
        the old file content for a local edit. Readers share the lock; lands take it alone.
        """
        with self._land_lock(shared=True):
            yield

    def _land_lock(self, shared: bool = False) -> contextlib.AbstractContextManager[None]:
        return land_lock(self.state_dir, shared=shared)

    def _write_journal(self, journal: Journal) -> None:
        tmp = self.state_dir / f"journal.{os.getpid()}{_TMP_SUFFIX}"
        # No fsync: the journal guards against a killed process, and libgit2 does not fsync
        # the ref it guards either; after a power loss both are equally old or new.
        tmp.write_text(journal.to_json(), encoding="utf-8")
        os.replace(tmp, self.journal_path)

    def _read_journal(self) -> Journal | None:
        try:
            text = self.journal_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            return Journal.from_json(text)
        except (ValueError, KeyError, TypeError):
            # A journal cut short by a crash: written before the ref moved, so nothing moved.
            self._remove_journal()
            return None

    def _remove_journal(self) -> None:
        self.journal_path.unlink(missing_ok=True)

    # -- git lookups -------------------------------------------------------------------------

    def _ref_target(self, ref: str) -> str | None:
        try:
            if ref:
                return str(self.repo.references[ref].resolve().target)
            return str(self.repo.head.target)
        except (KeyError, pygit2.GitError, pygit2.InvalidSpecError):
            return None

    def _tree(self, commit: str | None) -> pygit2.Tree | None:
        if not commit:
            return None
        obj = self.repo[commit]
        return obj.peel(pygit2.Tree)
