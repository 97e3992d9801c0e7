"""Undo: which gitpatch commit a person can still revert, the revert itself, and its notes.

An undo is a new commit (``Gitpatch-Tool: undo``, ``Gitpatch-Reverts: <commit>``): history is
never rewritten. That commit is itself undoable, by its own id (``ProposalResult.version``,
what ``gitpatch log`` lists; at least 7 hex digits): undoing an undo puts back exactly what it
took away (a checkpoint's recorded files, an edit, an approval merge), and so on down a chain
of undos, each step a new commit. A plain ``undo()`` (no id) walks back through the branch's
gitpatch commits and never picks an undo commit, so two ``undo()`` calls revert the last two
changes rather than toggling one.

A commit's note says whether its change is in effect: ``undone`` (with ``undone_as``, the undo
commit, and ``undone_from``, the status it had) once reverted, its old status back (with
``redone_as``) once that undo is undone. Along a chain of undos the commits alternate: an undo
in effect means its target is not, and the other way round.

What it does not do: publish (``lifecycle`` hands the step to the one publisher) or say which
files changed (``lifecycle`` builds the result).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pygit2

from gitpatch.errors import ProposalClosed, ProposalNotFound
from gitpatch.review._lookup import brought, note_for_id, walk
from gitpatch.store import RefUpdate, Store
from gitpatch.workspace import NoteChange, Transition
from gitpatch.workspace.results import now_iso
from gitpatch.workspace.sessions import short

if TYPE_CHECKING:
    from gitpatch.workspace import Context

__all__ = ["Undo", "plan"]

#: An undo commit named by its own id: 7 to 40 hex digits (a proposal id is tried first).
_COMMIT_ID = re.compile(r"[0-9a-f]{7,40}")
_UNDO = "undo"


@dataclass(frozen=True)
class Undo:
    """One undo, ready to publish: the commit it reverts, the new commit, the step, and what
    the result says (``words``: what was undone)."""

    pid: str
    victim: pygit2.Oid
    revert: pygit2.Oid
    head: pygit2.Oid
    step: Transition
    words: str


def plan(ctx: Context, wanted: str | None) -> Undo:
    """The undo of the newest undoable gitpatch commit on ``ctx.branch`` (of proposal, or
    undo commit, ``wanted``): the revert commit is written, nothing is published yet."""
    store = ctx.store
    head = store.ref_target(ctx.branch)
    victim, pid = _last_undoable(store, ctx.branch, head, wanted)
    assert head is not None  # _last_undoable refuses an empty branch
    info = store.info(victim)
    target = _reverts(store, victim)
    change = victim if target is not None else _as_proposed(store, victim, pid)
    message = f'Undo "{info.summary}"\n\nThis reverts commit {victim}.'
    trailers = {"Gitpatch-Proposal": pid, "Gitpatch-Tool": _UNDO, "Gitpatch-Reverts": str(victim)}
    revert = store.revert(change, head, message, trailers)
    notes = _notes(ctx, victim, revert, pid)
    refs: tuple[RefUpdate, ...] = ((ctx.branch, revert, head),)
    step = Transition(refs, notes, f"gitpatch: undo {pid}", (ctx.branch, head, revert))
    words = f"{_words(pid)} ({info.summary})"
    if target is not None:
        words = f"the undo {str(victim)[:12]} of {_words(pid)}, so its change is back"
    return Undo(pid, victim, revert, head, step, words)


def _words(pid: str) -> str:
    """What an undo reverted: a proposal, or the approval (merge) of a session branch."""
    if pid.startswith("session/"):
        return f"the approval of session {pid.removeprefix('session/')}"
    return f"proposal {pid}"


def _reverts(store: Store, commit: pygit2.Oid) -> pygit2.Oid | None:
    """The commit an undo commit reverts (None: ``commit`` is no undo, or names none)."""
    trailers = store.info(commit).trailers
    if trailers.get("Gitpatch-Tool") != _UNDO:
        return None
    try:
        return pygit2.Oid(hex=trailers.get("Gitpatch-Reverts", ""))
    except ValueError:
        return None


def _as_proposed(store: Store, victim: pygit2.Oid, pid: str) -> pygit2.Oid:
    """The commit gitpatch made for proposal ``pid``: ``victim`` itself, or, when a person
    amended it (``git commit --amend`` keeps the trailer, not the note), the original, so
    undo reverts only what the proposal changed and never the person's amendments."""
    if store.read_note(victim) is not None:
        return victim
    found = note_for_id(store, pid)
    return victim if found is None else found[0]


def _notes(
    ctx: Context, victim: pygit2.Oid, revert: pygit2.Oid, pid: str
) -> dict[pygit2.Oid, NoteChange]:
    """The victim and what it stands for out of effect, down the chain of undos it belongs
    to the other way each step; a bookkeeping note on the revert."""
    at = now_iso()
    store = ctx.store
    notes: dict[pygit2.Oid, NoteChange] = {}
    commit: pygit2.Oid | None = victim
    undoer, undone = revert, True
    while commit is not None and commit not in notes:
        for one in (commit, *_brought(store, commit)):
            if undone:
                notes[one] = _out_of_effect(pid, at, ctx.author, undoer)
            else:
                notes[one] = _back_in_effect(pid, at, ctx.author, revert)
        undoer = commit
        commit, undone = _reverts(store, commit), not undone
    # An undo on a protected branch is a person's act (agents land on sessions): its note says
    # approved, so the commit reads as a person's decision, like an approval merge.
    verdict: dict[str, Any] = {"status": "applied"}
    if ctx.branch in ctx.protected:
        verdict = {"status": "approved", "approved_by": ctx.author, "approved_at": at}
    bookkeeping = {"id": pid, "tool": _UNDO, "reverts": str(victim), "target": ctx.target}
    bookkeeping |= {"branch": ctx.branch, "author": ctx.author, "created_at": at, **verdict}
    notes[revert] = lambda _old: dict(bookkeeping)
    return notes


def _brought(store: Store, commit: pygit2.Oid) -> tuple[pygit2.Oid, ...]:
    """What an approval merge brought (its proposals' commits); empty for any other commit."""
    parents = store.info(commit).parents
    return tuple(brought(store, parents[1], parents[0])[0]) if len(parents) > 1 else ()


def _out_of_effect(pid: str, at: str, by: str, undo: pygit2.Oid) -> NoteChange:
    """``undone`` by the undo commit ``undo``, remembering the status it had."""

    def change(old: dict[str, Any] | None) -> dict[str, Any]:
        note = {k: v for k, v in (old or {"id": pid}).items() if not k.startswith("redone_")}
        was = note.get("status")
        if was and was != "undone":
            note["undone_from"] = was
        stamp = {"status": "undone", "undone_at": at, "undone_by": by, "undone_as": str(undo)}
        return {**note, **stamp}

    return change


def _back_in_effect(pid: str, at: str, by: str, redo: pygit2.Oid) -> NoteChange:
    """The status it had before it was undone, and which commit put it back."""

    def change(old: dict[str, Any] | None) -> dict[str, Any]:
        note = {k: v for k, v in (old or {"id": pid}).items() if not k.startswith("undone_")}
        was = (old or {}).get("undone_from")
        status = was or ("approved" if note.get("approved_by") else "applied")
        return {**note, "status": status, "redone_at": at, "redone_by": by, "redone_as": str(redo)}

    return change


def _last_undoable(
    store: Store, branch: str, head: pygit2.Oid | None, wanted: str | None = None
) -> tuple[pygit2.Oid, str]:
    """The newest gitpatch commit in ``branch``'s history that a person can still undo: of
    proposal ``wanted``, or the undo commit ``wanted`` names, when given.

    Without ``wanted``, undo commits are skipped; so are commits out of effect (reverted by
    an undo in effect, or noted ``undone``, including what an undone approval merge brought)
    and a person's own commits.
    """
    as_commit = wanted if wanted is not None and _COMMIT_ID.fullmatch(wanted) else None
    for commit, pid, live in _gitpatch_commits(store, head):
        is_undo = dict(commit.message_trailers).get("Gitpatch-Tool") == _UNDO
        if wanted is None:
            if live and not is_undo:
                return commit.id, pid
        elif not is_undo and pid.removeprefix("session/") == wanted:
            if live:
                return commit.id, pid
            raise ProposalClosed(
                f"proposal {wanted} is already undone on {short(branch)}",
                hint="Undo its undo (gitpatch undo UNDO-COMMIT, the id its undo printed) to put "
                "it back; see log() for what is left to undo.",
                details={"id": wanted, "branch": branch},
            )
        elif is_undo and as_commit and str(commit.id).startswith(as_commit):
            if live:
                return commit.id, pid
            raise ProposalClosed(
                f"the undo {str(commit.id)[:12]} is already undone on {short(branch)}",
                hint="Undo the commit that undid it instead; see log() for the undo commits.",
                details={"id": wanted, "branch": branch},
            )
    what = f"no commit of proposal (or undo) {wanted}" if wanted else "no gitpatch commit"
    raise ProposalNotFound(
        f"nothing to undo: {what} on {short(branch)} is left to revert",
        hint="Only changes gitpatch made can be undone, and an undo by its own commit id; see "
        "log() for what it did and the ids to pass.",
        details={"branch": branch, **({"id": wanted} if wanted else {})},
    )


def _gitpatch_commits(
    store: Store, head: pygit2.Oid | None
) -> Iterator[tuple[pygit2.Commit, str, bool]]:
    """Each gitpatch commit from ``head`` back, newest first: (commit, proposal id, in
    effect). An undo commit in effect takes its target out of effect."""
    reverted: set[str] = set()
    for commit in walk(store, head, first_parent=False) if head is not None else ():
        trailers = dict(commit.message_trailers)
        pid = trailers.get("Gitpatch-Proposal")
        if not pid:
            continue
        live = str(commit.id) not in reverted and (
            (store.read_note(commit.id) or {}).get("status") != "undone"
        )
        if live and trailers.get("Gitpatch-Tool") == _UNDO:
            reverted.add(trailers.get("Gitpatch-Reverts", ""))
        yield commit, pid, live
