"""The only code that writes the working tree: crash-safe landing of a commit onto disk.

A land rewrites the few paths that changed, then their index entries, and moves the branch
last, as git itself does: ``index.lock`` is held across all three, and the branch's ref lock
from before the first rename (the files and the index are written while the ref transaction
holds its locks, its compare-and-swap already checked). A process killed in between would
leave the files ahead of the branch, so ``land`` writes a journal first and ``recover`` (run
at the start of every Workspace call) settles it: if the branch reached the new commit, the
paths still holding their old content are rolled forward; otherwise what was written ahead is
put back, as it is at once when the ref transaction fails to commit. Files are replaced by
temp file + fsync + rename, so a reader sees the old or the new content, never a truncated file.

Lands from several processes are serialised by an ``flock`` on ``.git/gitpatch/land.lock``: the
kernel drops it when a process dies, so it can never go stale, and it is held only while one
land runs (never across a tool call). It also keeps index updates from different processes
from overwriting each other. The locks themselves are in ``gitpatch.safety.owners``.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pygit2

from gitpatch.checkout import gitbin, index, indexfile, saves
from gitpatch.checkout.files import TMP_SUFFIX, Staging, check_room_for_index, disk_mode
from gitpatch.checkout.filters import Filters, attribute_files, changes_attributes
from gitpatch.checkout.index import HeldIndex, held_index, remove_scratch
from gitpatch.core.spliced import Content
from gitpatch.errors import ConcurrentUpdate, FilesystemError, RepositoryError
from gitpatch.safety.atomic import fsync_dir
from gitpatch.safety.owners import Owner, land_lock
from gitpatch.safety.recovery import Journal, crashpoint
from gitpatch.safety.refusals import refused
from gitpatch.store import Store, is_dir
from gitpatch.store import blob_entry as _entry

__all__ = ["Journal", "WorkingTree"]

# A stat-cache entry is trusted only once the file's mtime is this far behind the moment the
# entry was recorded: a write within the same clock tick could otherwise go unseen.
_RACY_NS = 2_000_000_000
#: Reads of a file that keeps growing while it is hashed before the error is reported.
_HASH_ATTEMPTS = 5


def _hex(found: tuple[pygit2.Oid, int] | None) -> str | None:
    return str(found[0]) if found else None


def _replace_with(note: dict[str, Any]) -> Callable[[dict[str, Any] | None], dict[str, Any]]:
    """A note change that writes ``note`` whatever was there (recovery runs before any other
    change to that note could have been made: every call recovers first)."""
    return lambda _old: note


def _what_failed(failure: BaseException) -> str:
    """The first failure of a land that is being put back, in a clause."""
    if isinstance(failure, (OSError, gitbin.GitFailed)):
        return f"writing the working tree or the index failed ({failure})"
    return f"the land failed ({type(failure).__name__}: {failure})"


class WorkingTree:
    """The working directory and index of a non-bare repository, written only through ``land``."""

    def __init__(self, store: Store):
        """The working tree of ``store``'s repository; ``RepositoryError`` when it is bare.

        Refs, notes and git config are read through ``store`` (no second Store of the same
        repository); the pygit2 repository itself is kept only for what the index and git's
        attributes need (``index``, ``Filters``), the one other use the layout allows.
        """
        repo = store.repo
        if repo.is_bare or repo.workdir is None:
            raise RepositoryError(
                "the repository is bare: it has no working tree",
                hint="Open the Workspace on a bare repository without a working tree.",
            )
        self.store = store
        self.repo = repo
        self.root = Path(repo.workdir)
        self.gitdir = Path(repo.path)
        self.state_dir = self.gitdir / "gitpatch"
        self.journal_path = self.state_dir / "journal.json"
        self.staging = Staging(self.gitdir)  # where a land's temp files wait (``files``)
        #: fsync the journal and its directory (git config core.fsync asks for refs or objects)
        self.durable = store.durable()
        self._index: pygit2.Index | None = None
        self.filters = Filters(store)  # git's conversions (autocrlf, eol, filter drivers)
        # the conversions of a land that changes attribute files: its commit's (``_converting``)
        self._landing: Filters | None = None
        self._exec_bit = store.config_get("core.filemode") is None or store.config_bool(
            "core.filemode"
        )
        # path -> (mtime_ns, ctime_ns, size, ino, recorded_ns, blob hex): files whose content
        # this process wrote or hashed, so a large unchanged file is not hashed again.
        self._stat_cache: dict[str, tuple[int, int, int, int, int, str]] = {}
        # path -> fstat of the file a land wrote, before its rename (see index.sync); blob id ->
        # content of large blobs just written (Store.fresh_blobs), so they are not read back
        self._written: dict[str, os.stat_result] = {}
        self._blobs: dict[pygit2.Oid, Content] = store.fresh_blobs
        # path -> (``saves.mark`` of its file, blob) when the running land checked the disk
        self._seen: dict[str, tuple[saves.Mark, str | None]] = {}
        self.kept: list[saves.Kept] = []  # the files it replaced, until it is over (``saves``)
        #: (path, file) of each person's save set aside in ``.git/gitpatch/saves/`` since a
        #: caller last took them (``saves``; the call's result tells them)
        self.set_aside: list[tuple[str, Path]] = []

    @classmethod
    def of(cls, store: Store) -> WorkingTree | None:
        """The working tree of ``store``'s repository, None when it is bare."""
        return None if store.is_bare else cls(store)

    # -- landing -----------------------------------------------------------------------------

    def land(
        self,
        old: str | None,
        new: str,
        paths: Sequence[str],
        move_ref: Callable[[Callable[[], None]], object],
        *,
        ref: str = "",
        verify: bool = False,
        notes: Mapping[str, tuple[Mapping[str, Any] | None, Mapping[str, Any]]] | None = None,
        preflight: Callable[[], object] = lambda: None,
        carry: tuple[str, str, str] | None = None,
        unmoved: Callable[[], bool] = lambda: True,
    ) -> None:
        """Bring ``paths`` on disk and in the index to ``new`` and move a branch, in git's own
        order: files, the index (renamed into place while ``index.lock`` is held), the branch
        last (see ``gitpatch.checkout.index``).

        ``move_ref(ahead)`` is the compare-and-swap. It calls ``ahead()``, which renames the
        files and the index into place, once it holds the locks of the refs it moves and found
        them unmoved, before it commits (``Store.update_refs``'s ``while_locked``): no other
        writer, a person's ``git commit`` included, can move the branch between the
        write-ahead and the move. One that never calls ``ahead`` gets the files after it
        returned. The journal is written first and removed once the branch moved. A lost
        compare-and-swap writes nothing; if writing fails, what was written ahead is put back
        (``_put_back``) and the error propagates: nothing changed. With ``verify``, a path
        whose disk is no longer ``old``'s raises ``ConcurrentUpdate`` first.
        ``notes`` (commit hex -> (note before, note after)) are the notes ``move_ref`` writes
        with the ref, mended by recovery if a kill separated them from it. ``carry`` (trees:
        disk before, disk after, index after) lands onto a person's uncommitted work: the
        paths go from the first to the second on disk and their index entries to the third.
        ``unmoved()``, asked under the locks first, says ``move_ref``'s refs have not moved.
        """
        kept = tuple(
            (c, json.dumps(before, sort_keys=True), json.dumps(after, sort_keys=True))
            for c, (before, after) in (notes or {}).items()
        )
        journal = Journal(ref, old, new, tuple(dict.fromkeys(paths)), kept, Owner.me().tag(), carry)
        with self._land_lock(), held_index(self.gitdir) as held:
            # index.lock from here until the branch moved: a person's git command runs
            # wholly before or after this land, never between the index and the branch
            self._recover_locked(held)
            if ref.startswith("refs/heads/") and self.store.head_branch() != ref:
                raise ConcurrentUpdate(
                    f"{ref} is no longer checked out here (a git checkout ran meanwhile)",
                    hint="Retry the call.",
                    details={"ref": ref},
                    reason="changed",
                )
            if not unmoved():  # refused before anything is staged
                raise ConcurrentUpdate(
                    f"{ref or 'HEAD'} moved while the change was prepared",
                    hint="Retry the call.",
                    details={"ref": ref},
                    reason="changed",
                )
            preflight()  # under the locks: no other land is half done
            self.check_index_writable()
            # identities first: a save after them shows in them, even one the check below
            # reads already (it then refuses, or the save was the content it expects)
            seen = {p: saves.mark(self.root / p) for p in journal.paths}
            base = self._tree(carry[0] if carry else old)
            changed = self.modified(carry[0] if carry else old, journal.paths) if verify else []
            if changed:
                raise ConcurrentUpdate(
                    f"{', '.join(changed)} changed on disk while the proposal was prepared",
                    hint="Read the file again and retry.",
                    details={"paths": changed},
                    reason="disk",
                )
            self._seen = {
                p: (seen[p], _hex(_entry(base, p)) if verify else self.disk_blob(p))
                for p in journal.paths
            }
            try:
                self._write_journal(journal)
            except OSError as exc:
                raise refused("the land journal", exc) from exc
            crashpoint("journal.written")
            try:
                with self._converting(journal):
                    self._move_with(journal, held, move_ref)
                    saves.settle(self)  # a save written to a replaced file since its check
                crashpoint("saves.settled")
            finally:
                self._seen = {}
            held.forget_before()
        self._remove_journal()
        crashpoint("journal.dropped")

    def _move_with(
        self, journal: Journal, held: HeldIndex, move_ref: Callable[[Callable[[], None]], object]
    ) -> None:
        """Stage the files, then ``move_ref`` with the write-ahead (renames, then the index
        committed) run under its ref locks; what was written ahead is put back when the
        branch did not move. An error after the branch moved keeps the land: putting the disk
        back under the moved branch would stage its revert (a kill's stand-in: recovery's)."""
        try:
            staged = self._stage(journal)
        except BaseException:
            self._remove_journal()
            raise
        crashpoint("files.staged")
        failed: list[BaseException] = []
        ran: list[bool] = []

        def ahead() -> None:
            if ran:  # a transaction retried after one that wrote ahead failed to commit
                raise ConcurrentUpdate(
                    f"{journal.ref or 'HEAD'} did not move after the files were written",
                    hint="Retry the call.",
                    reason="changed",
                )
            ran.append(True)
            held.begin()
            try:
                self._apply(journal, held, only_if_old=False, staged=staged)
            except BaseException as exc:
                self._drop_staged(staged)
                failed.append(exc)  # the cause, before the ref layer's wrapping
                raise

        try:
            move_ref(ahead)
        except BaseException as exc:
            if self._landed(journal, self._ref_target(journal.ref)):
                if not ran:
                    self._apply_or_explain(journal, held, only_if_old=False, staged=staged)
                if not isinstance(exc, Exception):
                    raise
                return
            if ran:
                self._put_back(journal, held, failed[0] if failed else exc)
            self._drop_staged(staged)  # refused before (or under) the locks: nothing written
            self._remove_journal()
            raise
        if not ran:  # moved without the callback: written after, as recovery would
            self._apply_or_explain(journal, held, only_if_old=False, staged=staged)

    def _put_back(self, journal: Journal, held: HeldIndex, failure: BaseException) -> None:
        """Undo what a land wrote ahead of a branch that did not move, then raise.

        Each path still holding what the land wrote gets its old content back by the same
        checked renames (a save since then gets the reverse change merged in), and the index
        goes back byte for byte (``HeldIndex``). ``failure`` propagates; when putting back
        fails too, the journal stays for the next call (``recover``)."""
        try:
            self._undo(journal, held, index=False)
            held.restore()  # the index as it was, byte for byte: the lock was held all along
            saves.settle(self)
        except (OSError, gitbin.GitFailed) as exc:
            raise RepositoryError(
                f"the change is not committed ({journal.ref or 'HEAD'} did not move), but "
                f"{_what_failed(failure)}, and putting back the files written ahead failed: "
                f"{exc}",
                hint="Fix the cause (permissions, free space, the index); the next gitpatch "
                "call puts back those files and the index.",
                details={"paths": list(journal.paths), "commit": journal.new, "landed": False},
            ) from exc
        crashpoint("land.put_back")
        self._remove_journal()
        if isinstance(failure, gitbin.GitFailed) or isinstance(failure.__cause__, gitbin.GitFailed):
            raise RepositoryError(
                f"git failed writing the index: {failure}; nothing was changed (the files "
                "written ahead are put back)",
                hint="Fix the cause (the index, its lock, free space), then retry the call.",
                details={"paths": list(journal.paths), "landed": False},
            ) from failure
        if isinstance(failure, OSError):
            raise refused("the new files to the working tree", failure) from failure
        raise failure

    def _undo(self, journal: Journal, held: HeldIndex, *, index: bool = True) -> None:
        """Disk (and, with ``index``, the index) of ``journal``'s paths back from ``new`` to
        ``old``: the land run backwards (``Journal.backwards``)."""
        self._seen = {}
        back = journal.backwards()
        with self._converting(back):
            self._apply(back, held, only_if_old=True, staged={}, index=index, mend=True)

    def recover(self) -> bool:
        """Finish or discard an interrupted land (its refs were settled first, by the store).

        Returns True when a journal was found (rolled forward or discarded). A land lock file
        or a journal temp file a killed process left is removed on the way (the kernel had
        released its flock; journals are written only under it).
        """
        try:
            names = os.listdir(self.state_dir)
        except FileNotFoundError:
            return False
        if not any(
            n in ("journal.json", "land.lock") or n.endswith((TMP_SUFFIX, ".scratch", ".before"))
            for n in names
        ) and not ("tmp" in names and self.staging.left()):
            return False
        with self._land_lock():
            for name in os.listdir(self.state_dir):
                if name.startswith(".journal.json.") and name.endswith(TMP_SUFFIX):
                    (self.state_dir / name).unlink(missing_ok=True)
            if not self.journal_path.exists():
                saves.recover(self, ())
                self.staging.clear(self.root, ())
                remove_scratch(self.gitdir)
                return False
            with held_index(self.gitdir, adopt=True) as held:
                return self._recover_locked(held)

    def _recover_locked(self, held: HeldIndex) -> bool:
        self._seen = {}  # recovery reads every file's content
        if not self.journal_path.exists():
            return False
        journal = self._read_journal()
        remove_scratch(self.gitdir)
        if journal is not None:
            saves.recover(self, journal.paths)  # a save in the files it replaced goes back
            self.staging.clear(self.root, journal.paths)  # staged by a land killed before
            tip = self._ref_target(journal.ref)
            self._mend_notes(journal, tip == journal.new)
            if self._landed(journal, tip):
                with self._converting(journal):
                    self._apply_or_explain(journal, held, only_if_old=True)
            else:  # killed before its branch moved: what it wrote ahead goes back
                self._undo_or_explain(journal, held)
            saves.settle(self)
        self._remove_journal()
        return True

    def _landed(self, journal: Journal, tip: str | None) -> bool:
        """True when ``journal``'s branch reached its new commit (``tip``), or went past it: a
        person may have committed on top since the land."""
        if tip is None or tip == journal.old:
            return False
        return tip == journal.new or self.store.is_ancestor(
            pygit2.Oid(hex=journal.new), pygit2.Oid(hex=tip)
        )

    def _undo_or_explain(self, journal: Journal, held: HeldIndex) -> None:
        """``_undo`` for recovery; an OS or git error keeps the journal for the next call and
        says the change is NOT committed."""
        try:
            self._undo(journal, held)
        except (OSError, gitbin.GitFailed) as exc:
            raise RepositoryError(
                f"a land killed before {journal.ref or 'HEAD'} moved left files written ahead, "
                f"and putting them back failed: {exc}",
                hint="Fix the cause (permissions, free space, the index); the next gitpatch "
                "call puts back those files and the index. The change is not committed.",
                details={"paths": list(journal.paths), "commit": journal.new, "landed": False},
            ) from exc

    def _mend_notes(self, journal: Journal, moved: bool) -> None:
        """Give the journal's notes the state that matches the ref (see ``Journal``)."""
        if not journal.notes:
            return
        store = self.store
        landed = moved or self._landed(journal, self._ref_target(journal.ref))
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

    def _stage(self, journal: Journal) -> dict[str, Path]:
        """Write the new content of the journal's paths to temp files (fsynced, where git does
        not see them: ``files.Staging``), BEFORE the ref moves: a full or read-only disk then
        refuses the land with nothing moved. Paths whose folder does not exist yet are
        written after the move. Also checks that the index can be rewritten (free space)."""
        new_tree = self._tree(journal.carry[1] if journal.carry else journal.new)
        skipped = indexfile.skipped(self.gitdir, self.root, journal.paths)  # not on disk
        staged: dict[str, Path] = {}
        try:
            for path in journal.paths:
                want = _entry(new_tree, path)
                full = self.root / path
                if want is not None and path not in skipped and full.parent.is_dir():
                    data = self._content(path, want[0])
                    staged[path] = self.staging.temp_file(full, data, want[1])
            check_room_for_index(self.gitdir)
        except OSError as exc:
            self._drop_staged(staged)
            raise refused("the new files to the working tree", exc) from exc
        return staged

    @staticmethod
    def _drop_staged(staged: Mapping[str, Path]) -> None:
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)

    def _apply_or_explain(
        self,
        journal: Journal,
        held: HeldIndex,
        *,
        only_if_old: bool,
        staged: Mapping[str, Path] | None = None,
    ) -> None:
        """``_apply``; an OS error (permissions, disk full, a git that failed on the index)
        keeps the journal for the next call, and says the change IS committed."""
        try:
            self._apply(journal, held, only_if_old=only_if_old, staged=staged or {})
        except (OSError, gitbin.GitFailed) as exc:
            self._drop_staged(staged or {})
            raise RepositoryError(
                f"the change is committed ({journal.new[:12]} on {journal.ref or 'HEAD'}) but "
                f"writing it to the working tree or the index failed: {exc}",
                hint="Fix the cause (permissions, free space, the index); the next gitpatch "
                "call finishes writing those files and the index. The commit is not undone.",
                details={"paths": list(journal.paths), "commit": journal.new, "landed": True},
            ) from exc

    def read(self, path: str) -> bytes | None:
        """The bytes of the file at ``path`` on disk, None when there is none."""
        try:
            return (self.root / path).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as exc:
            raise FilesystemError.of(path, exc, "read") from exc

    def _apply(
        self,
        journal: Journal,
        held: HeldIndex,
        *,
        only_if_old: bool,
        staged: Mapping[str, Path],
        index: bool = True,
        mend: bool = False,
    ) -> None:
        """Write each journal path's content at ``new`` to disk, then (with ``index``) its
        index entry, committed by one rename on the held ``index.lock``.

        With ``only_if_old`` (recovery) a path is rewritten only while its disk content is still
        the one at ``old``: a person may have edited it since, and their edit wins (its index
        entry still follows the branch, so ``git status`` shows their edit as unstaged). The
        same holds for a save that slips in during the land itself (``_put``): the change is
        merged into it, or it stays as the person saved it; it is never overwritten.
        ``mend`` (putting back a land) also passes a path holding neither to the checked
        rename, so a save made during the land gets the reverse change merged into it.
        """
        carry = journal.carry
        new_tree = self._tree(carry[1] if carry else journal.new)
        old_tree = self._tree(carry[0] if carry else journal.old)
        skipped = indexfile.skipped(self.gitdir, self.root, journal.paths)
        if not staged:
            self.staging.clear(self.root, journal.paths)
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
                if disk != (str(have[0]) if have else None) and (
                    not mend or disk is None or disk.startswith("<")
                ):
                    continue  # the person's (a save gets the reverse change: ``mend``)
            landed.append(path)
            if want is None:
                to_delete.append(path)
            else:
                to_write.append((path, want[0], want[1]))
        # Deletes first: a move or an add may need the place a deleted file or directory held.
        saved: list[str] = []  # paths a person saved during the land: theirs, merged or not
        for path in to_delete:
            if not self._delete(path, self._expected(path, old_tree)):
                saved.append(path)
            crashpoint("file.deleted")
        for path, oid, mode in to_write:
            if not self._write(path, oid, mode, staged.get(path), self._expected(path, old_tree)):
                saved.append(path)
            crashpoint("file.renamed")
        landed = [p for p in landed if p not in saved]
        kept = [p for p in journal.paths if p not in landed and p not in skipped]
        if carry is not None:
            new_tree, old_tree, landed, kept = self._carried_index(journal, new_tree, landed, kept)
        if not index:
            self._written = {}
            return
        self._update_index(held, new_tree, landed, kept, old_tree)
        if skipped:
            scratch = held.scratch()
            indexfile.update_entries(self.gitdir, self.root, new_tree, sorted(skipped), scratch)
        held.commit()  # one rename: the entries, their stat data and skip-worktree bits
        crashpoint("index.written")

    def _carried_index(
        self,
        journal: Journal,
        disk_tree: pygit2.Tree | None,
        landed: Sequence[str],
        kept: Sequence[str],
    ) -> tuple[pygit2.Tree | None, pygit2.Tree | None, list[str], list[str]]:
        """(index tree, old tree, landed, kept) of a carrying land: the disk holds the
        person's work with the change merged in, the index follows the branch, so ``git
        status`` shows their work as unstaged; only paths whose disk is the index's land."""
        assert journal.carry is not None
        index_tree = self._tree(journal.carry[2])
        same = [p for p in landed if _entry(index_tree, p) == _entry(disk_tree, p)]
        rest = [p for p in [*landed, *kept] if p not in same]
        return index_tree, self._tree(journal.old), same, rest

    # -- disk state --------------------------------------------------------------------------

    def modified(self, commit: str | None, paths: Iterable[str]) -> list[str]:
        """The paths whose disk content differs from their content at ``commit``.

        A path missing on disk and at ``commit`` is unchanged; anything that is not a regular
        file (a directory, a symlink) counts as different.
        """
        tree = self._tree(commit)
        out: list[str] = []
        wanted = list(paths)  # skip-worktree paths: git compares them with the index only
        skipped = indexfile.skipped(self.gitdir, self.root, wanted)
        for path in (p for p in wanted if p not in skipped):
            want, have = _entry(tree, path), self.disk_blob(path)
            if have == "<directory>" and is_dir(tree, path):
                continue  # a directory then and now: its files are paths of their own
            if have != (str(want[0]) if want else None):
                if not (want is not None and self.as_checked_out(path, want[0])):
                    out.append(path)
            elif want is not None and self.disk_mode(path) not in (None, want[1]):
                out.append(path)  # `chmod +x` is a change, as git sees it
        return out

    def as_checked_out(self, path: str, oid: pygit2.Oid) -> bool:
        """True when the file is byte for byte what checkout writes for ``oid``: git status
        calls it clean (a blob holding CRLF under autocrlf hashes differently from disk)."""
        if not self.filters.converts(path):
            return False
        try:
            return self.filters.checkout_bytes(path, oid) == (self.root / path).read_bytes()
        except OSError:
            return False

    def disk_mode(self, path: str) -> int | None:
        """The mode ``git add`` would record for the file at ``path`` (see ``files.disk_mode``)."""
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
        # a large file is not read when git's index vouches for it (stat data, not racy)
        large = st.st_size >= 1 << 20
        recorded = (
            index.recorded_blob(self.repo, path, st, self.filters.converts) if large else None
        )
        try:
            blob = recorded or self._hash_settled(path, full)
        except OSError as exc:
            raise FilesystemError.of(path, exc, "read") from exc
        self._stat_cache[path] = (*key, time.time_ns(), blob)
        return blob

    def _hash_settled(self, path: str, full: Path) -> str:
        """``Filters.hash_file``, again when the file grew while it was read: libgit2 reads
        the size it stat'ed and fails on more (an editor or a log appending just then)."""
        for _attempt in range(_HASH_ATTEMPTS - 1):
            try:
                return self.filters.hash_file(path, full)
            except OSError as exc:
                if not os.path.isfile(full) or exc.errno not in (None, 0):
                    raise
                time.sleep(0.001)
        return self.filters.hash_file(path, full)

    # -- index -------------------------------------------------------------------------------

    def check_index_writable(self) -> None:
        """Refuse an index only git can read or write when there is no git (``index``)."""
        index.check_writable(self.repo)

    def index_entry(self, path: str) -> tuple[pygit2.Oid, int] | None:
        """The blob id and mode the index records for ``path`` (stage 0), None if none."""
        try:
            found = self.index[path]
        except (KeyError, ValueError):
            return None
        return found.id, int(found.mode)

    @property
    def index(self) -> pygit2.Index:
        """The repository index, re-read when it changed on disk (always checked: libgit2 may
        have loaded it for attribute lookups before gitpatch patched the file in place)."""
        if self._index is None:
            self._index = self.repo.index  # libgit2's copy may be old (attribute lookups load it)
        self._index.read(False)
        return self._index

    def _update_index(
        self,
        held: HeldIndex,
        tree: pygit2.Tree | None,
        landed: Sequence[str],
        kept: Sequence[str] = (),
        old: pygit2.Tree | None = None,
    ) -> None:
        """Point the index entries of ``landed`` (on disk as in ``tree``) and ``kept`` (on disk
        with someone else's content) at ``tree`` in ``held`` (see ``index.sync``)."""
        written, self._written = self._written, {}
        if not landed and not kept:
            return
        index.sync(
            self.repo,
            held,
            lambda: self.index,
            old,
            tree,
            landed,
            kept,
            written,
            self.filters.converts,
        )

    def _content(self, path: str, oid: pygit2.Oid) -> Content:
        """What checkout writes at ``path`` for ``oid``: a large blob just stored is taken from
        memory (``Store.fresh_blobs``) unless git converts the path."""
        filters = self._landing or self.filters
        data = self._blobs.pop(oid, None)
        if data is None or filters.converts(path):
            return filters.checkout_bytes(path, oid)
        return data

    @contextlib.contextmanager
    def _converting(self, journal: Journal) -> Iterator[None]:
        """While a land that changes ``.gitattributes`` files writes, convert under the
        attribute files of its commit, as a fresh checkout of it would (``Filters.under``)."""
        if not changes_attributes(journal.paths):
            yield
            return
        files = attribute_files(self._tree(journal.old))
        files = {path: b"" for path in files} | attribute_files(self._tree(journal.new))
        with self.filters.under(files) as landing:
            self._landing = landing
            try:
                yield
            finally:
                self._landing = None

    # -- files -------------------------------------------------------------------------------

    def _write(
        self,
        path: str,
        oid: pygit2.Oid,
        mode: int,
        tmp: Path | None,
        before: str | None,
    ) -> bool:
        """Put ``oid``'s content at ``path`` by rename (of ``tmp`` when it was staged), if the
        disk still holds ``before`` (the content the land replaces); False when a person saved
        the file meanwhile: the change is then merged into their save, or their save stays."""
        full = self.root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        if full.is_dir() and not full.is_symlink():
            full.rmdir()  # only an empty one; a non-empty directory raises and is reported
        if tmp is None:
            tmp = self.staging.temp_file(full, self._content(path, oid), mode)
        written = os.stat(tmp)  # the file index.sync may record (same after rename)
        landed = saves.put(self, path, tmp, before, oid)
        self._stat_cache.pop(path, None)
        if landed:
            self._written[path] = written
        return landed

    def seen_identity(self, path: str) -> saves.Mark:
        """``saves.mark`` of ``path``'s file when the running land checked the disk."""
        return self._seen.get(path, (None, None))[0]

    def _expected(self, path: str, old: pygit2.Tree | None) -> str | None:
        """The blob (hex) the disk must hold at ``path`` for the land to replace it: what its
        check saw there (``_seen``), else (recovery) the content at the land's old commit."""
        if path in self._seen:
            return self._seen[path][1]
        found = _entry(old, path)
        return str(found[0]) if found else None

    def _delete(self, path: str, expect: str | None) -> bool:
        """Remove ``path`` unless a person saved it meanwhile (as ``_put``); False then."""
        full = self.root / path
        if expect is not None and os.path.isfile(full) and not full.is_symlink():
            self._stat_cache.pop(path, None)
            if not saves.remove(self, path, full, expect):
                return False
        else:
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
        return True

    # -- locks and journal -------------------------------------------------------------------

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Hold off lands while the caller reads the branch head and disk together.

        A land writes the files before it moves the ref; a reader between the two would take
        the new file content for a local edit. Readers share the lock; lands take it alone.
        """
        with self._land_lock(shared=True):
            yield

    def _land_lock(self, shared: bool = False) -> contextlib.AbstractContextManager[None]:
        return land_lock(self.state_dir, shared=shared)

    def _write_journal(self, journal: Journal) -> None:
        journal.write(self.journal_path, durable=self.durable)

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
        if self.durable:
            fsync_dir(self.state_dir)

    # -- git lookups -------------------------------------------------------------------------

    def _ref_target(self, ref: str) -> str | None:
        target = self.store.ref_target(ref or "HEAD")  # a detached HEAD is a ref too
        return None if target is None else str(target)

    def _tree(self, commit: str | None) -> pygit2.Tree | None:
        if not commit:
            return None
        obj = self.repo[commit]
        return obj.peel(pygit2.Tree)
