"""The review lifecycle: approve, reject, list, show, undo and log what agents proposed.

These functions take a ``Context`` (``gitpatch.workspace.context``) as first argument;
``Workspace.approve`` and friends delegate here. They are for people: agents never get an
approve or reject tool.

Every state change is one atomic reference transaction: the target branch, the proposal (or
session) branch, ``refs/gitpatch/rejected/<fingerprint>`` and ``refs/notes/gitpatch`` move
together or not at all, so a refused approval (merge conflict, local changes on disk, a lost
race) leaves no ref, note, file or index entry changed. When the branch that moves is checked
out, the working tree follows through ``WorkingTree.land`` (journaled, crash-safe), and files a
person changed locally are never overwritten. Each step is described here and carried out by
the one publisher (``gitpatch.workspace.publish``); this module moves no ref itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pygit2

from gitpatch.core.retry import lost_race, retry
from gitpatch.errors import (
    ConcurrentUpdate,
    GitpatchError,
    InvalidArguments,
    ProposalClosed,
)
from gitpatch.review import _checks as checks
from gitpatch.review import _clashes as clashes
from gitpatch.review import _hunks as hunks
from gitpatch.review import _series as series
from gitpatch.review import _undo as undos
from gitpatch.review import _worktrees as worktrees
from gitpatch.review._lookup import (
    BOOKKEEPING_TOOLS,
    Subject,
    clean_id,
    closed_info,
    find,
    first_parent,
    hex_or_empty,
    info,
    note_for_id,
    oid,
    open_ids,
    session_names,
    walk,
)
from gitpatch.store import NOTES_REF, RefUpdate, Store
from gitpatch.workspace import STEP_ATTEMPTS, NoteChange, Transition, guards, publish, stack
from gitpatch.workspace.results import (
    ApprovalOutcome,
    FileAction,
    FileResult,
    LogEntry,
    ProposalDetail,
    ProposalInfo,
    ProposalResult,
    RecordedWork,
    iso,
    now_iso,
)
from gitpatch.workspace.sessions import (
    PROPOSAL_PREFIX,
    REJECTED_PREFIX,
    SESSION_PREFIX,
    short,
)

if TYPE_CHECKING:
    from gitpatch.workspace import Context

__all__ = [
    "RECENT_CLOSED",
    "approve",
    "decider",
    "head",
    "is_open",
    "log",
    "outcome",
    "person",
    "proposals",
    "reject",
    "result",
    "retried",
    "show",
    "stamp",
    "stats",
    "undo",
]

#: How many closed proposals ``proposals()`` lists, newest first.
RECENT_CLOSED = 50


# -- the public functions ---------------------------------------------------------------------


def approve(
    ctx: Context,
    proposal_id: str,
    by: str,
    *,
    squash: bool = False,
    skip_checks: str | None = None,
    told: Callable[[str], None] | None = None,
) -> ProposalResult:
    """Merge a proposal (or a session, by name) into its target and note who approved it.

    Fast-forwards when the target has not moved, else makes a 3-way merge commit; a conflict,
    or local changes on disk to files the merge would write, refuse with nothing changed.
    The proposal ref is deleted, and so are those of the open proposals it stacks on (they
    land with it, see ``lands``); a session branch instead moves to the merged commit, so an
    agent working on it continues from what was approved. A review-mode session's name
    approves its whole stack; ``squash`` then lands it as one commit. ``told`` hears, once and
    before anything moves, which other open proposals the approval lands.

    The project's checks (``review.checks``) run on the exact commit that would land, and
    nothing moves unless they pass (``checks_failed``, the proposal marked so); with
    ``skip_checks`` (the person's reason) they are not run and the landing is a commit of
    its own whose ``Gitpatch-Checks-Skipped`` trailer keeps the reason.
    """
    who = _person(by, "approve")
    skip = _skip_reason(skip_checks)
    said: set[str] = set()

    def tell(line: str) -> None:
        if told is not None and line not in said:
            said.add(line)
            told(line)

    return _retried(lambda: _approve_once(ctx, proposal_id, who, squash, tell, skip))


def reject(ctx: Context, proposal_id: str, by: str, reason: str) -> ProposalResult:
    """Reject a proposal: delete its ref, note who and why, remember its fingerprint.

    ``refs/gitpatch/rejected/<fingerprint>`` then keeps the commit reachable and makes
    ``propose`` refuse the identical change unless it is marked as a revision.
    """
    who = _person(by, "reject")
    if not isinstance(reason, str):
        raise InvalidArguments("reason must be a string", hint="Say why the change is rejected.")
    return _retried(lambda: _reject_once(ctx, proposal_id, who, reason.strip()))


def proposals(ctx: Context) -> list[ProposalInfo]:
    """Open proposals and sessions first, then up to ``RECENT_CLOSED`` closed ones, each part
    newest first (by creation time).

    A session is listed (status ``applied``) while it holds commits its target lacks.
    """
    now = datetime.now(UTC)
    subjects = [find(ctx, pid) for pid in open_ids(ctx.store)]
    for name in session_names(ctx.store):
        try:
            sub = find(ctx, name)
        except GitpatchError:
            continue  # a session whose origin is unknown cannot be reviewed from here
        if sub.commits:
            subjects.append(sub)
    # newest first, by when they were made (ids are random: their order says nothing)
    subjects.sort(key=lambda sub: _made(sub.note, ctx.store.info(sub.tip).time), reverse=True)
    out = [info(ctx.store, sub, now) for sub in subjects]
    out = series.with_overlaps(series.with_lands(ctx, out))
    seen = {item.id for item in out}
    closed: list[tuple[tuple[str, int], pygit2.Oid, dict[str, Any]]] = []
    for commit, note in ctx.store.iter_notes():
        pid = str(note.get("id", ""))
        if not pid or pid in seen or note.get("tool") in BOOKKEEPING_TOOLS:
            continue
        if note.get("status") == "proposed":
            continue  # its ref is gone without a verdict: deleted by hand, nothing to review
        closed.append((_made(note), commit, note))
    # Describing a proposal diffs two trees: do it only for the ones that will be listed.
    closed.sort(key=lambda item: item[0], reverse=True)
    recent = closed[:RECENT_CLOSED]
    return out + [closed_info(ctx.store, commit, note, now) for _at, commit, note in recent]


def _made(note: Mapping[str, Any], fallback: int = 0) -> tuple[str, int]:
    """When a proposal was made, as a sort key: its note's time, to the second, then the
    nanosecond clock reading the note also keeps (two calls in one second stay in order)."""
    at = str(note.get("created_at") or "") or iso(fallback)
    nanos = note.get("created_ns")
    return at, nanos if isinstance(nanos, int) else fallback * 10**9


def show(ctx: Context, proposal_id: str) -> ProposalDetail:
    """One proposal (open or closed) or session: its info, unified diff and stats, and its
    tip's commit message and note."""
    shown = _show(ctx, proposal_id)
    tip = pygit2.Oid(hex=shown.info.commit)
    note = ctx.store.read_note(tip) or {}
    extra = {"message": ctx.store.info(tip).message, "note": note}
    return shown.model_copy(update=extra | hunks.detail(ctx.store, shown, note))


def _show(ctx: Context, proposal_id: str) -> ProposalDetail:
    now = datetime.now(UTC)
    named = series.session_top(ctx, proposal_id)
    if named is not None:
        return series.show_session(ctx, named[0], now)
    try:
        sub = find(ctx, proposal_id)
    except ProposalClosed:
        found = note_for_id(ctx.store, clean_id(proposal_id))
        assert found is not None  # ProposalClosed is raised only when the note exists
        commit, note = found
        base = oid(note.get("base")) if "base" in note else first_parent(ctx.store, commit)
        text, stats = ctx.store.diff(base, commit)
        return ProposalDetail(
            info=closed_info(ctx.store, commit, note, now), diff=text, stats=stats
        )
    text, stats = ctx.store.diff(sub.base, sub.tip)
    records = _recorded(ctx.store, sub)
    files: list[str] = []
    for record in records:
        files.extend(p for p in record.files if p not in files)
    described = info(ctx.store, sub, now)
    beneath = series.lands(ctx, sub)
    if beneath:
        described = described.model_copy(update={"lands": beneath})
    return ProposalDetail(
        info=described,
        diff=text,
        stats=stats,
        recorded="".join(
            "# Recorded from the working tree before the agent's edit (the person's own "
            f"uncommitted work, commit {r.commit[:12]}):\n{r.diff}"
            for r in records
        ),
        recorded_files=files,
        records=records,
    )


def is_open(ctx: Context, listed: ProposalInfo) -> bool:
    """True for what awaits a person: a proposal whose branch exists, or a session (listed
    by ``proposals`` under its name); closed and auto-applied ones are history."""
    if listed.status in ("proposed", "checks_failed"):
        return ctx.store.ref_target(PROPOSAL_PREFIX + listed.id) is not None
    return listed.status == "applied" and listed.branch == SESSION_PREFIX + listed.id


def stats(ctx: Context, listed: ProposalInfo) -> dict[str, int]:
    """The ``files``/``insertions``/``deletions`` that ``show`` would give a proposal from
    ``proposals()``: the diff from its base to its commit, without ``show``'s search of every
    note for a closed proposal's id (the listing already holds both ends)."""
    base = oid(listed.base) if listed.base else None
    return ctx.store.diff(base, pygit2.Oid(hex=listed.commit))[1]


def outcome(ctx: Context, listed: ProposalInfo) -> ApprovalOutcome:
    """What approving ``listed`` would do to its target now, from an in-memory merge that
    writes no object (``approve`` itself decides again under its lock)."""
    tip = pygit2.Oid(hex=listed.commit)
    target = ctx.store.ref_target(listed.target)
    name = short(listed.target)
    if target is None or ctx.store.is_ancestor(target, tip):
        return ApprovalOutcome(kind="fast-forward", text=f"approving fast-forwards {name}")
    if ctx.store.is_ancestor(tip, target):
        return ApprovalOutcome(kind="nothing", text=f"{name} already holds all of it")
    paths = ctx.store.merge_conflicts(target, tip)
    if not paths:
        moved = f"{name} moved on since its base: approving makes a merge commit on {name}"
        return ApprovalOutcome(kind="merge", text=moved)
    side = "session" if listed.status == "applied" else "proposal"
    found = clashes.conflicts(ctx.store, target, tip, name, side)
    text = f"merging into {name} conflicts: {clashes.describe(found, name, side)}"
    return ApprovalOutcome(kind="conflict", paths=paths, text=text)


def stamp(ctx: Context) -> str:
    """A short digest that changes whenever ``proposals()`` could: a proposal or session
    branch or the notes moved (a few ref reads, for a page that polls)."""
    names = [*ctx.store.ref_names(PROPOSAL_PREFIX), NOTES_REF]
    state = "\n".join(f"{name} {ctx.store.ref_target(name)}" for name in names)
    return hashlib.sha256(state.encode()).hexdigest()[:16]


def head(ctx: Context, ref: str) -> tuple[str, str]:
    """Where ``ref`` points now and that commit's summary (``git log -1 --oneline``);
    two empty strings for a branch with no commit."""
    tip = ctx.store.ref_target(ref)
    return ("", "") if tip is None else (str(tip), ctx.store.info(tip).summary)


def person(ctx: Context) -> str:
    """``Name <email>`` from git config (the person at this repository), ``""`` when either
    is not configured."""
    name, email = ctx.store.config_get("user.name"), ctx.store.config_get("user.email")
    return f"{name} <{email}>" if name and email else ""


def _recorded(store: Store, sub: Subject) -> list[RecordedWork]:
    """The person's uncommitted work approval would land with the proposal: each record
    commit with its own diff, oldest first."""
    out: list[RecordedWork] = []
    for commit in reversed(sub.commits):
        if commit not in sub.records:
            continue
        parent = first_parent(store, commit)
        text, _stats = store.diff(parent, commit)
        out.append(
            RecordedWork(
                commit=str(commit),
                time=iso(store.info(commit).time),
                diff=text,
                files=store.changed_paths(parent, commit),
            )
        )
    return out


def undo(ctx: Context, proposal_id: str | None = None) -> ProposalResult:
    """Revert the last gitpatch commit on the workspace's branch (or the one of proposal
    ``proposal_id``, anywhere in its history; or the undo commit that id names) with a new
    commit.

    History is never rewritten. Commits already undone, undo commits themselves (unless
    named) and commits recording a person's uncommitted changes are skipped; an approval
    merge is undone as a whole, and an undo is undone by its own commit id (``review.undo``).
    The working tree follows when the branch is checked out; local changes to the files it
    would write refuse the undo.
    """
    wanted = None if proposal_id is None else clean_id(proposal_id)
    return _retried(lambda: _undo_once(ctx, wanted))


def log(ctx: Context, limit: int = 50) -> list[LogEntry]:
    """The gitpatch commits reachable from the workspace's branch, newest first.

    Commits recording a person's uncommitted changes are listed with tool ``record``.
    """
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise InvalidArguments(
            f"limit must be a positive integer, got {limit!r}", hint="Pass limit=50, say."
        )
    head = ctx.store.ref_target(ctx.branch)
    out: list[LogEntry] = []
    if head is None:
        return out
    for commit in walk(ctx.store, head, first_parent=False):
        if len(out) >= limit:
            break
        trailers = dict(commit.message_trailers)
        pid = trailers.get("Gitpatch-Proposal") or trailers.get("Gitpatch-Record")
        if not pid:
            continue
        tool = trailers.get("Gitpatch-Tool") or ("record" if "Gitpatch-Record" in trailers else "")
        out.append(
            LogEntry(
                commit=str(commit.id),
                proposal_id=pid,
                tool=tool,
                summary=commit.message.split("\n", 1)[0],
                time=iso(commit.commit_time),
            )
        )
    return out


# -- approve, reject, undo: one attempt each ---------------------------------------------------


def _approve_once(
    ctx: Context,
    proposal_id: str,
    by: str,
    squash: bool,
    tell: Callable[[str], None],
    skip: str | None = None,
) -> ProposalResult:
    store = ctx.store
    named = series.session_top(ctx, proposal_id)
    sub = find(ctx, named[1] if named is not None else proposal_id)
    head = store.ref_target(sub.target)
    if sub.session and head is not None and store.is_ancestor(sub.tip, head):
        raise ProposalClosed(
            f"session {sub.id!r} has nothing to approve: {short(sub.target)} already contains "
            f"all of {sub.ref}",
            hint="Let the agent make changes on the session first; see proposals().",
            details={"id": sub.id, "branch": sub.ref},
        )
    skipped = {checks.SKIPPED_TRAILER: skip} if skip is not None else None
    new, how = _merged(store, sub, head, by, None if squash else skipped)
    if squash and new != head:
        name = named[0].session if named else sub.id
        new, how = series.squashed(store, sub, head, new, name, skipped), "squashed onto"
    what = f"session {sub.ref}" if sub.session else f"proposal {sub.id}"
    beneath = series.beneath(ctx, sub)
    if named is not None:
        ids = ", ".join(e.id for e in named[0].entries)
        tell(f"approving session {named[0].session} lands proposals {ids}")
    elif beneath:
        ids = ", ".join(e.id for e in beneath)
        tell(f"approving {sub.id} also lands the open proposals beneath it: {ids}")
    proof = None
    if new != head:
        proof = checks.prove(ctx, sub.tip, new, what=what, by=by, skip=skip)
    stamp = {"status": "approved", "approved_by": by, "approved_at": now_iso()}
    stamp["merged_as"] = str(new)
    if proof is not None:
        stamp["checks"] = proof.summary()
    notes = {c: _stamped(sub, stamp, record=c in sub.records) for c in sub.commits}
    if new not in (sub.tip, head):
        notes[new] = _stamped(sub, {**stamp, "tool": "approve"}, fresh=True)
    refs: list[RefUpdate] = [] if new == head else [(sub.target, new, head)]
    if not (sub.session and _in_other_worktree(ctx, sub.ref)):
        refs.append((sub.ref, new if sub.session else None, sub.tip))
    refs.extend((PROPOSAL_PREFIX + e.id, None, e.commit) for e in beneath)
    if squash and new != head and not sub.session:
        # the squashed proposals stay reachable, so show ID keeps working after a gc
        kept = series.SQUASHED_PREFIX + sub.id
        refs.append((kept, sub.tip, store.ref_target(kept)))
    on_session = sub.session and store.head_branch() == sub.ref
    checkout = (sub.ref, sub.tip, new) if on_session else (sub.target, head, new)
    step = Transition(
        tuple(refs), notes, f"gitpatch: approve {sub.id}", checkout, tuple(sub.records)
    )
    publish(ctx, step)
    what = f"proposal {sub.id}"
    if sub.session:  # a session branch (auto mode): each agent commit on it is a proposal
        what = _session_words(sub.id, len([c for c in sub.commits if c not in sub.records]))
    elif named is not None:
        what = _session_words(named[0].session, len(named[0].entries))
    elif beneath:
        what += f" with the open proposals beneath it ({', '.join(e.id for e in beneath)})"
    return _result(
        ctx,
        sub,
        version=new,
        branch=sub.target,
        status="approved",
        message=f"Approved {what} by {by}: {how} {short(sub.target)} at {str(new)[:12]}."
        + (
            f" {proof.summary()[0].upper()}{proof.summary()[1:]}."
            if proof and (proof.runs or proof.batch)
            else ""
        )
        + (f" Checks skipped: {skip}." if skip is not None else ""),
    )


def _session_words(name: str, count: int) -> str:
    """``session NAME (N proposals)``: how every approval of a session names it."""
    return f"session {name} ({count} proposal{'' if count == 1 else 's'})"


def _in_other_worktree(ctx: Context, ref: str) -> bool:
    """True when ``ref`` (a session branch) is checked out in a worktree other than this
    Workspace's, its session's own: it then stays where it is, its worktree in step with it,
    and the agent's next commits are merged on top of what was approved."""
    where = worktrees.checked_out(ctx.store, ref) if ctx.store.workdir else None
    here = ctx.worktree.root.resolve() if ctx.worktree is not None else None
    return where is not None and where.resolve() != here


def _reject_once(ctx: Context, proposal_id: str, by: str, reason: str) -> ProposalResult:
    named = series.session_top(ctx, proposal_id)
    if named is not None:
        return _reject_session(ctx, named[0], by, reason)
    sub = find(ctx, proposal_id)
    if sub.session:
        raise InvalidArguments(
            f"{sub.ref} is a session branch; only single proposals can be rejected",
            hint="Use undo() to revert the session's last commit, or delete the session branch "
            "with git once you have switched away from it.",
            details={"branch": sub.ref},
        )
    store = ctx.store
    stamp = {"status": "rejected", "rejected_by": by, "rejected_at": now_iso(), "reason": reason}
    refs, notes = _rejection(store, sub.id, sub.tip, sub.base, sub.note, stamp)
    session = str(sub.note.get("session") or "")
    replan = stack.Replan({}, [])
    if session:
        chain = stack.of_session(store, session, sub.target, stack.open_entries(store, fresh=True))
        replan = stack.drop(store, chain, sub.id, first_parent(store, sub.tip))
        more_refs, more_notes = series.replanned(store, sub.id, chain, replan, by, reason)
        refs += more_refs
        notes |= more_notes
    publish(ctx, Transition(tuple(refs), notes, f"gitpatch: reject {sub.id}"))
    because = f" ({reason})" if reason else ""
    later = ""
    if replan.moved:
        later += f" Re-based the later proposals {', '.join(replan.moved)} without it."
    if replan.needs_revision:
        ids = ", ".join(e.id for e in replan.needs_revision)
        later += f" {ids} change the same files and now need a revision."
    return _result(
        ctx,
        sub,
        version=sub.tip,
        branch=sub.ref,
        status="rejected",
        message=f"Rejected proposal {sub.id} by {by}{because}; {sub.ref} is deleted and "
        f"{short(sub.target)} is unchanged.{later}",
    )


def _rejection(
    store: Store,
    pid: str,
    tip: pygit2.Oid,
    base: pygit2.Oid | None,
    note: Mapping[str, Any],
    stamp: Mapping[str, Any],
) -> tuple[list[RefUpdate], dict[pygit2.Oid, NoteChange]]:
    """The refs and note of rejecting one proposal: its ref goes, its fingerprint stays."""
    print_ = str(note.get("fingerprint") or "") or _fingerprint(store, base, tip)
    remembered = REJECTED_PREFIX + print_
    full = {**stamp, "fingerprint": print_}
    refs: list[RefUpdate] = [
        (PROPOSAL_PREFIX + pid, None, tip),
        (remembered, tip, store.ref_target(remembered)),
    ]
    return refs, {tip: lambda old: {**(old or {"id": pid}), **full}}


def _reject_session(ctx: Context, chain: stack.Stack, by: str, reason: str) -> ProposalResult:
    """Reject every open proposal of a review-mode session, in one ref transaction."""
    store = ctx.store
    stamp = {"status": "rejected", "rejected_by": by, "rejected_at": now_iso(), "reason": reason}
    refs: list[RefUpdate] = []
    notes: dict[pygit2.Oid, NoteChange] = {}
    seen: set[str] = set()
    for entry in chain.entries:
        base = first_parent(store, entry.commit)
        more, more_notes = _rejection(store, entry.id, entry.commit, base, entry.note, stamp)
        for update in more:
            if update[0] not in seen:  # two proposals with one fingerprint: remember it once
                seen.add(update[0])
                refs.append(update)
        notes |= more_notes
    publish(ctx, Transition(tuple(refs), notes, f"gitpatch: reject session {chain.session}"))
    top = chain.entries[-1]
    sub = series.subject_of(ctx, top)
    ids = ", ".join(e.id for e in chain.entries)
    return _result(
        ctx,
        sub,
        version=top.commit,
        branch=PROPOSAL_PREFIX + top.id,
        status="rejected",
        message=f"Rejected session {chain.session} by {by}: proposals {ids}; "
        f"{short(chain.target)} is unchanged.",
    )


def _undo_once(ctx: Context, wanted: str | None) -> ProposalResult:
    done = undos.plan(ctx, wanted)
    publish(ctx, done.step)
    return ProposalResult(
        proposal_id=done.pid,
        version=str(done.revert),
        branch=ctx.branch,
        target=ctx.target,
        mode=ctx.mode,
        status="undone",
        base=str(done.head),
        files=_files(ctx.store, done.head, done.revert),
        message=f"Undid {done.words} with a new commit {str(done.revert)[:12]} on "
        f"{short(ctx.branch)}; history is kept. This undo is undoable too: undo "
        f"{str(done.revert)[:12]}.",
    )


def _stamped(
    sub: Subject, stamp: Mapping[str, Any], *, fresh: bool = False, record: bool = False
) -> NoteChange:
    """A note change adding ``stamp``; a commit with no note (``fresh``: a new commit, or a
    recorded local change) first gets the basic fields."""

    def change(old: dict[str, Any] | None) -> dict[str, Any]:
        basic = {"id": sub.id, "target": sub.target, "created_at": now_iso()}
        if record:
            basic["tool"] = "record"
        return {**(basic if fresh or old is None else old), **stamp}

    return change


# -- merging, fingerprints, results --------------------------------------------------------------


def _merged(
    store: Store,
    sub: Subject,
    head: pygit2.Oid | None,
    by: str,
    extra: Mapping[str, str] | None = None,
) -> tuple[pygit2.Oid, str]:
    """The commit the target moves to, and how (fast-forward or 3-way merge); with ``extra``
    trailers always a merge commit of its own that carries them."""
    if head is None or (not extra and store.is_ancestor(head, sub.tip)):
        return sub.tip, "fast-forwarded"
    if store.is_ancestor(sub.tip, head):
        return head, "already contained in"
    what = f"session {sub.id}" if sub.session else f"proposal {sub.id}"
    message = f"Merge {what} into {short(sub.target)}\n\nApproved by {by}."
    trailers = {"Gitpatch-Proposal": f"session/{sub.id}" if sub.session else sub.id}
    return store.merge(head, sub.tip, message, {**trailers, **(extra or {})}), "merged into"


def _skip_reason(skip: str | None) -> str | None:
    """The person's reason for skipping the checks, on one line; a skip needs one."""
    if skip is None:
        return None
    if not isinstance(skip, str) or not skip.strip() or "\n" in skip.strip():
        raise InvalidArguments(
            "skipping the checks needs a reason on one line",
            hint="Pass --skip-checks --reason 'why' (skip_checks='why'); it is recorded in "
            "the commit that lands.",
        )
    return skip.strip()


def _fingerprint(store: Store, base: pygit2.Oid | None, tip: pygit2.Oid) -> str:
    """The proposal fingerprint, computed from the commit when its note lacks one."""
    blobs: dict[str, str | None] = {}
    for path in store.changed_paths(base, tip):
        entry = store.entry(tip, path)
        blobs[path] = None if entry is None else str(entry.oid)
    return guards.fingerprint_of(blobs)


def _files(store: Store, base: pygit2.Oid | None, tip: pygit2.Oid) -> list[FileResult]:
    out = []
    for path in store.changed_paths(base, tip):
        before = base is not None and store.entry(base, path) is not None
        after = store.entry(tip, path) is not None
        action: FileAction = "update" if before and after else ("add" if after else "delete")
        out.append(FileResult(path=path, action=action))
    return out


def _result(
    ctx: Context,
    sub: Subject,
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
            "mode": ctx.mode,
            "status": status,
            "base": hex_or_empty(sub.base),
            "files": _files(ctx.store, sub.base, sub.tip),
            "message": message,
        }
    )


def _retried(step: Callable[[], ProposalResult]) -> ProposalResult:
    """Run one approve / reject / undo attempt, again from the start after a lost race."""
    return retry(step, attempts=STEP_ATTEMPTS, catch=ConcurrentUpdate, when=lost_race)


def decider(by: str, verb: str) -> str:
    """``by`` checked as the one-line name of the person who decides (``verb``: what)."""
    return _person(by, verb)


def result(
    ctx: Context, sub: Subject, *, version: pygit2.Oid, branch: str, status: str, message: str
) -> ProposalResult:
    """The result of a review step on ``sub`` (its files: ``sub.base`` to ``sub.tip``)."""
    return _result(ctx, sub, version=version, branch=branch, status=status, message=message)


def retried(step: Callable[[], ProposalResult]) -> ProposalResult:
    """Run one review step again from the start after a lost race (see ``_retried``)."""
    return _retried(step)


def _person(by: str, verb: str) -> str:
    if not isinstance(by, str) or not by.strip() or "\n" in by.strip():
        raise InvalidArguments(
            f"{verb} needs the name of the person who decides (by=...)",
            hint="Pass by='Name' or by='Name <email>' on one line.",
        )
    return by.strip()
