"""A person's own edit of a proposal before approving it.

The edit becomes a new version of the same proposal (same id, same parent, the agent still its
author, the person its committer); the note keeps the edit as ``amendments`` (who, when, the
version it replaced, the files and line ranges, the diff from the agent's version), so the
agent's next result shows exactly which lines the person changed and it builds on them instead
of reverting them. The proposals stacked above are re-based on the new version, or marked
``needs_revision`` where they change the edited lines. Hunk ids stay as they were for every
file whose hunk count the edit kept.

The edit comes as new contents of files (what ``gitpatch amend`` reads back from ``$EDITOR``) or
as a unified diff against the proposal's version (a patch on stdin). One ``Transition`` of the
one publisher: a kill before its ref transaction leaves the old version in place, untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pygit2

from gitpatch import engine
from gitpatch.core.model import FileChange, UpdateFile
from gitpatch.errors import InvalidArguments
from gitpatch.formats import unified_diff
from gitpatch.review import _hunks as hunks
from gitpatch.review import _lifecycle as lifecycle
from gitpatch.review import _partial as partial
from gitpatch.review._lookup import first_parent
from gitpatch.store import split_lines
from gitpatch.workspace import Transition, publish
from gitpatch.workspace.results import ProposalResult, now_iso
from gitpatch.workspace.sessions import PROPOSAL_PREFIX

if TYPE_CHECKING:
    from gitpatch.workspace import Context

__all__ = ["MAX_NOTED_DIFF", "amend", "amend_hunk", "amend_patch", "files_of"]

#: The longest edit diff a note keeps in full (characters); a longer one is cut, saying so.
MAX_NOTED_DIFF = 20_000


def files_of(ctx: Context, proposal_id: str) -> dict[str, bytes]:
    """The files an open proposal adds or changes, as its version has them (what a person
    edits); hunk selection rules apply (a session, a stacked-upon or recorded one: refused)."""
    sub, _found = partial.open_hunks(ctx, proposal_id)
    out: dict[str, bytes] = {}
    for path in ctx.store.changed_paths(sub.base, sub.tip):
        data = ctx.store.read(sub.tip, path)
        if data is not None:
            out[path] = data
    return out


def amend(
    ctx: Context, proposal_id: str, by: str, files: Mapping[str, bytes | None]
) -> ProposalResult:
    """Replace the contents of ``files`` (None: delete) in proposal ``proposal_id``."""
    who = lifecycle.decider(by, "amend")
    changes = [FileChange(path, data) for path, data in files.items()]
    return lifecycle.retried(lambda: _amend_once(ctx, proposal_id, who, changes))


def amend_patch(ctx: Context, proposal_id: str, by: str, patch: str) -> ProposalResult:
    """Apply ``patch`` (a unified diff against the proposal's version) to the proposal."""
    who = lifecycle.decider(by, "amend")
    proposal = unified_diff.parse(patch)

    def once() -> ProposalResult:
        sub, _found = partial.open_hunks(ctx, proposal_id)
        snapshot: dict[str, bytes] = {}
        for op in proposal.operations:
            for path in (op.path, op.move_to if isinstance(op, UpdateFile) else None):
                data = ctx.store.read(sub.tip, path) if path else None
                if path and data is not None:
                    snapshot[path] = data
        changes = list(engine.apply(proposal, snapshot).changes)
        return _amend_once(ctx, proposal_id, who, changes)

    return lifecycle.retried(once)


def amend_hunk(ctx: Context, proposal_id: str, by: str, hunk: str, text: str) -> ProposalResult:
    """Replace the new side of one open hunk (its context and added lines, as ``show`` lists
    them) with ``text``: the page's edit in place. Line ends follow the file's."""
    who = lifecycle.decider(by, "amend")
    if not isinstance(text, str):
        raise InvalidArguments("text must be a string", hint="Send the hunk's new lines.")

    def once() -> ProposalResult:
        sub, found = partial.open_hunks(ctx, proposal_id)
        picked = hunks.select(found, hunk, sub.id)
        target = picked[0].text if len(picked) == 1 else None
        if target is None:
            raise InvalidArguments(
                f"hunk {hunk!r} of proposal {sub.id} is not one hunk of lines that can be edited",
                hint="Name one `change` hunk (PATH:N); edit whole files with `gitpatch amend`.",
                details={"id": sub.id, "hunk": hunk},
            )
        path = picked[0].path
        old = split_lines(ctx.store.read(sub.tip, path) or b"")
        start = target.new_start - 1 if target.new_lines else target.new_start
        region = old[start : start + target.new_lines]
        end = b"\r\n" if region and region[0].endswith(b"\r\n") else b"\n"
        lines = [line.encode("utf-8") for line in text.replace("\r\n", "\n").split("\n")]
        if lines and lines[-1] == b"":
            lines.pop()
        ends_open = bool(region) and not region[-1].endswith(b"\n")
        new = [line + end for line in lines]
        if new and ends_open and start + target.new_lines == len(old):
            new[-1] = new[-1][: -len(end)]  # the file had no final newline: keep it so
        data = b"".join(old[:start] + new + old[start + target.new_lines :])
        return _amend_once(ctx, sub.id, who, [FileChange(path, data)])

    return lifecycle.retried(once)


def _amend_once(
    ctx: Context, proposal_id: str, by: str, changes: list[FileChange]
) -> ProposalResult:
    sub, _found = partial.open_hunks(ctx, proposal_id)
    store = ctx.store
    tree = store.build_tree(sub.tip, changes)
    if tree == store.tree_of(sub.tip):
        raise InvalidArguments(
            f"the edit changes nothing in proposal {sub.id}",
            hint="Change a line of one of its files, or approve it as it is.",
            details={"id": sub.id},
        )
    info = store.info(sub.tip)
    author = pygit2.Signature(info.author_name, info.author_email, int(info.time))
    parent = first_parent(store, sub.tip)
    new = store.commit(tree, [parent] if parent is not None else [], info.message, None, author)
    text, _stats = store.diff(sub.tip, new)
    if len(text) > MAX_NOTED_DIFF:
        text = text[:MAX_NOTED_DIFF] + "\n... (cut: see the proposal's diff)\n"
    where = _where(ctx, sub.tip, new)
    record = {
        "by": by,
        "at": now_iso(),
        "from_version": str(sub.tip),
        "files": store.changed_paths(sub.tip, new),
        "where": where,
        "diff": text,
    }
    left = hunks.hunks_of(store, sub.base, new, sub.note)
    notes = partial.version_note(store, sub, new, left, {"amendments": [record]})
    more_refs, more_notes, later = partial.restacked(ctx, sub, new, by, f"after {by} edited it")
    refs = [(PROPOSAL_PREFIX + sub.id, new, sub.tip), *more_refs]
    publish(ctx, Transition(tuple(refs), notes | more_notes, f"gitpatch: amend {sub.id}"))
    return partial.result(
        ctx,
        sub,
        store,
        new,
        PROPOSAL_PREFIX + sub.id,
        "proposed",
        f"Amended proposal {sub.id} by {by} ({'; '.join(where)}): version "
        f"{str(new)[:12]} replaces {str(sub.tip)[:12]}; it is still open.{later}",
    )


def _where(ctx: Context, old: pygit2.Oid, new: pygit2.Oid) -> list[str]:
    """``PATH lines A-B`` for each stretch of the new version the edit changed."""
    out = []
    for patch in ctx.store.file_patches(old, new):
        if not patch.hunks:
            out.append(patch.new_path if patch.new is not None else f"{patch.old_path} (deleted)")
            continue
        for h in patch.hunks:
            changed = [
                i
                for i, (origin, _data) in enumerate(
                    (line for line in h.lines if line[0] != "-"), start=h.new_start
                )
                if origin == "+"
            ]
            if changed:
                one = changed[-1] == changed[0]
                span = f"line {changed[0]}" if one else f"lines {changed[0]}-{changed[-1]}"
                out.append(f"{patch.new_path} {span}")
            else:
                out.append(f"{patch.new_path} lines removed after line {h.new_start - 1}")
    return out
