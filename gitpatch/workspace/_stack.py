"""A review-mode session's open proposals as a stack, the way a patch series stacks.

Each proposal of a session is built on the session's newest open proposal (its *top*), so the
session reads and edits the target plus its own pending work, and the version one call returns
is the head the next call is checked against. A proposal belongs to a session when its note
says ``session``; the stack is found from the open proposal refs alone, so a restarted agent
resumes it by name. Nothing here moves a ref: ``review`` publishes what ``drop`` plans.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pygit2

from gitpatch.core.model import FileChange
from gitpatch.store import NOTES_REF, Store
from gitpatch.workspace.sessions import PROPOSAL_PREFIX

__all__ = [
    "REVISE_PREFIX",
    "Entry",
    "Replan",
    "Stack",
    "View",
    "drop",
    "files_of",
    "of_session",
    "open_entries",
    "restack",
    "view",
]

#: Where a proposal marked ``needs_revision`` stays reachable (``show`` still diffs it).
REVISE_PREFIX = "refs/gitpatch/revise/"


@dataclass(frozen=True)
class Entry:
    """One open proposal: its id, its commit (the ref's target) and the fixed facts of its
    note (``_FIXED``; read the note itself for its status, comments and the like)."""

    id: str
    commit: pygit2.Oid
    note: Mapping[str, Any] = field(hash=False, compare=False)

    @property
    def session(self) -> str:
        """The session the proposal belongs to (``""`` for none)."""
        return str(self.note.get("session") or "")

    @property
    def target(self) -> str:
        """The branch it is meant for."""
        return str(self.note.get("target") or "")


@dataclass(frozen=True)
class Stack:
    """A session's open proposals for one target, bottom first."""

    session: str
    target: str
    entries: tuple[Entry, ...]

    @property
    def top(self) -> pygit2.Oid | None:
        """The newest open proposal's commit: what the session's next call builds on."""
        return self.entries[-1].commit if self.entries else None

    def beneath(self, pid: str) -> list[str]:
        """Ids of the open proposals below ``pid`` (approving it lands them too)."""
        ids = [e.id for e in self.entries]
        return ids[: ids.index(pid)] if pid in ids else []


@dataclass(frozen=True)
class View:
    """What a session's call reads and builds on: ``head`` (the stack top, else the branch
    head) and ``stacked``, the paths its open proposals change, each over the one beneath
    (never read from disk; a person's uncommitted work recorded beneath is not among them)."""

    head: pygit2.Oid | None
    stacked: frozenset[str] = frozenset()
    stack: Stack | None = None


class _Facts:
    """The fixed facts of open proposals' notes (id, session, target, created_at, base,
    fingerprint: written with the proposal and never changed), read once per commit, so
    listing a session's stack on every call costs a ref listing, not a note read per
    proposal. A proposal commit names its own id, so its id is unique across repositories."""

    def __init__(self) -> None:
        self._seen: OrderedDict[tuple[str, pygit2.Oid], dict[str, Any]] = OrderedDict()

    def get(self, store: Store, commit: pygit2.Oid, where: str) -> dict[str, Any]:
        key = (where, commit)
        found = self._seen.get(key)
        if found is None:
            note = store.read_note(commit) or {}
            found = {k: note[k] for k in _FIXED if k in note}
            if found:
                self._seen[key] = found
                if len(self._seen) > _CACHED_NOTES:
                    self._seen.popitem(last=False)
        return found


def files_of(store: Store, entry: Entry, where: str | None = None) -> list[str]:
    """The paths ``entry`` changes over its base (cached: both are fixed); ``where``: the
    store's git dir, when the caller has it at hand."""
    key = (where or str(store.git_dir), entry.commit)
    found = _files.get(key)
    if found is None:
        base = entry.note.get("base")
        below = pygit2.Oid(hex=str(base)) if base else None
        if below is None:
            parents = store.info(entry.commit).parents
            below = parents[0] if parents else None
        found = _files[key] = store.changed_paths(below, entry.commit)
        if len(_files) > _CACHED_NOTES:
            _files.popitem(last=False)
    return found


_files: OrderedDict[tuple[str, pygit2.Oid], list[str]] = OrderedDict()
_FIXED = ("id", "session", "target", "created_at", "base", "fingerprint", "tool", "author")
_CACHED_NOTES = 4096
_facts = _Facts()


def open_entries(store: Store, *, fresh: bool = False) -> list[Entry]:
    """Every open proposal (its branch exists) with the fixed facts of its note.

    Kept up to date from the notes: every step that opens or closes a proposal writes a note
    in the same ref transaction, so only the notes changed since the last look are read (a
    tree diff), not every proposal ref. ``fresh`` lists the refs themselves (what a person's
    step does, so a proposal branch deleted by hand with git is never acted on).
    """
    with _indexing:  # one index per repository, shared by the threads of a process
        return list(_current(store, str(store.git_dir), fresh).entries.values())


def _current(store: Store, where: str, fresh: bool = False) -> _Index:
    """The repository's index brought to the notes ref's tip (``_indexing`` held)."""
    tip = store.ref_target(NOTES_REF)
    index = _indexes.get(where)
    if fresh or index is None or index.tip is None or not store.has_commit(index.tip):
        index = _indexes[where] = _Index(tip, _listed(store, where))
    elif index.tip != tip and tip is not None:
        index.follow(store, where, tip)
    return index


def _listed(store: Store, where: str) -> dict[str, Entry]:
    out: dict[str, Entry] = {}
    for name in store.ref_names(PROPOSAL_PREFIX):
        pid = name.removeprefix(PROPOSAL_PREFIX)
        if "/" in pid:
            continue  # session branches of auto mode live below gitpatch/session/
        tip = store.ref_target(name)
        if tip is not None:
            out[pid] = Entry(pid, tip, _facts.get(store, tip, where))
    return out


@dataclass
class _Index:
    """The open proposals as of the notes commit ``tip``; ``version`` counts the changes to
    ``entries`` and ``log`` holds the latest ones (version, entry before, entry after), so a
    session's stack computed at an older version is brought up to date from them alone."""

    tip: pygit2.Oid | None
    entries: dict[str, Entry]
    version: int = 0
    log: deque[tuple[int, Entry | None, Entry | None]] = field(
        default_factory=lambda: deque(maxlen=_LOGGED)
    )

    def follow(self, store: Store, where: str, tip: pygit2.Oid) -> None:
        """Bring the index to the notes commit ``tip`` (from ``self.tip``)."""
        assert self.tip is not None
        for path in store.changed_paths(self.tip, tip):
            name = path.replace("/", "")
            if len(name) != 40 or any(c not in "0123456789abcdef" for c in name):
                continue
            facts = _facts.get(store, pygit2.Oid(hex=name), where)
            pid = str(facts.get("id") or "")
            if not PROPOSAL_ID.fullmatch(pid):
                continue
            now = store.ref_target(PROPOSAL_PREFIX + pid)
            before = self.entries.get(pid)
            after = None if now is None else Entry(pid, now, _facts.get(store, now, where))
            if after is None:
                self.entries.pop(pid, None)
            else:
                self.entries[pid] = after
            if before is not None or after is not None:
                self.version += 1
                self.log.append((self.version, before, after))
        self.tip = tip


#: Changes an index remembers for bringing a session's stack up to date (more: recomputed).
_LOGGED = 64


_indexes: dict[str, _Index] = {}
_indexing = threading.Lock()
PROPOSAL_ID = re.compile(r"^[0-9a-f]{12}$")


def of_session(
    store: Store, session: str, target: str, entries: Iterable[Entry] | None = None
) -> Stack:
    """The open proposals of ``session`` for ``target``, bottom to top: each one's first
    parents lead (past recorded local changes) to the one beneath it."""
    mine = {
        e.commit: e
        for e in (open_entries(store) if entries is None else entries)
        if e.session == session and e.target == target
    }
    where = str(store.git_dir)
    below: dict[pygit2.Oid, pygit2.Oid] = {}
    for commit in mine:
        for parent in _parents(store, commit, where):
            if parent in mine:
                below[commit] = parent
                break
    above = {b: a for a, b in below.items()}
    chain: list[Entry] = []
    for start in [c for c in mine if c not in below]:
        at: pygit2.Oid | None = start
        while at is not None and at in mine:
            chain.append(mine.pop(at))
            at = above.get(at)
    return Stack(session, target, tuple(chain))


def _parents(store: Store, commit: pygit2.Oid, where: str) -> tuple[pygit2.Oid, ...]:
    """The first few first parents of ``commit`` (fixed by its id, so cached)."""
    key = (where, commit)
    found = _first_parents.get(key)
    if found is None:
        walk = itertools.islice(store.first_parents(commit), 1, _RECORDS_BETWEEN + 2)
        found = _first_parents[key] = tuple(c.id for c in walk)
        if len(_first_parents) > _CACHED_NOTES:
            _first_parents.popitem(last=False)
    return found


_first_parents: OrderedDict[tuple[str, pygit2.Oid], tuple[pygit2.Oid, ...]] = OrderedDict()


#: How many commits (recorded local changes) may sit between two proposals of one stack.
_RECORDS_BETWEEN = 3


def view(store: Store, branch: str, session: str | None, target: str) -> View:
    """The view of a review-mode ``session`` (None: the branch head, as without a session)."""
    head = store.ref_target(branch)
    if session is None:
        return View(head)
    stack, stacked = _session_stack(store, session, target)
    top = stack.top
    if top is not None and store.ref_target(PROPOSAL_PREFIX + stack.entries[-1].id) != top:
        # its branch went without a note (deleted by hand): list the refs themselves
        stack = of_session(store, session, target, open_entries(store, fresh=True))
        stacked = _stacked(store, stack, str(store.git_dir))
        top = stack.top
    if top is None:
        return View(head, stack=stack)
    return View(top, stacked, stack)


def _stacked(store: Store, stack: Stack, where: str) -> frozenset[str]:
    return frozenset(p for e in stack.entries for p in files_of(store, e, where))


@dataclass
class _Memo:
    """A session's stack as computed at ``version`` of ``index``, kept only while it is one
    chain (each proposal's nearest first parent among them is the one before it, and every
    open proposal of the session is in it: what a session's calls make). ``parents`` are
    the first parents ``of_session`` looked at, so a new proposal is known to sit above all."""

    index: _Index
    version: int
    stack: Stack
    stacked: frozenset[str]
    parents: set[pygit2.Oid]
    commits: set[pygit2.Oid]


def _session_stack(store: Store, session: str, target: str) -> tuple[Stack, frozenset[str]]:
    """``of_session`` of the current index, and the paths its proposals change.

    A call costs what changed since the session's last call, not the depth of its stack:
    when the only changes to this session's proposals since then are new proposals, each
    built on the top (what each call adds), the stack is extended; anything else recomputes.
    """
    where = str(store.git_dir)
    with _indexing:
        index = _current(store, where)
        key = (where, session, target)
        memo = _memos.pop(key, None)  # put back below once it is up to date
        if memo is not None and memo.index is index and _extend(store, where, memo, index):
            _memos[key] = memo
            return memo.stack, memo.stacked
        entries = index.entries.values()
        stack = of_session(store, session, target, entries)
        stacked = _stacked(store, stack, where)
        mine = sum(1 for e in entries if _belongs(e, stack))
        parents = {p for e in stack.entries for p in _parents(store, e.commit, where)}
        if mine == len(stack.entries) and _chained(store, where, stack.entries):
            commits = {e.commit for e in stack.entries}
            _memos[key] = _Memo(index, index.version, stack, stacked, parents, commits)
            while len(_memos) > _CACHED_STACKS:
                del _memos[next(iter(_memos))]
        return stack, stacked


def _chained(store: Store, where: str, entries: Sequence[Entry]) -> bool:
    """True when each entry's nearest first parent among ``entries`` is the one before it."""
    commits = {e.commit for e in entries}
    below = None
    for entry in entries:
        if _below(store, where, entry.commit, commits) != below:
            return False
        below = entry.commit
    return True


def _below(
    store: Store, where: str, commit: pygit2.Oid, commits: set[pygit2.Oid]
) -> pygit2.Oid | None:
    """``commit``'s nearest first parent among ``commits`` (as ``of_session`` finds it)."""
    return next((p for p in _parents(store, commit, where) if p in commits), None)


def _extend(store: Store, where: str, memo: _Memo, index: _Index) -> bool:
    """Bring ``memo`` to ``index.version`` from the index's log; False when it cannot (the
    log no longer reaches back, or a change is not a new proposal on the stack's top)."""
    if memo.version == index.version:
        return True
    changes = [c for c in index.log if c[0] > memo.version]
    if not changes or changes[0][0] != memo.version + 1:
        return False
    stack = memo.stack
    entries = list(stack.entries)
    stacked = set(memo.stacked)
    commits, parents = memo.commits, memo.parents  # a False return drops the memo
    for _version, before, after in changes:
        if not any(e is not None and _belongs(e, stack) for e in (before, after)):
            continue  # another session's proposal, or another target's
        if before is not None and after is not None and before.commit == after.commit:
            continue  # its note changed (a comment, a status), not its commit
        if before is not None or after is None or after.commit in parents:
            return False  # one of the stack's proposals moved or closed, or one came beneath
        top = entries[-1].commit if entries else None
        if _below(store, where, after.commit, commits) != top:
            return False
        entries.append(after)
        commits.add(after.commit)
        stacked.update(files_of(store, after, where))
        parents.update(_parents(store, after.commit, where))
    memo.stack = Stack(stack.session, stack.target, tuple(entries))
    memo.stacked, memo.version = frozenset(stacked), index.version
    return True


def _belongs(entry: Entry, stack: Stack) -> bool:
    return entry.session == stack.session and entry.target == stack.target


_memos: dict[tuple[str, str, str], _Memo] = {}
#: Sessions whose stacks are kept (one process serves a few).
_CACHED_STACKS = 64


@dataclass(frozen=True)
class Replan:
    """What rejecting one proposal of a stack does to the proposals above it."""

    moved: dict[str, tuple[pygit2.Oid, pygit2.Oid]]  # id -> (old commit, new commit)
    needs_revision: list[Entry]


def drop(store: Store, stack: Stack, pid: str, parent: pygit2.Oid | None) -> Replan:
    """Plan removing ``pid`` from ``stack``: the later proposals that change none of the files
    it (or a dependent one) changes are rebuilt on ``parent`` in order, the others need a
    revision. New commits are written; no ref moves."""
    ids = [e.id for e in stack.entries]
    if pid not in ids:
        return Replan({}, [])
    at = ids.index(pid)
    below = stack.entries[at - 1].commit if at else parent
    touched = set(_own_paths(store, stack.entries[at].commit, below))
    return _replayed(store, stack.entries[at:], touched, parent)


def restack(store: Store, stack: Stack, pid: str, new: pygit2.Oid) -> Replan:
    """Plan replacing ``pid``'s commit in ``stack`` with ``new`` (a new version of it: partly
    approved, partly rejected, edited by a person): each later proposal whose files read the
    same at ``new`` as where it was built is rebuilt on it in order; one changing a file that
    differs there (or one a dependent one changes) needs a revision. No ref moves."""
    ids = [e.id for e in stack.entries]
    if pid not in ids:
        return Replan({}, [])
    at = ids.index(pid)
    touched = set(store.changed_paths(stack.entries[at].commit, new))
    return _replayed(store, stack.entries[at:], touched, new)


def _replayed(
    store: Store, entries: Sequence[Entry], touched: set[str], base: pygit2.Oid | None
) -> Replan:
    """The entries above ``entries[0]`` rebuilt on ``base`` in order, except those changing a
    path in ``touched`` (which grows with each of them): they need a revision."""
    moved: dict[str, tuple[pygit2.Oid, pygit2.Oid]] = {}
    needs: list[Entry] = []
    previous = entries[0].commit
    for entry in entries[1:]:
        own = _own_paths(store, entry.commit, previous)
        previous = entry.commit
        if touched.intersection(own):
            touched.update(own)
            needs.append(entry)
            continue
        rebuilt = _rebuilt(store, entry.commit, base, own)
        moved[entry.id] = (entry.commit, rebuilt)
        base = rebuilt
    return Replan(moved, needs)


def _own_paths(store: Store, commit: pygit2.Oid, below: pygit2.Oid | None) -> list[str]:
    """The paths ``commit`` changes over the proposal beneath it (or its base)."""
    return store.changed_paths(below, commit)


def _rebuilt(
    store: Store, commit: pygit2.Oid, base: pygit2.Oid | None, paths: Iterable[str]
) -> pygit2.Oid:
    """``commit``'s own change to ``paths`` as a new commit on ``base`` (same message and
    author): a cherry-pick that cannot conflict, since no path it touches moved."""
    changes = []
    for path in paths:
        found = store.entry(commit, path)
        changes.append(
            FileChange(path, None)
            if found is None
            else FileChange(path, store.read(commit, path), mode=found.mode)
        )
    tree = store.build_tree(base, changes)
    info = store.info(commit)
    author = pygit2.Signature(info.author_name, info.author_email, int(info.time))
    return store.commit(tree, [base] if base is not None else [], info.message, None, author)
