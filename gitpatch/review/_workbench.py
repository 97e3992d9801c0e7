"""A session's workbench: its own linked worktree, in every mode, holding the session's work.

Agents do half their work through commands (tests, formatters, generators), and a command
needs files on disk that hold the session's work. Auto mode on a protected branch has one:
the session branch checked out in ``review.worktrees.place``. Until it is made, such a
session is ``lazy``: its edits land on the session branch in the object store alone (nothing
on disk holds them, so no result names a worktree), and the worktree, once made, checks out
what the branch has then. Review mode gets one at the same place, with a detached HEAD at
what the session's next call builds on (``stack.view``: the target plus the top of its open
proposals). It is kept there:
``follow`` moves it (``git checkout --detach``, so only the paths that differ are written and
a file nobody recorded is never touched) after each proposal, revision, rejection and
approval, and before every call of the session.

In both modes it is made when first needed (a command, a checkpoint, ``session path``),
never by an edit alone, so a session that only edits pays nothing for it; ``ensure`` says
when it made one and what it cost. A lazy session's edit holds the workbench lock while it
lands, so a worktree another process makes meanwhile never misses it (``made_meanwhile``).
Nothing here reads the person's checkout: the workbench is filled from commits.

What it does not do: record what changed in it (``review.checkpoints``), or end a session
(``review.sessions``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

from gitpatch.checkout import gitbin, preflight
from gitpatch.errors import DirtyWorktree, InvalidArguments, RepositoryError
from gitpatch.review import _worktrees as worktrees
from gitpatch.safety.owners import flocked
from gitpatch.workspace import stack
from gitpatch.workspace.sessions import SESSION_PREFIX, remember_target

if TYPE_CHECKING:
    from gitpatch.store import Store
    from gitpatch.workspace import Context

__all__ = [
    "Bench",
    "aliases",
    "ensure",
    "existing",
    "follow",
    "git",
    "MadeMeanwhile",
    "head_of",
    "lazy",
    "locked",
    "made_meanwhile",
    "session_of",
]

#: How long a bench step waits for another process's step on the same session.
_WAIT_SECONDS = 60.0


@dataclass(frozen=True)
class Bench:
    """A session's worktree: ``path``; ``made`` is the sentence saying it was just made and
    what it cost (empty when it already existed)."""

    session: str
    path: Path
    made: str = ""


class MadeMeanwhile(Exception):  # noqa: N818 (a signal to retry, never an error to report)
    """A lazy session's worktree was made by another process since this call began: the call
    starts again in it (``Workspace``)."""


def lazy(ctx: Context) -> bool:
    """True for an auto-mode session on a checkout whose own worktree is not made yet (its
    edits land on the session branch in the object store alone)."""
    return (
        ctx.mode == "auto"
        and ctx.session is not None
        and ctx.worktree is None
        and ctx.branch == SESSION_PREFIX + ctx.session
        and ctx.store.workdir is not None
    )


def made_meanwhile(ctx: Context) -> Path | None:
    """A lazy session's worktree when it exists now (made by another process) with the
    session branch checked out, else None."""
    if not lazy(ctx):
        return None
    assert ctx.session is not None
    where = worktrees.place(ctx.store, ctx.session)
    if not worktrees.made_for(ctx.store, where) or worktrees.filling(ctx.store, ctx.session):
        return None
    try:
        shown = (worktrees.linked_gitdir(where) / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return where if shown == f"ref: {ctx.branch}" else None


def session_of(ctx: Context) -> str:
    """The session whose workbench ``ctx`` works with; refuses a Workspace without one."""
    if ctx.session is None or ctx.worktree is None:
        raise InvalidArguments(
            "this Workspace has no session, so it has no worktree of its own",
            hint="Name the session: gitpatch ... --session NAME, or serve --session NAME.",
            details={"mode": ctx.mode},
        )
    return ctx.session


def existing(ctx: Context) -> Path | None:
    """The session's worktree when it exists (None: never made, or ended)."""
    if ctx.session is None or ctx.worktree is None:
        return None
    if ctx.mode == "auto":
        return ctx.worktree.root if ctx.branch == SESSION_PREFIX + ctx.session else None
    where = worktrees.place(ctx.store, ctx.session)
    if not worktrees.made_for(ctx.store, where) or worktrees.filling(ctx.store, ctx.session):
        return None
    return where


def aliases(ctx: Context) -> tuple[str, ...]:
    """The session's review-mode worktree, whose absolute paths name the same files as the
    person's checkout does (an agent started there names them so); empty without one."""
    if ctx.mode != "review" or ctx.session is None or ctx.worktree is None:
        return ()
    return (str(worktrees.place(ctx.store, ctx.session)),)


def ensure(ctx: Context) -> Bench:
    """The session's worktree, made now when it does not exist yet (review mode, or a lazy
    auto-mode session: the Workspace then works in it)."""
    if lazy(ctx):
        return _ensure_branch(ctx)
    name = session_of(ctx)
    found = existing(ctx)
    if found is not None:
        return Bench(name, found)
    if ctx.mode == "auto":
        raise InvalidArguments(
            f"session {name!r} works on an unprotected branch in the person's checkout",
            hint="Sessions get a worktree of their own in review mode, or in auto mode on a "
            "protected branch.",
            details={"session": name},
        )
    with locked(ctx.store, name):
        found = existing(ctx)
        if found is not None:
            return Bench(name, found)
        head = stack.view(ctx.store, ctx.branch, name, ctx.target).head
        if head is None:
            raise RepositoryError(
                f"{ctx.target} has no commit yet: there is nothing to check out",
                hint="Make a first commit on the branch, then try again.",
                details={"branch": ctx.target},
            )
        remember_target(ctx.store, name, ctx.target)
        start = time.perf_counter()
        where = worktrees.add(ctx.store, name, str(head), detach=True)
        took = time.perf_counter() - start
        files = sum(1 for _ in ctx.store.files(head))
    return Bench(name, where, made_text(where, files, took))


def _ensure_branch(ctx: Context) -> Bench:
    """A lazy session's worktree: its session branch checked out at ``place``."""
    assert ctx.session is not None
    name = ctx.session
    with locked(ctx.store, name):
        found = made_meanwhile(ctx)
        if found is not None:
            return Bench(name, found)
        head = ctx.store.ref_target(ctx.branch)
        if head is None:
            raise RepositoryError(
                f"session {name!r} has no commit yet: there is nothing to check out",
                hint="Make a first commit on its target branch, then try again.",
                details={"branch": ctx.branch},
            )
        start = time.perf_counter()
        where = worktrees.ensure(ctx.store, name, ctx.branch)
        took = time.perf_counter() - start
        files = sum(1 for _ in ctx.store.files(head))
    return Bench(name, where, made_text(where, files, took))


def made_text(where: Path, files: int, took: float) -> str:
    """The sentence a result carries when it made the session's worktree."""
    return (
        f"Made the session's worktree at {where} ({files} files checked out in {took:.1f} s; "
        "it is kept in step with your work)."
    )


@contextlib.contextmanager
def locked(store: Store, name: str) -> Iterator[None]:
    """Hold session ``name``'s workbench: one step at a time across processes (a checkpoint
    from a hook while the MCP server lands an edit)."""
    folder = worktrees.common_dir(store) / "gitpatch" / "benches"
    folder.mkdir(parents=True, exist_ok=True)
    with flocked(folder / f"{name}.lock", wait=_WAIT_SECONDS):
        yield


def head_of(store: Store, bench: Path) -> pygit2.Oid | None:
    """The commit the worktree at ``bench`` (a worktree of ``store``'s repository) has checked
    out: its HEAD, read from its files, a branch it names resolved by the store."""
    text = (worktrees.linked_gitdir(bench) / "HEAD").read_text(encoding="utf-8").strip()
    if text.startswith("ref: "):
        return store.ref_target(text.removeprefix("ref: "))
    return pygit2.Oid(hex=text)


def follow(ctx: Context) -> Path | None:
    """Bring the session's review-mode worktree to what its next call builds on; the path,
    None when it has none. Only paths that differ are written, and a file changed in the
    worktree since (a change no checkpoint has) is never overwritten: the step refuses."""
    if ctx.mode != "review":
        return existing(ctx)
    where = existing(ctx)
    if where is None:
        return None
    assert ctx.session is not None
    with locked(ctx.store, ctx.session):
        move_to(ctx, where)
    return where


def move_to(ctx: Context, where: Path) -> None:
    """``follow``'s step, the workbench lock held."""
    assert ctx.session is not None
    head = stack.view(ctx.store, ctx.branch, ctx.session, ctx.target).head
    if head is None or head_of(ctx.store, where) == head:
        return
    # a git command still running there (a killed agent's, the person's) holds the index:
    # wait for it, then refuse with concurrent_update, rather than blame unrecorded changes
    preflight.wait_for_index_lock(worktrees.linked_gitdir(where))
    try:
        git(where, ["checkout", "--quiet", "--detach", str(head)])
    except gitbin.GitFailed as exc:
        raise DirtyWorktree(
            f"the session's worktree {where} has changes no checkpoint recorded to files its "
            f"proposals changed since, so it cannot show them: {exc.stderr}",
            hint="Checkpoint them (gitpatch checkpoint, or the checkpoint tool) or undo them "
            "in the worktree, then retry.",
            details={"worktree": str(where)},
        ) from exc


def git(where: Path, args: list[str], stdin: bytes = b"") -> bytes:
    """Run git in the worktree at ``where`` (its own git directory and index)."""
    return gitbin.run(str(worktrees.linked_gitdir(where)), str(where), args, stdin)
