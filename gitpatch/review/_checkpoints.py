"""Checkpoints: what commands changed in a session's worktree, made one proposal of the session.

The edit tools record their own changes; a command (a formatter, a code generator, a package
manager) changes files behind their back. ``checkpoint`` finds every such change in the
session's worktree (``review.workbench``): modified, added (untracked and not ignored),
deleted, mode changes, and renames (a deletion plus an addition; the diff shows the rename),
and stores it as ``git add`` would (eol conversion, clean filters) in ONE commit on what the
worktree has checked out, authored by the agent, with the command in a ``Gitpatch-Command``
trailer. In review mode that commit is a proposal on the session's stack; in auto mode a
commit on the session branch. It is then reviewed, commented, rejected with a reason, revised
and undone like any other proposal, and rejecting it gives the worktree back exactly the files
it recorded (``workbench.follow``: no ``git clean``, no ignored or unrecorded file touched).

What is left out is said, never skipped silently: ignored files, files over
``gitpatch.checkpointMaxBytes`` (default 5 MiB), a submodule's contents and a repository of
its own inside the worktree. Nothing changed: no proposal, and the result says so.

Crash safety: the changes are staged in the worktree's own index first, then the commit is
published (ref and note in one transaction), then HEAD moves. A kill before the publish
leaves them staged, and the next checkpoint records them; a kill after it leaves the index at
the new commit, and ``workbench.follow`` moves HEAD there. Nothing is lost either way.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2
from pydantic import BaseModel, ConfigDict, Field

from gitpatch.checkout import gitbin, preflight
from gitpatch.core.model import Changeset
from gitpatch.errors import BranchCheckedOut, InvalidArguments, RepositoryError
from gitpatch.review import _workbench as workbench
from gitpatch.review import _worktrees as worktrees
from gitpatch.safety.recovery import crashpoint
from gitpatch.workspace import Built, Transition, guards, propose, publish, refuse_rejected
from gitpatch.workspace.results import FileAction, FileResult, ProposalResult
from gitpatch.workspace.sessions import PROPOSAL_PREFIX, short

if TYPE_CHECKING:
    from gitpatch.workspace import Context

__all__ = [
    "MAX_BYTES_SETTING",
    "CheckpointResult",
    "Scan",
    "around_edit",
    "check",
    "checkpoint",
    "max_bytes",
    "pending",
    "scan",
]

#: git config key: the largest file (bytes) a checkpoint records; larger ones are left out.
MAX_BYTES_SETTING = "gitpatch.checkpointMaxBytes"
_DEFAULT_MAX_BYTES = 5 * 1024 * 1024
#: How many left-out entries a result names before it counts the rest.
_NAMED = 12


class CheckpointResult(BaseModel):
    """What a checkpoint did: the proposal (or session-branch commit) it made, if anything
    changed, the files it recorded, what it left out and why, and where the worktree is."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    recorded: bool
    message: str
    worktree: str
    proposal_id: str = ""
    version: str = ""
    branch: str = ""
    status: str = ""
    command: str = ""
    files: list[FileResult] = Field(default_factory=list)
    #: ``path (why)`` for each change not recorded: ignored, too large, a submodule's.
    left_out: list[str] = Field(default_factory=list)
    #: Set when this call made the worktree: where, and what it cost.
    made: str = ""


@dataclass(frozen=True)
class Scan:
    """A worktree's changes against its HEAD: the paths to record, and what is left out."""

    paths: tuple[str, ...]
    left_out: tuple[str, ...] = field(default=())
    #: The paths whose disk content is not in the index yet (the others were staged by a
    #: checkpoint a kill stopped half-way).
    unstaged: tuple[str, ...] = field(default=())


def scan(where: Path, limit: int) -> Scan:
    """What changed in the worktree at ``where`` (one ``git status``), split into what a
    checkpoint records and what it leaves out (``path (reason)``)."""
    out = workbench.git(
        where,
        [
            "status",
            "--porcelain=v2",
            "-z",
            "--untracked-files=all",
            "--ignored=matching",
            "--ignore-submodules=none",
            "--no-renames",
        ],
    )
    paths: list[str] = []
    left: list[str] = []
    unstaged: list[str] = []
    for entry in out.decode("utf-8", "surrogateescape").split("\0"):
        if not entry:
            continue
        kind = entry[0]
        if kind == "!":
            left.append(f"{entry[2:]} (ignored)")
        elif kind == "?":
            path = entry[2:]
            if path.endswith("/"):
                left.append(f"{path} (a repository of its own)")
            elif _sized(where, path, limit, paths, left):
                unstaged.append(path)
        elif kind in "1u":
            fields = entry.split(" ", 10 if kind == "u" else 8)
            path = fields[-1]
            if fields[2].startswith("S"):
                left.append(f"{path}/ (submodule contents)")
            elif _sized(where, path, limit, paths, left) and (kind == "u" or fields[1][1] != "."):
                unstaged.append(path)
    return Scan(tuple(paths), tuple(left), tuple(unstaged))


def _sized(where: Path, path: str, limit: int, paths: list[str], left: list[str]) -> bool:
    """Record ``path`` unless the file on disk is over ``limit`` bytes (then False)."""
    try:
        size = os.lstat(where / path).st_size
    except FileNotFoundError:
        size = 0  # deleted: recorded as a deletion
    if size > limit:
        left.append(f"{path} (over {limit} bytes: {size})")
        return False
    paths.append(path)
    return True


def max_bytes(ctx: Context) -> int:
    """The size limit: git config ``gitpatch.checkpointMaxBytes``, else 5 MiB."""
    text = ctx.store.config_get(MAX_BYTES_SETTING)
    try:
        return int(text) if text else _DEFAULT_MAX_BYTES
    except ValueError as exc:
        raise InvalidArguments(
            f"git config {MAX_BYTES_SETTING} is {text!r}, not a number of bytes",
            hint=f"Set it to a whole number: git config {MAX_BYTES_SETTING} 5242880.",
            details={"setting": MAX_BYTES_SETTING},
        ) from exc


def checkpoint(ctx: Context, command: str | None = None) -> CheckpointResult:
    """Record what changed in the session's worktree as one proposal (see the module).

    The worktree is made first when the session has none (the result says so)."""
    limit = check(ctx, command)
    bench = workbench.ensure(ctx)
    with workbench.locked(ctx.store, bench.session):
        return _checkpoint(ctx, bench, command or "", limit)


def check(ctx: Context, command: str | None) -> int:
    """Refuse a bad ``command`` or size setting before anything is made; the size limit."""
    if command is not None and ("\0" in command or len(command) > 4096):
        raise InvalidArguments(
            "command must be one line of text under 4096 characters, without NUL",
            hint="Pass the command as the shell ran it, e.g. --command 'ruff format .'.",
        )
    return max_bytes(ctx)


def _checkpoint(ctx: Context, bench: workbench.Bench, command: str, limit: int) -> CheckpointResult:
    where = bench.path
    if (where / ".git").is_dir():  # the person checked the session's branch out in theirs
        raise BranchCheckedOut(
            f"the session's branch is checked out in the main checkout {where}: what changed "
            "there is the person's own work, and a checkpoint would record it as the agent's",
            hint="Switch that checkout back to its own branch (`git switch -`), then retry: the "
            "session gets its own worktree again. Nothing was changed.",
            details={"worktree": str(where)},
        )
    # A git command the worktree's last user started may outlive it (a killed agent's
    # ``git add`` runs on): wait for it a little, as a land does, then refuse
    # (``concurrent_update``) rather than fail half-way with git's own "File exists".
    preflight.wait_for_index_lock(worktrees.linked_gitdir(where))
    if ctx.mode == "review":
        workbench.move_to(ctx, where)
    found = scan(where, limit)
    left = _named(found.left_out)
    head = workbench.head_of(ctx.store, where)
    if not found.paths or head is None:
        return _unchanged(bench, command, left, "that a checkpoint records: no proposal was made")
    if found.unstaged:
        _stage(where, found.unstaged)
    crashpoint("checkpoint.staged")
    tree = pygit2.Oid(hex=workbench.git(where, ["write-tree"]).decode().strip())
    if tree == ctx.store.tree_of(head):  # a stat-only change: the content is the same
        why = "the files git listed have the content they had: no proposal was made"
        return _unchanged(bench, command, left, why)
    pid = secrets.token_hex(6)
    commit = _commit(ctx, head, tree, pid, command, found.paths)
    blobs = {p: _blob_hex(ctx, commit, p) for p in found.paths}
    changed = [p for p in found.paths if blobs[p] != _blob_hex(ctx, head, p)]
    print_ = guards.fingerprint_of({p: (blobs[p] or ":").split(":")[0] or None for p in changed})
    refuse_rejected(ctx.store, print_, revision=False)
    _publish(ctx, where, pid, head, commit, print_, command)
    files = _files(ctx, head, commit, changed)
    return _result(ctx, bench, pid, commit, command, files, left)


def _unchanged(bench: workbench.Bench, command: str, left: list[str], why: str) -> CheckpointResult:
    """The result of a checkpoint that found nothing to record."""
    return CheckpointResult(
        recorded=False,
        message=f"Nothing changed in the session's worktree {bench.path} {why}."
        + _left_sentence(left),
        worktree=str(bench.path),
        command=command,
        left_out=left,
        made=bench.made,
    )


def _stage(where: Path, paths: Sequence[str]) -> None:
    """``git add -A`` of exactly ``paths`` in the worktree's own index (literal pathspecs)."""
    spec = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
    try:
        workbench.git(
            where,
            [
                "--literal-pathspecs",
                "add",
                "-A",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
            ],
            spec,
        )
    except gitbin.GitFailed as exc:
        raise RepositoryError(
            f"could not record the worktree's changes: {exc.stderr}",
            hint="Check that git can write the worktree's index, then retry the checkpoint.",
            details={"worktree": str(where)},
        ) from exc


def _blob_hex(ctx: Context, commit: pygit2.Oid, path: str) -> str | None:
    """``path``'s blob id and mode at ``commit`` (None when absent): a mode change counts."""
    found = ctx.store.entry(commit, path)
    return None if found is None else f"{found.oid}:{found.mode:o}"


def _commit(
    ctx: Context,
    head: pygit2.Oid,
    tree: pygit2.Oid,
    pid: str,
    command: str,
    changed: Sequence[str],
) -> pygit2.Oid:
    what = f"`{command}`" if command else "commands"
    names = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
    trailers = {
        "Gitpatch-Proposal": pid,
        "Gitpatch-Tool": "checkpoint",
        "Gitpatch-Session": ctx.session_label(),
    }
    if command:
        trailers["Gitpatch-Command"] = " ".join(command.split())
    message = f"Checkpoint: {names}\n\nWhat {what} changed in the session's worktree."
    return ctx.store.commit(tree, [head], message, trailers, author=ctx.agent_signature())


def _publish(
    ctx: Context,
    where: Path,
    pid: str,
    head: pygit2.Oid,
    commit: pygit2.Oid,
    print_: str,
    command: str,
) -> None:
    """The proposal ref (review) or the session branch (auto) and the note, in one ref
    transaction; then the worktree's HEAD (review: detached) names the new commit."""
    built = Built(commit, head, Changeset(()), print_, ())
    written = propose.note(ctx, built, pid, "checkpoint", False)
    if command:
        written["command"] = command
    review = ctx.mode == "review"
    ref = PROPOSAL_PREFIX + pid if review else ctx.branch
    step = Transition(
        refs=((ref, commit, None if review else head),),
        notes={commit: lambda _old: written},
        message=f"gitpatch: checkpoint {pid}",
    )
    publish(ctx, step)
    crashpoint("checkpoint.published")
    if review:
        workbench.git(where, ["update-ref", "--no-deref", "HEAD", str(commit), str(head)])


def _files(
    ctx: Context, head: pygit2.Oid, commit: pygit2.Oid, changed: Sequence[str]
) -> list[FileResult]:
    out = []
    for path in changed:
        before = ctx.store.entry(head, path) is not None
        after = ctx.store.entry(commit, path) is not None
        action: FileAction = "update" if before and after else ("add" if after else "delete")
        out.append(FileResult(path=path, action=action))
    return out


def _named(left: Sequence[str]) -> list[str]:
    """At most ``_NAMED`` left-out entries, then how many more."""
    if len(left) <= _NAMED:
        return list(left)
    return [*left[:_NAMED], f"... and {len(left) - _NAMED} more"]


def _left_sentence(left: Sequence[str]) -> str:
    return f" Not recorded: {', '.join(left)}." if left else ""


def _result(
    ctx: Context,
    bench: workbench.Bench,
    pid: str,
    commit: pygit2.Oid,
    command: str,
    files: list[FileResult],
    left: list[str],
) -> CheckpointResult:
    what = f" by `{command}`" if command else ""
    names = ", ".join(f"{f.path} ({f.action})" for f in files)
    if ctx.mode == "review":
        branch = PROPOSAL_PREFIX + pid
        told = (
            f"Checkpointed what changed{what} as proposal {pid} on {short(branch)} for "
            f"{short(ctx.target)}: {names}. A person reviews it like any proposal; if it is "
            "rejected, the worktree gets back exactly these files as they were."
        )
        status = "proposed"
    else:
        branch = ctx.branch
        told = (
            f"Checkpointed what changed{what} as commit {str(commit)[:12]} (proposal {pid}) "
            f"on session branch {short(branch)}: {names}."
        )
        status = "applied"
    return CheckpointResult(
        recorded=True,
        message=told + _left_sentence(left),
        worktree=str(bench.path),
        proposal_id=pid,
        version=str(commit),
        branch=branch,
        status=status,
        command=command,
        files=files,
        left_out=left,
        made=bench.made,
    )


def pending(ctx: Context) -> bool:
    """True when the session's existing worktree has changes a checkpoint would record."""
    where = workbench.existing(ctx)
    return where is not None and bool(scan(where, max_bytes(ctx)).paths)


def around_edit(ctx: Context, edit: Callable[[], ProposalResult]) -> ProposalResult:
    """Run an edit tool's ``edit`` so that it never builds on unrecorded changes silently.

    When the session has a worktree: it is brought up to date, what commands changed there is
    checkpointed first (the result says so), the edit runs, and the worktree then shows it;
    the result names the worktree. Without one (a session that only edits) this costs nothing
    but, in auto mode, the workbench lock (``workbench.MadeMeanwhile`` when another process
    made the worktree since the call began).
    """
    where = workbench.existing(ctx)
    if where is None and workbench.lazy(ctx):
        assert ctx.session is not None
        with workbench.locked(ctx.store, ctx.session):  # a worktree is not made mid-land
            if workbench.made_meanwhile(ctx) is not None:
                raise workbench.MadeMeanwhile(ctx.session)
            return edit()
    if where is None:
        return edit()
    assert ctx.session is not None
    with workbench.locked(ctx.store, ctx.session):
        if ctx.mode == "review":
            workbench.move_to(ctx, where)
        first = None
        if scan(where, max_bytes(ctx)).paths:
            first = _checkpoint(ctx, workbench.Bench(ctx.session, where), "", max_bytes(ctx))
        result = edit()
        if ctx.mode == "review":
            workbench.move_to(ctx, where)
    message = result.message
    if first is not None and first.recorded:
        message += (
            f" Your worktree had changes no proposal recorded, so they were checkpointed "
            f"first, and this edit builds on them: {first.message}"
        )
    return result.model_copy(update={"message": message, "worktree": str(where)})
