"""Sessions as a person sees them: the list, and ending one.

A session is known by what it left in git: a session branch (auto mode on a protected
branch), open proposals whose notes name it (review mode), or a worktree of its own at
``worktrees.place`` (see ``review.workbench``). ``listing`` gathers all three; ``end``
removes the worktree and the session branch once nothing of the session is open, and
refuses, changing nothing, while something is: open proposals, commits its target lacks,
changes in its worktree no checkpoint recorded (never discarded, not even with ``force``),
or a live connection using it. Files git ignores there (build output, ``.venv/``) go with
the worktree only when the person asks (``force``); the result names them.

Ending is crash-safe: the worktree folder is first renamed aside (one atomic step), then
removed, then git's record of it and the branch go. A kill anywhere leaves either the session
as it was or a folder set aside that the next ``end`` or ``listing`` finishes removing; what
it removes was all recorded (or ignored by git, with ``force``) before the first step, and is
looked at once more once set aside: a change that arrived meanwhile puts the folder back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from gitpatch.checkout import gitbin
from gitpatch.checkout.worktree import WorkingTree
from gitpatch.errors import DirtyWorktree, GitpatchError, InvalidArguments, ProposalNotFound
from gitpatch.review import _checkpoints as checkpoints
from gitpatch.review import _workbench as workbench
from gitpatch.review import _worktrees as worktrees
from gitpatch.review._lookup import find, session_names
from gitpatch.safety.recovery import crashpoint
from gitpatch.workspace import stack
from gitpatch.workspace.results import iso
from gitpatch.workspace.sessions import SESSION_PREFIX, check_session_name, session_target

if TYPE_CHECKING:
    from gitpatch.workspace import Context

__all__ = ["SessionInfo", "end", "follow_all", "listing"]

#: The prefix of a worktree folder set aside by ``end`` before it is removed.
_ENDING = worktrees.ENDING


class SessionInfo(BaseModel):
    """One session: its name, mode, target, worktree (``""``: none), open proposals (review:
    proposals on its stack; auto: commits its target lacks) and last activity (ISO time)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    mode: str
    target: str
    worktree: str
    open_proposals: int
    last_activity: str


def _folder(ctx: Context) -> Path:
    return worktrees.place(ctx.store, "x").parent


def _benches(ctx: Context) -> list[str]:
    """Names of the sessions with a worktree folder gitpatch made (``worktrees.made_for``:
    never a person's own worktree beside them), set-aside ones swept."""
    folder = _folder(ctx)
    if not folder.is_dir():
        return []
    names = []
    for child in sorted(folder.iterdir()):
        if child.name.startswith(_ENDING):
            back = _sweep(ctx, child)
            if back is not None and back.name not in names:
                names.append(back.name)
        elif worktrees.made_for(ctx.store, child):  # a person's own worktree there is not
            names.append(child.name)
    return names


def _sweep(ctx: Context, aside: Path) -> Path | None:
    """Finish removing a worktree folder a killed ``end`` set aside; put it back instead when
    a change no checkpoint has reached it meanwhile (a command still running there), and
    return where it went."""
    home = aside.with_name(aside.name.removeprefix(_ENDING).rsplit("-", 1)[0])
    try:
        found: checkpoints.Scan | None = checkpoints.scan(aside, checkpoints.max_bytes(ctx))
    except (GitpatchError, gitbin.GitFailed, OSError):
        found = None  # git no longer knows the folder: it was checked before it was set aside
    if found is not None and _unrecorded(found) and not home.exists():
        os.rename(aside, home)
        return home
    shutil.rmtree(aside, ignore_errors=True)
    worktrees.forget(ctx.store, home)
    return None


def _review_ctx(ctx: Context, name: str) -> Context:
    """``ctx`` as review-mode session ``name`` sees it (its remembered target)."""
    target = session_target(ctx.store, name) or ctx.target
    return dataclasses.replace(ctx, mode="review", session=name, branch=target, target=target)


def _on_checkout(ctx: Context) -> Context:
    """``ctx`` with its repository's working tree. A lazy session (auto mode, its own worktree
    not made yet: ``workbench.lazy``) has no working tree of its own, but the sessions it
    lists or ends are the checkout's all the same; taken for a bare repository, it would end a
    session by its branch alone and leave the worktree behind (``git worktree list`` showing
    it at 0000000)."""
    if ctx.worktree is not None or ctx.store.workdir is None:
        return ctx
    return dataclasses.replace(ctx, worktree=WorkingTree.of(ctx.store))


def listing(ctx: Context) -> list[SessionInfo]:
    """Every session, sorted by name (see the module)."""
    ctx = _on_checkout(ctx)
    store = ctx.store
    out: dict[str, SessionInfo] = {}
    for name in session_names(store):
        ref = SESSION_PREFIX + name
        tip = store.ref_target(ref)
        if tip is None:
            continue
        try:
            sub = find(ctx, name)
        except GitpatchError:
            continue
        where = worktrees.checked_out(store, ref) if store.workdir else None
        out[name] = SessionInfo(
            name=name,
            mode="auto",
            target=sub.target,
            worktree=str(where or ""),
            open_proposals=len([c for c in sub.commits if c not in sub.records]),
            last_activity=iso(store.info(tip).time),
        )
    entries = [e for e in stack.open_entries(store, fresh=True) if e.session]
    names = {e.session for e in entries} | set(_benches(ctx) if store.workdir else [])
    for name in sorted(names - set(out)):
        mine = [e for e in entries if e.session == name]
        target = mine[-1].target if mine else (session_target(store, name) or ctx.target)
        where = workbench.existing(_review_ctx(ctx, name)) if ctx.worktree else None
        times = [str(e.note.get("created_at") or "") for e in mine]
        if where is not None:
            index = worktrees.linked_gitdir(where) / "index"
            with contextlib.suppress(OSError):
                times.append(iso(int(index.stat().st_mtime)))
        out[name] = SessionInfo(
            name=name,
            mode="review",
            target=target,
            worktree=str(where or ""),
            open_proposals=len(mine),
            last_activity=max(times) if times else "",
        )
    return [out[n] for n in sorted(out)]


def follow_all(ctx: Context) -> None:
    """Bring every review-mode session's worktree up to date after a person's verdict (a
    worktree with unrecorded changes in the way stays as it is: its agent's next call says so)."""
    ctx = _on_checkout(ctx)
    if ctx.worktree is None:
        return
    for name in _benches(ctx):
        if ctx.store.ref_target(SESSION_PREFIX + name) is None:
            with contextlib.suppress(GitpatchError):
                workbench.follow(_review_ctx(ctx, name))


def end(ctx: Context, name: str, *, force: bool = False) -> str:
    """End session ``name`` (see the module); the sentence saying what was removed.

    Files git ignores in its worktree (build output, ``.venv/``) are removed with it only
    when ``force`` says so; without it their presence refuses, naming them."""
    check_session_name(name)
    told = ctx.worktree
    ctx = _on_checkout(ctx)
    store = ctx.store
    ref = SESSION_PREFIX + name
    tip = store.ref_target(ref)
    own = worktrees.place(store, name)
    if ctx.worktree is not None:
        _benches(ctx)  # finishes what a killed end left set aside
        with workbench.locked(store, name):
            worktrees.drop_half_made(store, name)  # and what a killed making of one left
        worktrees.forget(store, own)  # and git's record of its own folder a killed end removed
        store.recover()  # a killed land's locks there, once git's record of it is gone
    if worktrees.made_for(store, own):  # a land killed there: settled there (its locks are left to
        _, there = worktrees.recovered(own)  # it by other worktrees' recovery) before it is
        _tell(told or ctx.worktree, there)  # judged; a save its recovery set aside is told
    where = _worktree_of(ctx, name, ref, tip)
    open_ids = [e.id for e in stack.open_entries(store, fresh=True) if e.session == name]
    if tip is None and where is None and not open_ids:
        raise ProposalNotFound(
            f"no session named {name!r}: no session branch, open proposal or worktree has it",
            hint="See gitpatch sessions for the sessions there are.",
            details={"session": name},
        )
    _refuse_inside(ctx, name, where)
    _refuse_open(ctx, name, tip, open_ids)
    _refuse_live(ctx, name)
    left: list[str] = []
    with workbench.locked(store, name):
        if where is not None:
            left = _refuse_unrecorded(ctx, where, force)
            _remove(ctx, where, force)
        if tip is not None:
            store.update_ref(ref, None, tip, f"gitpatch: end session {name}")
    said = f"Ended session {name}"
    if where is not None:
        said += f": removed its worktree {where}"
        if left:
            said += f" (with the files git ignores there, as --force asked: {', '.join(left)})"
    if tip is not None:
        said += f"{',' if where is not None else ':'} deleted {ref.removeprefix('refs/heads/')}"
    return said + "."


def _tell(caller: WorkingTree | None, there: WorkingTree | None) -> None:
    """Hand the saves the recovery of ``there`` set aside to the caller's working tree, whose
    ``set_aside`` the caller's door tells (``Workspace.plumbing.set_aside``)."""
    if caller is not None and there is not None and there is not caller:
        caller.set_aside += there.set_aside
        there.set_aside = []


def _worktree_of(ctx: Context, name: str, ref: str, tip: object) -> Path | None:
    if ctx.worktree is None:
        return None
    if tip is not None:
        found = worktrees.checked_out(ctx.store, ref)
        if found is not None and found.resolve() != worktrees.place(ctx.store, name).resolve():
            raise InvalidArguments(
                f"{ref.removeprefix('refs/heads/')} is checked out in {found}, which is not the "
                "session's own worktree",
                hint="Switch that checkout to another branch, then end the session.",
                details={"session": name, "worktree": str(found)},
            )
        return found
    where = worktrees.place(ctx.store, name)
    return where if worktrees.made_for(ctx.store, where) else None


def _refuse_inside(ctx: Context, name: str, where: Path | None) -> None:
    """Refuse to end a session from inside its own worktree: the removal would take the
    folder the call works in (git, run there next, could no longer start)."""
    if where is None or ctx.worktree is None or ctx.worktree.root.resolve() != where.resolve():
        return
    raise InvalidArguments(
        f"{where} is the worktree of session {name!r}, which ending the session removes",
        hint=f"Run it from your own checkout (gitpatch -C DIR session end {name}, DIR outside "
        "this worktree). Nothing was removed.",
        details={"session": name, "worktree": str(where)},
    )


def _refuse_open(ctx: Context, name: str, tip: object, open_ids: list[str]) -> None:
    if open_ids:
        raise InvalidArguments(
            f"session {name!r} has open proposals: {', '.join(open_ids)}",
            hint="Approve or reject them first (gitpatch approve/reject ID, or the session "
            "name for all of them); then end the session. Nothing was removed.",
            details={"session": name, "open": open_ids},
        )
    if tip is None:
        return
    sub = find(ctx, name)
    pending = [c for c in sub.commits if c not in sub.records]
    if pending:
        raise InvalidArguments(
            f"session {name!r} has {len(pending)} commit(s) "
            f"{sub.target.removeprefix('refs/heads/')} does not have",
            hint=f"Approve the session (gitpatch approve {name}) or undo its commits; then end "
            "it. Nothing was removed.",
            details={"session": name, "commits": [str(c) for c in pending]},
        )


def _refuse_live(ctx: Context, name: str) -> None:
    """Refuse a session a live connection (an MCP server) is using."""
    held = worktrees.common_dir(ctx.store) / "gitpatch" / "sessions" / f"{name}.live"
    if not held.exists():
        return
    fd = os.open(held, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise InvalidArguments(
            f"session {name!r} is in use by a live connection (an MCP server)",
            hint="Stop the agent's server first, then end the session. Nothing was removed.",
            details={"session": name},
        ) from None
    finally:
        os.close(fd)


def _unrecorded(found: checkpoints.Scan) -> list[str]:
    """What a checkpoint would record, and what it leaves out that git does not ignore (a
    file over the size limit, a submodule's or a nested repository's contents)."""
    return [*found.paths, *(e for e in found.left_out if not e.endswith(" (ignored)"))]


def _refuse_unrecorded(ctx: Context, where: Path, force: bool) -> list[str]:
    """Refuse a worktree with changes no checkpoint has, whatever ``force`` says, and one
    holding ignored files unless ``force``; the ignored entries it holds."""
    found = checkpoints.scan(where, checkpoints.max_bytes(ctx))
    listed = _unrecorded(found)
    if listed:
        raise DirtyWorktree(
            f"the session's worktree {where} has changes no checkpoint recorded: {_some(listed)}",
            hint="Checkpoint them (gitpatch checkpoint --session NAME), then approve or reject "
            "that proposal, or remove them yourself; then end the session. --force never "
            "discards them. Nothing was removed.",
            details={"worktree": str(where), "paths": listed},
        )
    ignored = [e.removesuffix(" (ignored)") for e in found.left_out]
    if ignored and not force:
        raise DirtyWorktree(
            f"the session's worktree {where} holds files git ignores (build output, "
            f"environments): {_some(ignored)}",
            hint="Keep what you need from them, then end the session with --force "
            "(end_session(name, force=True)) to remove them with the worktree. Nothing was "
            "removed.",
            details={"worktree": str(where), "ignored": ignored},
        )
    return ignored


def _some(listed: list[str]) -> str:
    return ", ".join(listed[:10]) + (f" and {len(listed) - 10} more" if len(listed) > 10 else "")


def _remove(ctx: Context, where: Path, force: bool) -> None:
    """Set the worktree folder aside (atomic), look once more (a command still running
    there may have written since: then it goes back, refused), remove it, then git's record."""
    aside = where.with_name(f"{_ENDING}{where.name}-{time.time_ns()}")
    os.rename(where, aside)
    crashpoint("session.set_aside")
    try:
        _refuse_unrecorded(ctx, aside, force)
    except DirtyWorktree:
        os.rename(aside, where)
        raise
    shutil.rmtree(aside)
    crashpoint("session.removed")
    worktrees.forget(ctx.store, where)
