"""A change to an auto space as one commit and one compare-and-swap of ``main``, with no note.

The Workspace publishes every change together with a status note on ``refs/notes/gitpatch``:
a notes commit, the notes trees it rewrites and a JSON blob per change. In a space that takes
thousands of small edits that is most of what history keeps (about 600 of 1,100 bytes per
40-byte edit after packing) and a good part of each call's work. Everything such a note says
of a change applied to ``main`` is in the change's own commit: its id and tool
(``Gitpatch-Proposal`` and ``Gitpatch-Tool`` trailers), its base (the first parent), branch
and target (``main``), who asked (the message's "Requested by" line) and when (the commit
time). So ``SpaceStorage`` commits the changes of an auto space here, and readers of history
(``gitpatch log``, ``git log``, undo, resource ids, versions) read the commits; notes written
before (older spaces, review spaces) stay where they are and are read as ever.

The rules of the Workspace's path hold: paths are checked by the Workspace's preview the
change was computed with (``Workspace.preview``), ``.gitmodules`` content is checked, a change
a person rejected (its fingerprint's ``refs/gitpatch/rejected/`` ref) is left to the
Workspace so it is refused with the reviewer's reasons, and ``main`` moves by a
compare-and-swap in the ref transaction that recovery settles after a kill.
"""

from __future__ import annotations

import secrets

import pygit2

from gitpatch.core.model import Changeset
from gitpatch.tools.storage.base import Applied
from gitpatch.tools.storage.resource_ids import resource_id
from gitpatch.workspace import guards
from gitpatch.workspace.api import Workspace
from gitpatch.workspace.build import Built, proposal_files, proposal_result
from gitpatch.workspace.results import summary
from gitpatch.workspace.sessions import REJECTED_PREFIX

__all__ = ["commit_change"]


def commit_change(
    ws: Workspace,
    branch: str,
    head: pygit2.Oid | None,
    changeset: Changeset,
    message: str | None,
    tool: str,
) -> Applied | None:
    """Commit ``changeset`` on ``head`` and move ``branch`` from ``head`` to it; None when the
    Workspace must take the change (a person rejected exactly this change). A lost
    compare-and-swap is ``ConcurrentUpdate`` with nothing moved."""
    store = ws.store
    guards.check_gitmodules(changeset)
    print_ = guards.fingerprint(changeset)
    if store.ref_target(REJECTED_PREFIX + print_) is not None:
        return None
    pid = secrets.token_hex(6)
    ctx = ws.context
    tree = store.build_tree(head, changeset.changes)
    text = message or summary(tool, proposal_files(store, head, changeset))
    trailers = {"Gitpatch-Proposal": pid, "Gitpatch-Tool": tool}
    parents = [head] if head is not None else []
    commit = store.commit(tree, parents, text, trailers, author=ctx.agent_signature())
    store.update_refs([(branch, commit, head)], f"gitpatch: {tool} {pid}")
    result = proposal_result(ctx, Built(commit, head, changeset, print_, changeset.paths), pid)
    ids: dict[str, str] = {}
    for f in result.files:
        ident = resource_id(store, commit, f.path) if f.action != "delete" else None
        if ident is not None:
            ids[f.path] = ident
    return Applied(
        version=result.version,
        files=tuple(result.files),
        edits=changeset.report,
        ids=ids,
        proposal_id=pid,
        branch=branch,
        target=result.target,
    )
