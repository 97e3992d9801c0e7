"""Where two lines of work meet, to the line: sessions' open work, and a target that moved on.

Three questions, each answered from commits already in the store (nothing is written):

- ``between(ctx)``: which lines of this session's open work another live session's open work
  also changes, or its target changed since the work's base (said in the result of every
  agent call, so the clash is known when the change is proposed, not when it is approved);
- ``conflicts(store, ...)``: for a merge that conflicts, each conflicting file's lines on both
  sides (what the queue tells an agent whose entry no longer merges);
- ``ranges``: the changed line ranges between two versions of one file.

Line numbers are those of each change's base (1-based, inclusive); a pure insertion is the
line it follows. Two changes clash when their ranges overlap or touch, as git's merge says.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pygit2

from gitpatch.errors import GitpatchError
from gitpatch.review._lookup import find
from gitpatch.store import Store
from gitpatch.workspace import stack
from gitpatch.workspace.sessions import SESSION_PREFIX, short

if TYPE_CHECKING:
    from gitpatch.workspace import Context

__all__ = ["Span", "Work", "between", "conflicts", "describe", "ranges"]

#: Files larger than this are compared by name only (a line diff of them costs too much).
_MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class Span:
    """Lines ``start``-``end`` (1-based, inclusive) of a base that a change replaces."""

    start: int
    end: int

    def meets(self, other: Span) -> bool:
        """True when the two overlap or touch."""
        return self.start <= other.end + 1 and other.start <= self.end + 1

    def __str__(self) -> str:
        return f"line {self.start}" if self.start == self.end else f"lines {self.start}-{self.end}"


@dataclass(frozen=True)
class Work:
    """One line of open work on a file: whose (``owner``), where it is kept (``where``), and
    the commits it goes from and to."""

    owner: str
    where: str
    base: pygit2.Oid | None
    tip: pygit2.Oid


def ranges(old: bytes | None, new: bytes | None) -> list[Span]:
    """The spans of ``old`` that ``new`` changes (a whole file added or deleted is one span)."""
    if old is None or new is None or len(old) > _MAX_BYTES or len(new) > _MAX_BYTES:
        lines = (old or new or b"").count(b"\n") or 1
        return [Span(1, lines)]
    a, b = old.splitlines(), new.splitlines()
    out = []
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.append(Span(max(1, i1 if i1 == i2 else i1 + 1), max(1, i2)))
    return out


def _spans(store: Store, base: pygit2.Oid | None, tip: pygit2.Oid, path: str) -> list[Span]:
    before = store.read(base, path) if base is not None else None
    return ranges(before, store.read(tip, path))


def _joined(spans: list[Span]) -> str:
    return ", ".join(str(s) for s in spans)


def conflicts(
    store: Store, ours: pygit2.Oid, theirs: pygit2.Oid, ours_name: str, theirs_name: str
) -> list[dict[str, Any]]:
    """Each file where merging ``theirs`` into ``ours`` conflicts: the lines each side
    changed since their merge base (those that meet the other side's), and their text."""
    paths = store.merge_conflicts(ours, theirs)
    base = store.merge_base(ours, theirs)
    out: list[dict[str, Any]] = []
    for path in paths:
        mine, other = _spans(store, base, ours, path), _spans(store, base, theirs, path)
        both = [s for s in mine if any(s.meets(o) for o in other)] or mine
        them = [o for o in other if any(o.meets(s) for s in mine)] or other
        out.append(
            {
                "path": path,
                ours_name: _joined(both),
                theirs_name: _joined(them),
                f"{ours_name}_text": _text(store, ours, base, path, both),
                f"{theirs_name}_text": _text(store, theirs, base, path, them),
            }
        )
    return out


def _text(
    store: Store, tip: pygit2.Oid, base: pygit2.Oid | None, path: str, spans: list[Span]
) -> str:
    """What ``tip`` has where ``spans`` (lines of ``base``) were: its side of the clash."""
    old = store.read(base, path) if base is not None else None
    new = store.read(tip, path)
    if new is None:
        return "(deleted)"
    if old is None or len(new) > _MAX_BYTES:
        return new.decode("utf-8", "replace")[:400]
    a, b = old.splitlines(), new.splitlines()
    shown: list[str] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        hit = Span(max(1, i1 if i1 == i2 else i1 + 1), max(1, i2))
        if tag != "equal" and any(hit.meets(s) for s in spans):
            shown.extend(line.decode("utf-8", "replace") for line in b[j1:j2])
    return "\n".join(shown)[:400] or "(lines removed)"


def describe(found: list[dict[str, Any]], ours_name: str, theirs_name: str) -> str:
    """The conflicts of ``conflicts`` as one sentence per file."""
    return "; ".join(
        f"{c['path']}: {ours_name} changed {c[ours_name]}, {theirs_name} changed {c[theirs_name]}"
        for c in found
    )


def between(ctx: Context, session: str | None = None) -> list[str]:
    """Where this session's open work meets another live session's open work, or changes
    on its target since its base, one sentence each (``Another session also changes a.py
    near your lines 3-5: session bob (proposal ID) changes lines 4-6``). Empty without a
    session or when nothing meets. ``session``: another session than the Workspace's (the
    review page shows each proposal's)."""
    session = session or ctx.session
    if session is None:
        return []
    store = ctx.store
    entries = stack.open_entries(store)
    # listed again only when the session folder changed (this runs around every agent call)
    names = [n.removeprefix(SESSION_PREFIX) for n in store.flat_ref_names(SESSION_PREFIX)]
    alone = not names and all(e.session in ("", session) for e in entries)
    works = _open_work(ctx, entries, [session] if alone else names, session if alone else None)
    mine = works.pop(session, {})
    out: list[str] = []
    for path, own in sorted(mine.items()):
        spans = _spans(store, own.base, own.tip, path)
        for other in sorted(works):
            theirs = works[other].get(path)
            if theirs is None:
                continue
            hits = _meeting(spans, _spans(store, theirs.base, theirs.tip, path))
            if hits:
                out.append(
                    f"Another session also changes {path} near your {_joined(hits[0])}: "
                    f"session {other} ({theirs.where}) changes {_joined(hits[1])}"
                )
        out.extend(_moved_target(ctx, path, own, spans))
    return out


def _meeting(mine: list[Span], theirs: list[Span]) -> tuple[list[Span], list[Span]] | None:
    ours = [s for s in mine if any(s.meets(o) for o in theirs)]
    if not ours:
        return None
    return ours, [o for o in theirs if any(o.meets(s) for s in ours)]


def _moved_target(ctx: Context, path: str, own: Work, spans: list[Span]) -> list[str]:
    """Lines of ``path`` the target changed since ``own``'s base that meet ``spans``."""
    head = ctx.store.ref_target(ctx.target)
    if head is None or own.base is None or head == own.base:
        return []
    if ctx.store.is_ancestor(head, own.base):
        return []
    hits = _meeting(spans, _spans(ctx.store, own.base, head, path))
    if not hits:
        return []
    return [
        f"{short(ctx.target)} changed {path} {_joined(hits[1])} since your base "
        f"{str(own.base)[:12]}, where you change {_joined(hits[0])}: approving yours needs a "
        "merge and may conflict"
    ]


def _open_work(
    ctx: Context, entries: list[stack.Entry], names: list[str], only: str | None
) -> dict[str, dict[str, Work]]:
    """Per session (``only`` that one), per file: its open work (a review stack's, or the
    branch of one of the sessions ``names``)."""
    store = ctx.store
    out: dict[str, dict[str, Work]] = {}
    where = str(store.git_dir)
    for session, target in {(e.session, e.target) for e in entries if e.session}:
        if only is not None and session != only:
            continue
        chain = stack.of_session(store, session, target, entries).entries
        if not chain:
            continue
        bottom = chain[0]
        base = store.info(bottom.commit).parents[0] if store.info(bottom.commit).parents else None
        top = chain[-1]
        for entry in chain:
            for path in stack.files_of(store, entry, where):
                out.setdefault(session, {})[path] = Work(
                    session, f"proposal {top.id}", base, top.commit
                )
    for name in names:
        if store.ref_target(SESSION_PREFIX + name) is None:
            continue
        try:
            sub = find(ctx, name)
        except GitpatchError:
            continue
        if sub.commits:
            for path in store.changed_paths(sub.base, sub.tip):
                out.setdefault(name, {}).setdefault(
                    path, Work(name, f"session branch {short(sub.ref)}", sub.base, sub.tip)
                )
    return out
