"""The review lifecycle: approve, reject, list, show, undo and log what agents proposed.

These functions take the ``Workspace`` as first argument; ``Workspace.approve`` and friends
delegate here. They are for people: agents never get an approve or reject tool.

Every state change is one atomic reference transaction: the target branch, the proposal (or
session) branch, ``refs/gitpatch/rejected/<fingerprint>`` and ``refs/notes/gitpatch`` move
together or not at all, so a refused approval (merge conflict, local changes on disk, a lost
race) leaves no ref, note, file or index entry changed. When the branch that moves is checked
out, the working tree follows through ``WorkingTree.land`` (journaled, crash-safe), and files a
person changed locally are never overwritten.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import pygit2

from gitpatch.errors import (
    ConcurrentUpdate,
    InvalidArguments,
    MergeConflict,
    ProposalClosed,
    ProposalNotFound,
    RepositoryError,
)
from gitpatch.model import FileChange
from gitpatch.results import (
    FileAction,
    FileResult,
    LogEntry,
    ProposalDetail,
    ProposalInfo,
    ProposalResult,
)
from gitpatch.store import NOTES_REF, RefUpdate, Store
from gitpatch.store._errors import git_errors
from gitpatch.store.notes import decode, encode
from gitpatch.store.refs import backoff
from gitpatch.workspace import PROPOSAL_PREFIX, REJECTED_PREFIX, SESSION_PREFIX, session_target

if TYPE_CHECKING:
    from gitpatch.workspace import Workspace

__all__ = ["approve", "log", "proposals", "reject", "show", "undo"]

T = TypeVar("T")
NoteChange = Callable[[dict[str, Any] | None], dict[str, Any]]

_PROPOSAL_ID = re.compile(r"^[0-9a-f]{12}$")
#: Lost compare-and-swaps (target, notes) absorbed before ``concurrent_update``.
_ATTEMPTS = 20
#: How many closed proposals ``proposals()`` lists, newest first.
RECENT_CLOSED = 50
#: How far back ``undo`` and ``log`` look for gitpatch commits.
_HISTORY_DEPTH = 10_000
#: Commits whose notes are bookkeeping (an approval merge, an undo), not proposals to list.
_BOOKKEEPING_TOOLS = frozenset({"approve", "undo"})


@dataclass(frozen=True)
class _Subject:
    """An open proposal or session: its branch, tip, target, base and the commits it brings."""

    id: str
    ref: str
    tip: pygit2.Oid
    target: str
    base: pygit2.Oid | None
    commits: tuple[pygit2.Oid, ...]
    session: bool
    note: Mapping[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class _Transition:
    """One atomic step: refs to move, notes to change, and the checkout that must follow.

    ``checkout`` is (branch, old, new): if that branch is checked out, the working tree moves
    from ``old`` to ``new``; a path whose disk content is neither its content at ``old``, at
    ``new`` nor at one of ``keep`` is a local change and refuses the whole step.
    """

    refs: tuple[RefUpdate, ...]
    notes: Mapping[pygit2.Oid, NoteChange]
    message: str
    checkout: tuple[str, pygit2.Oid | None, pygit2.Oid] | None = None
    keep: tuple[pygit2.Oid, ...] = ()


# -- the public functions ---------------------------------------------------------------------


def approve(ws: Workspace, id: str, by: str) -> ProposalResult:
    """Merge a proposal (or a session, by name) into its target and note who approved it.

    Fast-forwards when the target has not moved, else makes a 3-way merge commit; a conflict,
    or local changes on disk to files the merge would write, refuse with nothing changed.
    The proposal ref is deleted; a session branch instead moves to the merged commit, so an
    agent working on it continues from what was approved.
    """
    who = _person(by, "approve")
    return _retry(lambda: _approve_once(ws, id, who))


def reject(ws: Workspace, id: str, by: str, reason: str) -> ProposalResult:
    """Reject a proposal: delete its ref, note who and why, remember its fingerprint.

    ``refs/gitpatch/rejected/<fingerprint>`` then keeps the commit reachable and makes
    ``propose`` refuse the identical change unless it is marked as a revision.
    """
    who = _person(by, "reject")
    if not isinstance(reason, str):
        raise InvalidArguments("reason must be a string", hint="Say why the change is rejected.")
    return _retry(lambda: _reject_once(ws, id, who, reason.strip()))


def proposals(ws: Workspace) -> list[ProposalInfo]:
    """Open proposals and sessions first, then up to ``RECENT_CLOSED`` closed ones, newest first."""
    now = datetime.now(UTC)
    out = [_info(ws.store, _find(ws, pid), now) for pid in _open_ids(ws.store)]
    out.extend(_session_infos(ws, now))
    seen = {info.id for info in out}
    closed: list[ProposalInfo] = []
    for commit, note in ws.store.iter_notes():
        pid = str(note.get("id", ""))
        if not pid or pid in seen or note.get("tool") in _BOOKKEEPING_TOOLS:
            continue
        if note.get("status") == "proposed":
            continue  # its ref is gone without a verdict: deleted by hand, nothing to review
        closed.append(_closed_info(ws.store, commit, note, now))
    closed.sort(key=lambda info: info.created_at, reverse=True)
    return out + closed[:RECENT_CLOSED]


def show(ws: Workspace, id: str) -> ProposalDetail:
    """One proposal (open or closed) or session: its info, unified diff and stats."""
    now = datetime.now(UTC)
    try:
        subject = _find(ws, id)
    except ProposalClosed:
        found = _note_for_id(ws.store, _clean_id(id))
        assert found is not None  # ProposalClosed is raised only when the note exists
        commit, note = found
        info = _closed_info(ws.store, commit, note, now)
        base = _oid(note.get("base")) or _first_parent(ws.store, commit)
        text, stats = ws.store.diff(base, commit)
        return ProposalDetail(info=info, diff=text, stats=stats)
    text, stats = ws.store.diff(subject.base, subject.tip)
    return ProposalDetail(info=_info(ws.store, subject, now), diff=text, stats=stats)


def undo(ws: Workspace) -> ProposalResult:
    """Revert the last gitpatch commit on the workspace's branch with a new commit.

    History is never rewritten. Commits already undone, undo commits themselves and commits
    recording a person's uncommitted changes are skipped. The working tree follows when the
    branch is checked out; local changes to the files it would write refuse the undo.
    """
    return _retry(lambda: _undo_once(ws))


def log(ws: Workspace, limit: int = 50) -> list[LogEntry]:
    """The gitpatch commits reachable from the workspace's branch, newest first."""
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise InvalidArguments(
            f"limit must be a positive integer, got {limit!r}", hint="Pass limit=50, say."
        )
    head = ws.store.ref_target(ws.branch)
    out: list[LogEntry] = []
    if head is None:
        return out
    for count, commit in enumerate(_walk(ws.store, head, first_parent=False)):
        if count >= _HISTORY_DEPTH or len(out) >= limit:
            break
        trailers = dict(commit.message_trailers)
        pid = trailers.get("Gitpatch-Proposal") or trailers.get("Gitpatch-Record")
        if not pid:
            continue
        tool = trailers.get("Gitpatch-Tool") or ("record" if "Gitpatch-Record" in trailers else "")
        when = datetime.fromtimestamp(commit.commit_time, UTC)
        out.append(
            LogEntry(
                commit=str(commit.id),
                proposal_id=pid,
                tool=tool,
                summary=commit.message.split("\n", 1)[0],
                time=when.strftime("%Y-%m-%dT%H:%M:%SZ"),
            )
        )
    return out


# -- approve, reject, undo: one attempt each ---------------------------------------------------


def _approve_once(ws: Workspace, id: str, by: str) -> ProposalResult:
    sub = _find(ws, id)
    _require_pending(ws.store, sub, "approve")
    store = ws.store
    head = store.ref_target(sub.target)
    new, how = _merged(store, sub, head, by)
    stamp = {
        "status": "approved",
        "approved_by": by,
        "approved_at": _now_iso(),
        "merged_as": str(new),
    }
    notes: dict[pygit2.Oid, NoteChange] = {c: _stamped(sub, stamp) for c in sub.commits}
    if new != sub.tip and new != head:
        notes[new] = _stamped(sub, {**stamp, "tool": "approve"}, fresh=True)
    refs: list[RefUpdate] = [] if new == head else [(sub.target, new, head)]
    refs.append((sub.ref, new if sub.session else None, sub.tip))
    on_session = sub.session and store.head_branch() == sub.ref
    checkout = (sub.ref, sub.tip, new) if on_session else (sub.target, head, new)
    keep = () if sub.session or sub.base is None else (sub.base,)
    _run(ws, _Transition(tuple(refs), notes, f"gitpatch: approve {sub.id}", checkout, keep))
    what = f"session {sub.ref}" if sub.session else f"proposal {sub.id}"
    return _result(
        ws,
        sub,
        version=new,
        branch=sub.target,
        status="approved",
        message=f"Approved {what} by {by}: {how} {_short(sub.target)} to {str(new)[:12]}.",
    )


def _reject_once(ws: Workspace, id: str, by: str, reason: str) -> ProposalResult:
    sub = _find(ws, id)
    if sub.session:
        raise InvalidArguments(
            f"{sub.ref} is a session branch; only single proposals can be rejected",
            hint="Use undo() to revert the session's last commit, or delete the session branch "
            "with git once you have switched away from it.",
            details={"branch": sub.ref},
        )
    store = ws.store
    print_ = str(sub.note.get("fingerprint") or "") or _fingerprint(store, sub.base, sub.tip)
    remembered = REJECTED_PREFIX + print_
    stamp = {
        "status": "rejected",
        "rejected_by": by,
        "rejected_at": _now_iso(),
        "reason": reason,
        "fingerprint": print_,
    }
    refs: tuple[RefUpdate, ...] = (
        (sub.ref, None, sub.tip),
        (remembered, sub.tip, store.ref_target(remembered)),
    )
    _run(ws, _Transition(refs, {sub.tip: _stamped(sub, stamp)}, f"gitpatch: reject {sub.id}"))
    because = f" ({reason})" if reason else ""
    return _result(
        ws,
        sub,
        version=sub.tip,
        branch=sub.ref,
        status="rejected",
        message=f"Rejected proposal {sub.id} by {by}{because}; {sub.ref} is deleted and "
        f"{_short(sub.target)} is unchanged.",
    )


def _undo_once(ws: Workspace) -> ProposalResult:
    store = ws.store
    head = store.ref_target(ws.branch)
    victim, pid = _last_undoable(store, ws.branch, head)
    assert head is not None  # _last_undoable refuses an empty branch
    tool = store.trailers(victim).get("Gitpatch-Tool", "")
    summary = store.info(victim).summary
    revert = store.revert(
        victim,
        head,
        f'Undo "{summary}"\n\nThis reverts commit {victim}.',
        {"Gitpatch-Proposal": pid, "Gitpatch-Tool": "undo", "Gitpatch-Reverts": str(victim)},
    )
    at = _now_iso()
    stamp = {"status": "undone", "undone_at": at, "undone_by": ws.author, "undone_as": str(revert)}
    bookkeeping = {
        "id": pid,
        "status": "applied",
        "tool": "undo",
        "reverts": str(victim),
        "target": ws.target,
        "branch": ws.branch,
        "author": ws.author,
        "created_at": at,
    }
    notes: dict[pygit2.Oid, NoteChange] = {
        victim: lambda old: {**(old or {"id": pid, "tool": tool}), **stamp},
        revert: lambda _old: dict(bookkeeping),
    }
    refs: tuple[RefUpdate, ...] = ((ws.branch, revert, head),)
    _run(ws, _Transition(refs, notes, f"gitpatch: undo {pid}", (ws.branch, head, revert)))
    files = _files(store, head, revert)
    return ProposalResult(
        proposal_id=pid,
        version=str(revert),
        branch=ws.branch,
        target=ws.target,
        mode=ws.mode,
        status="undone",
        base=str(head),
        files=files,
        message=f"Undid proposal {pid} ({summary}) with a new commit {str(revert)[:12]} on "
        f"{_short(ws.branch)}; history is kept.",
    )


def _last_undoable(store: Store, branch: str, head: pygit2.Oid | None) -> tuple[pygit2.Oid, str]:
    """The newest commit on ``branch``'s first-parent line that a person can still undo."""
    reverted: set[str] = set()
    if head is not None:
        for count, commit in enumerate(_walk(store, head, first_parent=True)):
            if count >= _HISTORY_DEPTH:
                break
            trailers = dict(commit.message_trailers)
            if trailers.get("Gitpatch-Tool") == "undo":
                reverted.add(trailers.get("Gitpatch-Reverts", ""))
                continue
            pid = trailers.get("Gitpatch-Proposal")
            if not pid or str(commit.id) in reverted:
                continue
            note = store.read_note(commit.id) or {}
            if note.get("status") != "undone":
                return commit.id, pid
    raise ProposalNotFound(
        f"nothing to undo: no gitpatch commit on {_short(branch)} is left to revert",
        hint="Only changes gitpatch made can be undone; see log() for what it did.",
        details={"branch": branch},
    )


# -- finding proposals -------------------------------------------------------------------------


def _find(ws: Workspace, id: str) -> _Subject:
    """The open proposal or session ``id`` names; ``ProposalClosed`` / ``ProposalNotFound``."""
    key = _clean_id(id)
    store = ws.store
    if _PROPOSAL_ID.fullmatch(key):
        ref = PROPOSAL_PREFIX + key
        tip = store.ref_target(ref)
        if tip is not None:
            return _proposal_subject(ws, key, ref, tip)
        found = _note_for_id(store, key)
        if found is not None:
            raise _closed(key, found[1])
    name = key.removeprefix("session/")
    ref = SESSION_PREFIX + name
    if name and "/" not in name and pygit2.reference_is_valid_name(ref):
        tip = store.ref_target(ref)
        if tip is not None:
            return _session_subject(ws, name, ref, tip)
    open_ids = _open_ids(store)
    listed = ", ".join(open_ids[:10]) if open_ids else "none"
    raise ProposalNotFound(
        f"no open proposal or session named {key!r}",
        hint=f"Open proposals: {listed}. Pass a 12-character proposal id or a session name "
        "(see proposals()).",
        details={"id": key},
    )


def _proposal_subject(ws: Workspace, key: str, ref: str, tip: pygit2.Oid) -> _Subject:
    note = ws.store.read_note(tip) or {}
    base = _oid(note.get("base")) if "base" in note else _first_parent(ws.store, tip)
    target = str(note.get("target") or ws.target)
    return _Subject(key, ref, tip, target, base, (tip,), session=False, note=note)


def _session_subject(ws: Workspace, name: str, ref: str, tip: pygit2.Oid) -> _Subject:
    store = ws.store
    target = session_target(store, name) or (ws.target if ws.session == name else None)
    if target is None:
        target = next((p for p in sorted(ws.protected) if store.ref_target(p)), None)
    if target is None:
        raise RepositoryError(
            f"cannot tell which branch session {name!r} was started from",
            hint=f"Set git config gitpatch-session.{name}.target to the branch (full ref).",
            details={"session": name},
        )
    head = store.ref_target(target)
    base: pygit2.Oid | None = None
    commits: list[pygit2.Oid] = []
    if head is not None:
        with git_errors(f"find where {ref} left {target}"):
            base = store.repo.merge_base(head, tip)
    for count, commit in enumerate(_walk(store, tip, first_parent=False, hide=head)):
        if count >= _HISTORY_DEPTH:
            break
        if "Gitpatch-Proposal" in dict(commit.message_trailers):
            commits.append(commit.id)
    return _Subject(name, ref, tip, target, base, tuple(commits), session=True)


def _require_pending(store: Store, sub: _Subject, verb: str) -> None:
    head = store.ref_target(sub.target)
    if sub.session and head is not None and store.is_ancestor(sub.tip, head):
        raise ProposalClosed(
            f"session {sub.id!r} has nothing to {verb}: {_short(sub.target)} already contains "
            f"all of {sub.ref}",
            hint="Let the agent make changes on the session first; see proposals().",
            details={"id": sub.id, "branch": sub.ref},
        )


def _closed(key: str, note: Mapping[str, Any]) -> ProposalClosed:
    status = str(note.get("status", "closed"))
    by = note.get("approved_by") or note.get("rejected_by") or note.get("undone_by")
    at = note.get("approved_at") or note.get("rejected_at") or note.get("undone_at")
    facts = "".join(
        [f" by {by}" if by else "", f" at {at}" if at else ""]
        + [f": {note['reason']}" if note.get("reason") else ""]
    )
    return ProposalClosed(
        f"proposal {key} is already {status}{facts}",
        hint="It can no longer be approved or rejected. Propose the change again (as a "
        "revision if it was rejected) to get a new proposal id.",
        details={"id": key, "status": status},
    )


def _note_for_id(store: Store, key: str) -> tuple[pygit2.Oid, dict[str, Any]] | None:
    """The proposal commit and note with id ``key`` (not an approval merge or undo commit)."""
    for commit, note in store.iter_notes():
        if note.get("id") == key and note.get("tool") not in _BOOKKEEPING_TOOLS:
            return commit, note
    return None


def _open_ids(store: Store) -> list[str]:
    with git_errors("list proposal branches"):
        names = store.repo.references.iterator()
        found = [r.name for r in names if r.name.startswith(PROPOSAL_PREFIX)]
    ids = [n.removeprefix(PROPOSAL_PREFIX) for n in found]
    return sorted(i for i in ids if _PROPOSAL_ID.fullmatch(i))


def _session_infos(ws: Workspace, now: datetime) -> list[ProposalInfo]:
    with git_errors("list session branches"):
        names = [r.name for r in ws.store.repo.references.iterator()]
    out = []
    for ref in sorted(n for n in names if n.startswith(SESSION_PREFIX)):
        sub = _find(ws, ref.removeprefix(SESSION_PREFIX))
        if sub.commits:
            out.append(_info(ws.store, sub, now))
    return out


# -- applying one transition --------------------------------------------------------------------


def _run(ws: Workspace, step: _Transition) -> None:
    """Move the refs and the notes ref in one transaction; land on disk when checked out."""
    store = ws.store
    updates = [*step.refs, _notes_update(store, step.notes)]

    def move() -> None:
        store.update_refs(updates, step.message)

    if step.checkout is None or ws.worktree is None:
        move()
        return
    branch, old, new = step.checkout
    if store.head_branch() != branch or old == new:
        move()
        return
    paths = store.changed_paths(old, new)
    _refuse_local_changes(ws, branch, old, new, paths, step.keep)
    ws.worktree.land(_hex(old), str(new), paths, move, ref=branch)


def _refuse_local_changes(
    ws: Workspace,
    branch: str,
    old: pygit2.Oid | None,
    new: pygit2.Oid,
    paths: Sequence[str],
    keep: Sequence[pygit2.Oid],
) -> None:
    assert ws.worktree is not None
    local = ws.worktree.modified(_hex(old), paths)
    for fine in (new, *keep):
        if not local:
            return
        local = ws.worktree.modified(str(fine), local)
    if local:
        raise MergeConflict(
            f"{_short(branch)} is checked out and {', '.join(local)} has local changes that "
            "are not committed; landing this change would overwrite them",
            hint="Commit, stash or discard your changes to those files, then try again. "
            "Nothing was changed.",
            details={"paths": local, "branch": branch},
        )


def _notes_update(store: Store, changes: Mapping[pygit2.Oid, NoteChange]) -> RefUpdate:
    """A new notes commit carrying ``changes``, as a ref update for the same transaction."""
    tip = store.ref_target(NOTES_REF)
    files = []
    for commit, change in changes.items():
        path, old = _note_at(store, tip, commit)
        files.append(FileChange(path, encode(change(old))))
    tree = store.build_tree(tip, files)
    new = store.commit(tree, [tip] if tip is not None else [], "Notes added by gitpatch")
    return (NOTES_REF, new, tip)


def _note_at(
    store: Store, tip: pygit2.Oid | None, commit: pygit2.Oid
) -> tuple[str, dict[str, Any] | None]:
    """Where ``commit``'s note lives in the notes tree at ``tip`` (git may fan it out)."""
    hexid = str(commit)
    if tip is not None:
        for path in (hexid, f"{hexid[:2]}/{hexid[2:]}", f"{hexid[:2]}/{hexid[2:4]}/{hexid[4:]}"):
            data = store.read(tip, path)
            if data is not None:
                return path, decode(data)
    return hexid, None


def _stamped(sub: _Subject, stamp: Mapping[str, Any], *, fresh: bool = False) -> NoteChange:
    """A note change adding ``stamp``; a commit with no note gets the basic fields first."""

    def change(old: dict[str, Any] | None) -> dict[str, Any]:
        basic = {
            "id": sub.id,
            "target": sub.target,
            "base": _hex(sub.base),
            "created_at": _now_iso(),
        }
        return {**(basic if fresh or old is None else old), **stamp}

    return change


def _retry(action: Callable[[], T]) -> T:
    """Run ``action``, again from the start when another writer moved a ref first."""
    for attempt in range(_ATTEMPTS):
        try:
            return action()
        except ConcurrentUpdate as exc:
            if exc.details.get("reason") == "locked" or attempt == _ATTEMPTS - 1:
                raise
            backoff(min(attempt, 6))
    raise AssertionError("unreachable")


# -- merging, fingerprints, results --------------------------------------------------------------


def _merged(
    store: Store, sub: _Subject, head: pygit2.Oid | None, by: str
) -> tuple[pygit2.Oid, str]:
    """The commit the target moves to, and how (fast-forward or 3-way merge)."""
    if head is None or store.is_ancestor(head, sub.tip):
        return sub.tip, "fast-forwarded"
    if store.is_ancestor(sub.tip, head):
        return head, "already contained in"
    what = f"session {sub.id}" if sub.session else f"proposal {sub.id}"
    commit = store.merge(
        head,
        sub.tip,
        f"Merge {what} into {_short(sub.target)}\n\nApproved by {by}.",
        {"Gitpatch-Proposal": f"session/{sub.id}" if sub.session else sub.id},
    )
    return commit, "merged into"


def _fingerprint(store: Store, base: pygit2.Oid | None, tip: pygit2.Oid) -> str:
    """The proposal fingerprint, computed from the commit when its note lacks one."""
    lines = []
    for path in store.changed_paths(base, tip):
        entry = store.entry(tip, path)
        lines.append(f"{path}\t{entry.oid if entry is not None else 'DELETED'}")
    return hashlib.sha256("\n".join(sorted(lines)).encode("utf-8")).hexdigest()


def _files(store: Store, base: pygit2.Oid | None, tip: pygit2.Oid) -> list[FileResult]:
    out = []
    for path in store.changed_paths(base, tip):
        before = base is not None and store.entry(base, path) is not None
        after = store.entry(tip, path) is not None
        action: FileAction = "update" if before and after else ("add" if after else "delete")
        out.append(FileResult(path=path, action=action))
    return out


def _result(
    ws: Workspace,
    sub: _Subject,
    *,
    version: pygit2.Oid,
    branch: str,
    status: str,
    message: str,
) -> ProposalResult:
    return ProposalResult.model_validate(
        {
            "proposal_id": sub.id,
            "version": str(version),
            "branch": branch,
            "target": sub.target,
            "mode": ws.mode,
            "status": status,
            "base": _hex(sub.base) or "",
            "files": _files(ws.store, sub.base, sub.tip),
            "message": message,
        }
    )


def _info(store: Store, sub: _Subject, now: datetime) -> ProposalInfo:
    note = sub.note
    created = str(note.get("created_at") or _iso(store.info(sub.tip).time))
    return ProposalInfo(
        id=sub.id,
        status="applied" if sub.session else "proposed",
        target=sub.target,
        base=_hex(sub.base) or "",
        files=store.changed_paths(sub.base, sub.tip),
        author=str(note.get("author") or store.info(sub.tip).author),
        created_at=created,
        age_seconds=_age(created, now),
        tool=str(note.get("tool") or ("session" if sub.session else "")),
        branch=sub.ref,
        commit=str(sub.tip),
    )


def _closed_info(
    store: Store, commit: pygit2.Oid, note: Mapping[str, Any], now: datetime
) -> ProposalInfo:
    base = _oid(note.get("base")) if "base" in note else _first_parent(store, commit)
    created = str(note.get("created_at") or "")
    status = note.get("status")
    return ProposalInfo(
        id=str(note.get("id")),
        status=status if status in _STATUSES else "applied",
        target=str(note.get("target") or ""),
        base=_hex(base) or "",
        files=store.changed_paths(base, commit),
        author=str(note.get("author") or ""),
        created_at=created,
        age_seconds=_age(created, now),
        tool=str(note.get("tool") or ""),
        branch=str(note.get("branch") or ""),
        commit=str(commit),
    )


_STATUSES = frozenset({"applied", "proposed", "approved", "rejected", "undone"})


# -- small helpers --------------------------------------------------------------------------------


def _walk(
    store: Store, tip: pygit2.Oid, *, first_parent: bool, hide: pygit2.Oid | None = None
) -> Iterator[pygit2.Commit]:
    with git_errors(f"walk the history of {tip}"):
        walker = store.repo.walk(
            tip, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME
        )
        if first_parent:
            walker.simplify_first_parent()
        if hide is not None:
            walker.hide(hide)
        yield from walker


def _person(by: str, verb: str) -> str:
    if not isinstance(by, str) or not by.strip() or "\n" in by:
        raise InvalidArguments(
            f"{verb} needs the name of the person who decides (by=...)",
            hint="Pass by='Name' or by='Name <email>' on one line.",
        )
    return by.strip()


def _clean_id(id: str) -> str:
    if not isinstance(id, str) or not id.strip():
        raise InvalidArguments(
            "the proposal id is empty",
            hint="Pass a 12-character proposal id or a session name (see proposals()).",
        )
    key = id.strip().removeprefix("refs/heads/").removeprefix("gitpatch/")
    return key.lower() if _PROPOSAL_ID.fullmatch(key.lower()) else key


def _first_parent(store: Store, commit: pygit2.Oid) -> pygit2.Oid | None:
    parents = store.info(commit).parents
    return parents[0] if parents else None


def _oid(value: Any) -> pygit2.Oid | None:
    try:
        return pygit2.Oid(hex=str(value)) if value else None
    except ValueError:
        return None


def _hex(oid: pygit2.Oid | None) -> str | None:
    return None if oid is None else str(oid)


def _short(ref: str) -> str:
    return ref.removeprefix("refs/heads/")


def _now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _iso(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _age(created: str, now: datetime) -> float:
    try:
        then = datetime.fromisoformat(created)
    except ValueError:
        return 0.0
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return max(0.0, (now - then).total_seconds())
