"""git's ``index.lock``, held by a land from before it writes its files until its branch moved.

git's own commands take ``index.lock`` before they write the index and keep it until they have
moved their branch. A land does the same across its whole step, in git's order (the file
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
from gitpatch.safety.recovery import adopt_index_lock

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
