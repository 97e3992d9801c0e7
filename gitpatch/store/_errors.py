"""The one place where pygit2 and OS errors become ``GitpatchError``.

Every store method that touches libgit2 runs inside :func:`git_errors`, so no raw
``pygit2.GitError`` (nor a bare ``OSError`` or ``KeyError`` from a lookup) ever leaves the store.
The mapping is a table in :func:`translate`, tested entry by entry.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pygit2

from gitpatch.errors import ConcurrentUpdate, FilesystemError, GitpatchError, RepositoryError
from gitpatch.safety.refusals import write_failed

__all__ = ["git_errors", "is_lock_contention", "translate"]

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
        return RepositoryError(f"{action}: {text}", details=details)
    if isinstance(exc, OSError):
        return RepositoryError(
            f"{action}: operating system error ({text})",
            hint="Check permissions and free space of the repository directory.",
            details=details,
        )
    return RepositoryError(f"{action}: unexpected {type(exc).__name__}: {text}", details=details)


@contextmanager
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
