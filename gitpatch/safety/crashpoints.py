"""The test suite's kill switch: ``crashpoint(name)`` at every step boundary of a land.

Inert in normal use: it reads ``GITPATCH_CRASH_AT`` / ``GITPATCH_CRASH_LOG``, which only the
crash tests set, and returns. The points are named in ``POINTS`` (README, "Crash safety").

How the process dies there: ``os._exit(137)`` by default; with ``GITPATCH_CRASH_HOW=stop`` it
stops itself (``SIGSTOP``) so that the test, its parent, sees it stopped at exactly that point
and kills it with a real ``SIGKILL`` (``tests/safety/proofkit.killed_at``). With
``GITPATCH_CRASH_HOW=pause`` it stops the same way but goes on when the test sends ``SIGCONT``:
the test runs a person's git command at exactly that point of a land (``proofkit.paused_at``).
"""

from __future__ import annotations

import os
import signal

__all__ = ["POINTS", "crash_requested", "crashpoint"]

#: Every step boundary, in the order a land passes them.
POINTS = (
    "objects.written",  # the proposal's (or step's) commits are in the object store
    "journal.written",  # the land journal names ref, old, new, paths and notes
    "files.staged",  # the new files are written (fsynced) next to their places, refs not moved
    "file.deleted",  # one path deleted on disk, refs not moved (:n for the n-th)
    "file.kept",  # a file's new content named for the file it will replace, not yet swapped
    "file.renamed",  # one file renamed into place, refs not moved (:n for the n-th)
    "index.skip_worktree",  # skip-worktree entries set in the scratch index, their bits not yet
    "index.written",  # the index names the new blobs (index.lock held), refs not moved
    "record.written",  # the owner record lists the lock files and refs about to be taken
    "refs.locked",  # every ref lock of the transaction is held, nothing moved
    "refs.partial",  # the first ref moved, the others still locked (a kill inside the commit)
    "refs.partial.last",  # the same with the last ref (the notes ref) moved first
    "refs.moved",  # refs and notes moved together
    "land.put_back",  # the ref transaction failed: files and index are back, journal not dropped
    "head.moved",  # HEAD points at the session branch
    "config.written",  # the session's target is remembered in git config
    "saves.settled",  # the files the land replaced checked once more, the journal not dropped
    "journal.dropped",  # the land is complete
    "checkpoint.staged",  # a checkpoint's changes are in its worktree's index, nothing published
    "checkpoint.published",  # its proposal ref (or session branch) and note moved, HEAD not yet
    "worktree.added",  # a session's worktree is recorded by git, its files not written yet
    "worktree.filled",  # its files are written, the marker saying it is being made remains
    "session.set_aside",  # an ending session's worktree folder is renamed aside, not removed
    "session.removed",  # that folder is removed; git's record of it and the branch remain
)

_CRASH_ENV = "GITPATCH_CRASH_AT"
_LOG_ENV = "GITPATCH_CRASH_LOG"
_HOW_ENV = "GITPATCH_CRASH_HOW"
_passed: dict[str, int] = {}


def crashpoint(name: str) -> None:
    """Die at step boundary ``name`` when the crash tests ask for it (see the module).

    ``GITPATCH_CRASH_AT=<name>[:<n>]`` kills at the n-th time the point is passed (default the
    first); with ``GITPATCH_CRASH_LOG=<file>`` every point passed is appended there.
    """
    spec = os.environ.get(_CRASH_ENV)
    log = os.environ.get(_LOG_ENV)
    if spec is None and log is None:
        return
    count = _passed[name] = _passed.get(name, 0) + 1
    if log is not None:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{name}:{count}\n")
    if spec is not None and _asked(spec, name, count):
        how = os.environ.get(_HOW_ENV)
        if how in ("stop", "pause"):
            os.kill(os.getpid(), signal.SIGSTOP)  # the parent SIGKILLs it here, or goes on
            if how == "pause":
                return
        os._exit(137)


def crash_requested(name: str) -> bool:
    """True when the next pass of ``name`` is to be a kill (for a simulated partial step)."""
    spec = os.environ.get(_CRASH_ENV)
    return spec is not None and _asked(spec, name, _passed.get(name, 0) + 1)


def _asked(spec: str, name: str, count: int) -> bool:
    point, _, nth = spec.partition(":")
    return point == name and count == int(nth or "1")
