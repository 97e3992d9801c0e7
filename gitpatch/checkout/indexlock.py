"""git's ``index.lock``, held by a land from before its branch moves until its index is written.

git's own commands take ``index.lock`` before they read the index and keep it until they have
written it. A land does the same across its whole step (the ref transaction, the file renames,
the index entries), so a person's ``git commit -a``, ``git stash``, ``git add`` or ``git
checkout`` runs wholly before the land or wholly after it (or fails at once with git's own
"Another git process seems to be running"), never between the branch move and the index
write, where it would record the agent's change as reverted.

Every index change of one land is committed by ONE rename of a scratch copy in ``.git/gitpatch``
over the index, the lock still held until the land ends: entries patched in the index's bytes
(``indexfile``) are written there, and what only the git binary does (split and sparse indexes,
filters, the skip-worktree bit) runs on it with ``GIT_INDEX_FILE``. A kill before that rename
leaves the old index (and the land's journal, so recovery writes it again); a kill after it,
the new one.

The lock is taken through the operation's owner record (``Record.pin``): listed in every plan
written while it is held and proved, so recovery removes it after a kill, and only then.

What this does not do: it does not stop readers (``git status``, ``git diff`` read without the
lock, as they do while git itself writes), nor an editor, which knows nothing of git's locks
(``WorkingTree`` checks the disk again right before each rename).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from gitpatch.checkout import indexfile
from gitpatch.errors import ConcurrentUpdate
from gitpatch.safety.locks import retry_locked
from gitpatch.safety.owners import Record, operation

__all__ = ["INDEX_LOCK_WAIT_SECONDS", "HeldIndex", "held_index"]

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
        self._pending: bytes | None = None  # patched bytes not yet written anywhere
        self._copied = False  # the scratch copy exists and holds the land's index

    def _take(self, wait: float) -> None:
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

    def commit(self) -> None:
        """Put the changed index in place, in one rename of the scratch copy; the lock stays
        held until the ``held_index`` block ends (a recovery that runs first in a land
        commits too, and the land after it must still hold the lock)."""
        if self._pending is not None and not self._copied:
            # patched bytes alone: written to the scratch copy, and kept for the next read
            data, self._pending = self._pending, None
            self._scratch.parent.mkdir(parents=True, exist_ok=True)
            self._scratch.write_bytes(data)
            with contextlib.suppress(FileNotFoundError):
                shutil.copymode(self.path, self._scratch)
            os.replace(self._scratch, self.path)
            indexfile.remember(self.path, data)
            return
        if self._copied:
            with contextlib.suppress(FileNotFoundError):
                shutil.copymode(self.path, self._scratch)
            os.replace(self._scratch, self.path)
            self._copied = False

    def handover(self, write: Callable[[], object]) -> None:
        """Release the lock for a writer that takes it itself (libgit2, when there is no
        git binary), then run ``write``, waiting out a git command that took it meanwhile."""
        self._release()
        retry_locked(write)

    def _release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.lock)
            self._record.unpin(self.lock)
        if self._copied:
            self._scratch.unlink(missing_ok=True)
            self._copied = False
        self._pending = None


@contextlib.contextmanager
def held_index(gitdir: Path, wait: float = INDEX_LOCK_WAIT_SECONDS) -> Iterator[HeldIndex]:
    """Hold ``gitdir``'s ``index.lock`` for the block (waiting ``wait`` seconds for a git
    command that has it); what the block does not ``commit`` is dropped, the lock released."""
    with operation(str(gitdir)) as record:
        held = HeldIndex(gitdir, record)
        held._take(wait)
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
            if name.startswith("index.") and name.endswith((".scratch", ".scratch.lock")):
                (folder / name).unlink(missing_ok=True)
