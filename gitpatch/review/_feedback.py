"""What flows back to the agent: a person's comments, and notices of what happened to its work.

A comment is kept in the proposal's note (``comments``: by, at, text, kind), so ``show`` and
``proposals`` carry it and it outlives every process. A *notice* is one line telling a session
what changed since its previous call: a verdict (approved, rejected with the reason, needs
revision), a re-base (its version changed), a new comment. What a session has been told is kept
in the note as well (``told``), so a restarted agent is not told twice and is told what it
missed. Each step is one notes transaction through the one publisher.

Another session's open work on the same files is not this session's proposal: what a session
was told of such overlaps is kept beside its live-session lock (``gitpatch/sessions/NAME.told``
under the git dir), so a restarted server does not tell it again either.

A person's save that a land set aside (``checkout.saves``: it reached the file while the change
landed and could not be merged with it) is told to the call that set it aside, in or out of a
session (``set_aside``): the agent then knows the file it changed differs from what the person
last saved, and the person where their save is.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pygit2

from gitpatch.errors import ConcurrentUpdate, InvalidArguments, ProposalClosed, ProposalNotFound
from gitpatch.review import _hunks as hunks
from gitpatch.review._lookup import BOOKKEEPING_TOOLS, PROPOSAL_ID, clean_id, note_for_id
from gitpatch.safety.atomic import write_atomic
from gitpatch.safety.owners import common_dir
from gitpatch.store import NOTES_REF
from gitpatch.workspace import NoteChange, Transition, publish
from gitpatch.workspace.results import now_iso
from gitpatch.workspace.sessions import PROPOSAL_PREFIX

if TYPE_CHECKING:
    from gitpatch.workspace import Context

__all__ = [
    "COMMENT_KINDS",
    "comment",
    "new_overlaps",
    "notices",
    "proposal_commit",
    "revisable",
    "set_aside",
]

COMMENT_KINDS = ("comment", "request_changes")


def proposal_commit(ctx: Context, pid: str) -> tuple[pygit2.Oid, dict[str, Any]] | None:
    """The commit and note of proposal ``pid``, open (its ref) or closed (its note)."""
    tip = ctx.store.ref_target(PROPOSAL_PREFIX + pid)
    if tip is not None:
        return tip, ctx.store.read_note(tip) or {}
    return note_for_id(ctx.store, pid)


def revisable(ctx: Context, pid: str) -> tuple[str, pygit2.Oid]:
    """(id, commit) of the proposal a new one revises; ``invalid_arguments`` when unknown."""
    key = clean_id(pid) if isinstance(pid, str) and pid.strip() else ""
    found = proposal_commit(ctx, key) if PROPOSAL_ID.fullmatch(key) else None
    if found is None:
        raise InvalidArguments(
            f"revises={pid!r} names no proposal of this repository",
            hint="Pass the 12-character id of the proposal you revise (see list_proposals), "
            "or leave revises out.",
            details={"revises": pid},
        )
    return key, found[0]


def comment(
    ctx: Context, pid: str, by: str, text: str, kind: str = "comment", at: str | None = None
) -> dict[str, Any]:
    """Add a person's comment to proposal ``pid`` (open or closed); returns the comment.
    ``at``: ``PATH:LINE`` of the proposal's version, for a line comment (``hunks.line_at``)."""
    if kind not in COMMENT_KINDS:
        raise InvalidArguments(
            f"unknown comment kind {kind!r}", hint="Use comment or request_changes."
        )
    if not isinstance(text, str) or not text.strip():
        raise InvalidArguments("the comment is empty", hint="Say what should change.")
    key = clean_id(pid)
    found = proposal_commit(ctx, key) if PROPOSAL_ID.fullmatch(key) else None
    if found is None:
        raise ProposalNotFound(
            f"no proposal named {key!r}",
            hint="Pass a 12-character proposal id (see `gitpatch proposals --all`).",
            details={"id": key},
        )
    note = found[1]
    if kind == "request_changes" and note.get("status") == "rejected":
        raise ProposalClosed(
            f"proposal {key} is already rejected (by {note.get('rejected_by') or 'a person'}"
            f"{': ' + str(note['reason']) if note.get('reason') else ''}); the agent was told",
            hint="Add it as a plain comment (kind='comment'): a note the agent reads for "
            f"its revision (revises='{key}').",
            details={"id": key, "status": "rejected"},
        )
    entry = {"by": by, "at": now_iso(), "text": text.strip(), "kind": kind}
    if at is not None:
        entry |= hunks.line_at(ctx.store, found[0], at, key)

    def change(old: dict[str, Any] | None) -> dict[str, Any]:
        note = dict(old or {"id": key})
        note["comments"] = [*(note.get("comments") or []), entry]
        return note

    publish(ctx, Transition((), {found[0]: change}, f"gitpatch: comment on {key}"))
    return entry


def _state(note: Mapping[str, Any]) -> dict[str, Any]:
    """What a session is told about one proposal: its status, version and comment count."""
    return {
        "status": str(note.get("status") or ""),
        "rebased_from": str(note.get("rebased_from") or ""),
        "comments": len(note.get("comments") or []),
        **hunks.told_state(note),
    }


def _lines(
    pid: str, commit: pygit2.Oid, note: Mapping[str, Any], told: Mapping[str, Any]
) -> list[tuple[int, str]]:
    """The notice lines for one proposal whose state moved past what the session was told,
    each with its rank: verdicts first, then re-bases, then comments."""
    now = _state(note)
    out: list[tuple[int, str]] = []
    status = now["status"]
    if status != told.get("status", "proposed") and status not in ("proposed", "applied"):
        by, at = note.get("decided_by") or note.get(f"{status}_by"), note.get(f"{status}_at")
        by = by or note.get("approved_by") or note.get("rejected_by") or "a person"
        at = at or note.get("decided_at") or ""
        words = {"needs_revision": "needs revision", "checks_failed": "failed the checks"}
        line = f"Proposal {pid} {words.get(status, f'was {status}')} by {by}"
        if note.get("redone_as") and told.get("status") == "undone":  # its undo was undone
            by, at = note.get("redone_by") or by, note.get("redone_at") or at
            line = f"Proposal {pid} is back ({status}): its undo was undone by {by}"
        line += f" at {at}" if at else ""
        if note.get("reason"):
            line += f": {note['reason']}"
        if status in ("rejected", "needs_revision"):
            line += f". Submit a revision with revises='{pid}'."
        if status == "checks_failed":
            line += ". Nothing landed; fix it with a new proposal on top, then ask again."
        out.append((0, line if line.endswith(".") else line + "."))
    if now["rebased_from"] and now["rebased_from"] != told.get("rebased_from", ""):
        after = note.get("rebased_after") or "a rejected proposal"
        why = str(note.get("rebased_why") or f"after {after} was rejected")
        out.append(
            (
                1,
                f"Proposal {pid} was re-based {why}; its version is now "
                f"{commit} (pass that as expected_version).",
            )
        )
    comments = note.get("comments") or []
    for c in comments[int(told.get("comments", 0)) :]:
        verb = "requested changes on" if c.get("kind") == "request_changes" else "commented on"
        where = ""
        if c.get("path"):
            where = f", {c.get('path')} line {c.get('line')} ({c.get('line_text')!r}),"
        out.append(
            (2, f"{c.get('by')} {verb} proposal {pid}{where} at {c.get('at')}: {c.get('text')}")
        )
    return out + hunks.notice_lines(pid, commit, note, told)


def _told(state: dict[str, Any]) -> NoteChange:
    return lambda old: {**(old or {}), "told": state}


def notices(ctx: Context, since: pygit2.Oid | None = None) -> tuple[list[str], pygit2.Oid | None]:
    """(one line per change to the session's proposals since it was last told, the notes
    tip they were read at); they are marked told (one notes transaction; a lost race leaves
    them to be told next time). ``since``: the tip of the previous call, so only the notes
    changed since are read (None: all of them)."""
    session = ctx.session
    store = ctx.store
    tip = store.ref_target(NOTES_REF)
    if session is None or (since is not None and since == tip):
        return [], tip
    lines: list[tuple[int, str, str]] = []
    marks: dict[pygit2.Oid, NoteChange] = {}
    for commit, note in _changed_notes(ctx, since, tip):
        if note.get("session") != session or note.get("tool") in BOOKKEEPING_TOOLS:
            continue
        told = note.get("told") if isinstance(note.get("told"), dict) else {}
        found = _lines(str(note.get("id") or ""), commit, note, told or {})
        if found:
            created = str(note.get("created_at") or "")
            lines.extend((rank, created, line) for rank, line in found)
            marks[commit] = _told(_state(note))
    if marks:
        # a person acting meanwhile loses us the race: those lines are told again, with the news
        with contextlib.suppress(ConcurrentUpdate):
            publish(ctx, Transition((), marks, f"gitpatch: told session {session}"))
    # the tip read first, not the one after the marks: a note a person changed in between
    # is then read again next time (the marked ones just say there is nothing new)
    return [line for _rank, _at, line in sorted(lines)], tip


def _changed_notes(
    ctx: Context, since: pygit2.Oid | None, tip: pygit2.Oid | None
) -> Iterator[tuple[pygit2.Oid, dict[str, Any]]]:
    """Every note (``since`` None), or those changed between two notes commits."""
    store = ctx.store
    if since is None or tip is None or not store.has_commit(since):
        yield from store.iter_notes()
        return
    for path in store.changed_paths(since, tip):
        name = path.replace("/", "")
        if len(name) != 40:
            continue
        try:
            commit = pygit2.Oid(hex=name)
        except ValueError:
            continue
        note = store.read_note(commit)
        if note is not None:
            yield commit, note


@functools.lru_cache(maxsize=64)
def _told_path(git_dir: str, session: str) -> Path:
    """Where session ``session`` keeps the overlaps it was told of (computed once)."""
    return common_dir(git_dir) / "gitpatch" / "sessions" / f"{session}.told"


def set_aside(saved: Sequence[tuple[str, Path]]) -> list[str]:
    """One line per person's save a land (or the recovery of a killed one) set aside in
    ``.git/gitpatch/saves/``: ``saved`` holds (path, file), path "" when not known."""
    lines = []
    for path, file in saved:
        which = path or "a file (its path is not known)"
        lines.append(
            f"A person's save of {which} reached it while gitpatch's change landed and could "
            f"not be merged with what is there now: the save was kept as {file}, and "
            f"{path or 'the file'} was left as it is (`gitpatch saves` lists it, with how to "
            "take it back)."
        )
    return lines


def new_overlaps(ctx: Context, current: Sequence[str]) -> list[str]:
    """Of ``current`` (the session's overlaps with other sessions' work now), those it was not
    told yet; all of ``current`` is then remembered as told, and what is no longer current is
    forgotten (told again if it comes back). Without a session, all of ``current``."""
    if ctx.session is None:
        return list(current)
    path = _told_path(str(ctx.store.git_dir), ctx.session)
    if not current:  # the common case: one syscall, nothing read
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return []
    try:
        told = set(json.loads(path.read_bytes()))
    except (OSError, ValueError, TypeError):
        told = set()  # never told, or unreadable: telling again is the safe side
    fresh = [line for line in current if line not in told]
    if fresh or told != set(current):
        path.parent.mkdir(parents=True, exist_ok=True)
        # not fsynced: a power loss only makes the session hear a warning again
        write_atomic(path, json.dumps(sorted(current)).encode(), durable=False)
    return fresh
