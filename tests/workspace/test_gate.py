"""The approval gate as a function, and the Workspace applying it in code."""

from __future__ import annotations

import io
from pathlib import Path

import pygit2
import pytest

from gitpatch import Workspace
from gitpatch.doors import hooks
from gitpatch.errors import ApprovalRequired
from gitpatch.workspace import Transition, gate, publish
from tests.gitkit import commit_on, git, head, sr, state

MAIN = "refs/heads/main"


FILES = {"a.txt": "a\n", "b.txt": "b\n"}
BRANCH = "main"


def _proposal(repo: Path) -> tuple[Workspace, str, pygit2.Oid]:
    ws = Workspace.open(repo, mode="review")
    result = ws.apply(sr("a\n", "A\n"), path="a.txt")
    return ws, result.proposal_id, pygit2.Oid(hex=result.version)


def test_pending_lists_agent_commits_without_approval_only(repo: Path) -> None:
    ws, pid, tip = _proposal(repo)
    base = pygit2.Oid(hex=head(repo, "main"))
    items = gate.pending(ws.plumbing.store, base, tip)
    assert [(p.proposal, p.status) for p in items] == [(pid, "proposed")]
    person = pygit2.Oid(hex=commit_on(repo, {"b.txt": "by hand\n"}))
    assert gate.pending(ws.plumbing.store, base, person) == []


def test_check_update_names_the_proposal_and_the_command(repo: Path) -> None:
    ws, pid, tip = _proposal(repo)
    base = pygit2.Oid(hex=head(repo, "main"))
    with pytest.raises(ApprovalRequired) as caught:
        gate.check_update(ws.plumbing.store, MAIN, base, tip)
    assert pid in caught.value.message
    assert f"gitpatch approve {pid}" in (caught.value.hint or "")
    gate.check_update(ws.plumbing.store, "refs/heads/feature", base, tip)  # not protected: passes
    gate.check_update(ws.plumbing.store, MAIN, tip, None)  # a deletion is not the gate's business


def test_the_workspace_refuses_moving_a_protected_branch_onto_unapproved_commits(
    repo: Path,
) -> None:
    ws, _pid, tip = _proposal(repo)
    old = pygit2.Oid(hex=head(repo, "main"))
    before = state(repo)
    step = Transition(refs=((MAIN, tip, old),), notes={}, message="sneak it in")
    with pytest.raises(ApprovalRequired):
        publish(ws.plumbing.context, step)
    assert state(repo) == before


def test_approve_commits_stamps_only_unapproved_agent_commits(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "feature")
    ws = Workspace.open(repo)
    landed = ws.apply(sr("a\n", "A\n"), path="a.txt")
    person = commit_on(repo, {"b.txt": "B\n"})
    commits = [pygit2.Oid(hex=landed.version), pygit2.Oid(hex=person)]
    assert gate.approve_commits(ws.plumbing.store, commits, "Ada") == [landed.version]
    assert gate.approve_commits(ws.plumbing.store, commits, "Ada") == []
    gate.check_update(ws.plumbing.store, MAIN, pygit2.Oid(hex=head(repo, "main")), commits[1])


def test_run_hook_reads_stdin_and_refuses_with_the_code(repo: Path) -> None:
    ws, pid, tip = _proposal(repo)
    line = f"{head(repo, 'main')} {tip} {MAIN}\n"
    err = io.StringIO()
    code = hooks.run_hook("pre-receive", [], io.StringIO(line), err, str(repo))
    assert code == 1 and "approval_required: main is protected" in err.getvalue()
    quiet = io.StringIO()
    assert (
        hooks.run_hook("reference-transaction", ["committed"], io.StringIO(line), quiet, str(repo))
        == 0
    )
    assert hooks.run_hook("post-commit", [], io.StringIO(""), quiet, str(repo)) == 2
