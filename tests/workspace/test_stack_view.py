"""A session's view is kept from call to call (``stack.view`` extends the stack it computed
last), so after every kind of step it must equal the stack computed afresh from the refs."""

from __future__ import annotations

from pathlib import Path

from gitpatch.porcelain.workspace import Workspace
from gitpatch.workspace import stack
from tests.gitkit import git, make_repo, sr

FILES = {"a.txt": "a0\n", "b.txt": "b0\n", "c.txt": "c0\n"}


def _same_as_fresh(ws: Workspace, session: str) -> list[str]:
    """The ids of ``session``'s stack as the view sees it, checked against a fresh listing."""
    store = ws.plumbing.store
    seen = stack.view(store, ws.branch, session, ws.target)
    fresh = stack.of_session(store, session, ws.target, stack.open_entries(store, fresh=True))
    ids = [e.id for e in fresh.entries]
    assert seen.stack is not None
    assert [e.id for e in seen.stack.entries] == ids
    assert seen.head == (fresh.top if fresh.top is not None else store.ref_target(ws.branch))
    assert seen.stacked == {p for e in fresh.entries for p in stack.files_of(store, e)}
    return ids


def test_the_view_follows_every_step_as_a_fresh_listing_would(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    one = Workspace.open(repo, mode="review", session="one")
    two = Workspace.open(repo, mode="review", session="two")
    made = []
    for k in range(4):  # two sessions interleaved: each extends only its own stack
        made.append(one.apply(sr(f"a{k}\n", f"a{k + 1}\n"), path="a.txt").proposal_id)
        assert _same_as_fresh(one, "one") == made
        two.apply(sr(f"b{k}\n", f"b{k + 1}\n"), path="b.txt")
        assert len(_same_as_fresh(two, "two")) == k + 1
    one.apply(sr("c0\n", "c1\n"), path="c.txt")  # another file on top
    made.append(_same_as_fresh(one, "one")[-1])
    one.comment(made[1], "Pat", "a note changes, the commit does not")
    assert _same_as_fresh(one, "one") == made
    # rejecting one in the middle rebuilds or sets aside those above it
    one.reject(made[1], by="Pat", reason="not this")
    after_reject = _same_as_fresh(one, "one")
    assert made[1] not in after_reject
    one.apply(sr("c1\n", "c2\n"), path="c.txt")
    assert len(_same_as_fresh(one, "one")) == len(after_reject) + 1
    # a proposal branch deleted with git (no note moves): the view lists the refs again
    top = _same_as_fresh(one, "one")[-1]
    git(repo, "branch", "-D", f"gitpatch/{top}")
    assert top not in _same_as_fresh(one, "one")
    two.approve("two", by="Pat")
    assert _same_as_fresh(two, "two") == []
    assert _same_as_fresh(one, "one")


def test_a_second_workspace_sees_the_stack_the_first_one_grew(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    first = Workspace.open(repo, mode="review", session="bot")
    ids = [first.apply(sr("a0\n", "a1\n"), path="a.txt").proposal_id]
    again = Workspace.open(repo, mode="review", session="bot")  # a restarted agent
    ids.append(again.apply(sr("a1\n", "a2\n"), path="a.txt").proposal_id)
    ids.append(first.apply(sr("a2\n", "a3\n"), path="a.txt").proposal_id)
    assert _same_as_fresh(first, "bot") == ids
    assert _same_as_fresh(again, "bot") == ids
