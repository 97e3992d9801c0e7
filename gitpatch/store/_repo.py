"""The repository every part of ``Store`` holds: its handle, its git config and attributes, the
operation around a change, and the one place where pygit2 and OS errors become ``GitpatchError``.

Every store method that touches libgit2 runs inside :func:`git_errors`, so no raw
``pygit2.GitError`` (nor a bare ``OSError`` or ``KeyError`` from a lookup) ever leaves the store.
The mapping is a table in :func:`translate`, tested entry by entry. Config reads never raise: an
unset or unreadable key is a default (None, False, []), since every caller has one; a config
write announces git's config lock in an owner record first (see ``gitpatch.safety.owners``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pygit2

from gitpatch.errors import ConcurrentUpdate, FilesystemError, GitpatchError, RepositoryError
from gitpatch.safety import owners
from gitpatch.safety.refusals import write_failed

__all__ = ["Repo", "git_errors", "is_lock_contention", "translate"]

_RETRY_HINT = "Another process moved it first; read the current state again and retry."


def is_lock_contention(exc: BaseException) -> bool:
    """True when ``exc`` is libgit2 failing to take a ``.lock`` file another process holds."""
    # libgit2 reports a busy lock as OSError from most calls but as GitError (class OS) from a
    # reference transaction, and words it "failed to lock file" or, when it loses the race to
    # create the lock, "failed to create locked file ... File exists".
    text = str(exc)
    return isinstance(exc, OSError | pygit2.GitError) and (
        "failed to lock" in text or ("locked file" in text and "exists" in text)
    )


def _cas_lost(exc: BaseException) -> bool:
    text = str(exc)
    return isinstance(exc, pygit2.AlreadyExistsError) or (
        isinstance(exc, pygit2.GitError)
        and ("old reference value does not match" in text or "has changed" in text)
    )


def translate(exc: BaseException, action: str) -> GitpatchError:
    """Map one pygit2 / OS / lookup error raised while doing ``action`` to a gitpatch error."""
    text = str(exc).strip() or type(exc).__name__
    details = {"action": action, "cause": text}
    if is_lock_contention(exc):
        return ConcurrentUpdate(
            f"{action}: a git lock file is held by another process ({text})",
            hint="Retry shortly; if no git process is running, remove the stale .lock file.",
            details=details,
            reason="locked",
        )
    if _cas_lost(exc):
        return ConcurrentUpdate(
            f"{action}: the reference changed concurrently ({text})",
            hint=_RETRY_HINT,
            details=details,
            reason="changed",
        )
    refused = write_failed(f"to the repository ({action})", exc)
    if refused is not None:
        return refused
    if isinstance(exc, pygit2.GitError) and text == "no error":
        # libgit2 loses the errno of a failed object write (a full disk does this)
        return FilesystemError(
            f"could not write to the repository ({action}): the disk refused the write "
            "(libgit2 gives no reason: usually a full disk or a file size limit); nothing was "
            "changed",
            hint="Free some space, then retry the same call.",
            details=details,
        )
    if isinstance(exc, pygit2.AmbiguousError):
        return RepositoryError(
            f"{action}: the name is ambiguous ({text})",
            hint="Use more characters of the commit id, or a full ref name.",
            details=details,
        )
    if isinstance(exc, pygit2.InvalidSpecError):
        return RepositoryError(
            f"{action}: invalid reference name or revision ({text})",
            hint="Use a valid ref name such as 'refs/heads/main' or a commit id.",
            details=details,
        )
    if isinstance(exc, KeyError):
        return RepositoryError(
            f"{action}: not found in the repository ({text})",
            hint="Check the commit id or ref name; list refs with `git show-ref`.",
            details=details,
        )
    if isinstance(exc, pygit2.GitError | ValueError):
        unexplained = isinstance(exc, pygit2.GitError)
        return RepositoryError(f"{action}: {text}", details=details, unexplained=unexplained)
    if isinstance(exc, OSError):
        return RepositoryError(
            f"{action}: operating system error ({text})",
            hint="Check permissions and free space of the repository directory.",
            details=details,
        )
    return RepositoryError(f"{action}: unexpected {type(exc).__name__}: {text}", details=details)


@contextlib.contextmanager
def git_errors(action: str) -> Iterator[None]:
    """Run a block of libgit2 calls; re-raise their errors as ``GitpatchError`` (``from exc``).

    ``action`` says what was being done, in words a caller can act on ("read 'a.py' at 1a2b3c").
    """
    try:
        yield
    except GitpatchError:
        raise
    except (pygit2.GitError, OSError, KeyError, ValueError) as exc:
        raise translate(exc, action) from exc


class Repo:
    """One pygit2 repository and what every part of ``Store`` asks of it as a whole."""

    repo: pygit2.Repository
    _durable: bool

    @property
    def git_dir(self) -> Path:
        """The git directory (a linked worktree's own one, under the common ``worktrees/``)."""
        return Path(self.repo.path)

    @property
    def is_bare(self) -> bool:
        """True when the repository has no working tree."""
        return bool(self.repo.is_bare)

    @property
    def workdir(self) -> str | None:
        """The working tree's root (with a trailing slash), None for a bare repository."""
        return None if self.repo.is_bare else self.repo.workdir

    def durable(self) -> bool:
        """Whether git config (``core.fsync`` and friends) asks to fsync objects, refs or the
        index; read once, when the Store is made (see ``gitpatch.safety.durability``)."""
        return self._durable

    def is_ignored(self, path: str) -> bool:
        """Whether git's ignore rules match ``path`` (tracked or not: callers check that)."""
        try:
            return bool(self.repo.path_is_ignored(path))
        except pygit2.GitError:
            return False

    def config_handle(self) -> pygit2.Config:
        """The repository's git config as one object to keep: libgit2 re-reads its files when
        they change (making one per lookup costs ~0.3 ms, which per-path callers avoid)."""
        return self.repo.config

    def attribute(self, path: str, name: str) -> str | bool | None:
        """Git attribute ``name`` of ``path`` as libgit2 reads the attribute files."""
        value: str | bool | None = self.repo.get_attr(path, name)
        return value

    def config_get(self, key: str) -> str | None:
        """The git config value of ``key``, None when unset or unreadable."""
        with contextlib.suppress(KeyError, pygit2.GitError):
            if key in self.repo.config:
                return str(self.repo.config[key])
        return None

    def config_bool(self, key: str) -> bool:
        """The git config boolean ``key``; False when unset or not a boolean."""
        with contextlib.suppress(KeyError, pygit2.GitError, ValueError):
            if key in self.repo.config:
                return bool(self.repo.config.get_bool(key))
        return False

    def config_values(self, key: str) -> list[str]:
        """Every value of the multi-valued git config ``key`` (empty when unset)."""
        with contextlib.suppress(KeyError, pygit2.GitError):
            return [str(v) for v in self.repo.config.get_multivar(key)]
        return []

    def config_set(self, key: str, value: str) -> bool:
        """Set ``key`` in the repository's config; False when the config cannot be written."""
        lock = [str(owners.config_lock(self.repo.path))]
        with owners.holding(self.repo.path, lock), contextlib.suppress(pygit2.GitError, OSError):
            self.repo.config[key] = value
            return True
        return False
