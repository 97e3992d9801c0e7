"""The review lifecycle on real repositories, checked with the real git binary.

approve (fast-forward, 3-way, conflicts, local changes, sessions, bare), reject (ref gone, note
kept, rejected fingerprint), proposals, show, undo and log.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from gitpatch.core.model import AddFile, DeleteFile, Proposal
from gitpatch.errors import (
    DirtyWorktree,
    GitpatchError,
    InvalidArguments,
    MergeConflict,
    ProposalClosed,
    ProposalNotFound,
    ProposalRejected,
)
from gitpatch.porcelain.workspace import Workspace
from gitpatch.review import lifecycle
from tests.gitkit import edit, git, head, make_repo
from tests.gitkit import repo_state as snapshot

WORK = "refs/heads/work"
MAIN = "refs/heads/main"
SESSION = "refs/heads/gitpatch/session/agent"
FILES = {"a.txt": "alpha\nbeta\ngamma\n", "b.txt": "one\ntwo\nthree\n", "src/c.py": "x = 1\n"}


# -- helpers ------------------------------------------------------------------------------------


def review_repo(root: Path, branch: str = "work", *, bare_clone: bool = False) -> Path:
    """A repository on ``branch`` holding FILES in one commit (optionally a bare clone of it)."""
    repo = make_repo(root, FILES, branch)
    if not bare_clone:
        return repo
    bare = root.parent / "bare.git"
    git(root.parent, "clone", "-q", "--bare", str(repo), str(bare))
    return bare


def has_ref(repo: Path, ref: str) -> bool:
    return bool(git(repo, "for-each-ref", ref).strip())


def note(repo: Path, commit: str) -> dict[str, object]:
    data = json.loads(git(repo, "notes", "--ref", "gitpatch", "show", commit))
    assert isinstance(data, dict)
    return data


def assert_sound(repo: Path, *, worktree: bool = True) -> None:
    """git fsck --strict has nothing to say and (with a working tree) git status is clean."""
    fsck = git(repo, "fsck", "--strict", "--no-dangling", "--no-progress")
    assert "error" not in fsck and "missing" not in fsck, fsck
    if worktree:
        assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return review_repo(tmp_path / "repo")


@pytest.fixture
def ws(repo: Path) -> Workspace:
    return Workspace.open(repo, mode="review")


# -- approve ----------------------------------------------------------------------------------


def test_approve_fast_forwards_lands_on_disk_and_notes(repo: Path, ws: Workspace) -> None:
    base = head(repo)
    res = ws.propose(edit("a.txt", "beta\n", "BETA\n"))
    done = ws.approve(res.proposal_id, by="Alice <alice@example.com>")
    assert done.status == "approved" and done.version == res.version == head(repo, WORK)
    assert done.branch == WORK and done.base == base
    assert [(f.path, f.action) for f in done.files] == [("a.txt", "update")]
    assert "fast-forwarded" in done.message and "Alice" in done.message
    assert not has_ref(repo, res.branch)
    assert (repo / "a.txt").read_text() == "alpha\nBETA\ngamma\n"
    got = note(repo, res.version)
    assert got["status"] == "approved" and got["approved_by"] == "Alice <alice@example.com>"
    assert got["merged_as"] == res.version and got["approved_at"]
    assert git(repo, "log", "-1", "--format=%(trailers:key=Gitpatch-Proposal,valueonly)").strip()
    assert_sound(repo)


def test_approve_three_way_merges_with_what_the_target_gained(repo: Path, ws: Workspace) -> None:
    res = ws.propose(edit("a.txt", "gamma\n", "GAMMA\n"))
    (repo / "b.txt").write_text("one\nTWO\nthree\n")
    git(repo, "commit", "-q", "-am", "person edits b")
    moved = head(repo)
    done = ws.approve(res.proposal_id, by="Alice")
    merged = head(repo, WORK)
    assert done.version == merged and "merged into" in done.message
    assert git(repo, "rev-list", "--parents", "-n1", merged).split()[1:] == [moved, res.version]
    assert (repo / "a.txt").read_text() == "alpha\nbeta\nGAMMA\n"
    assert (repo / "b.txt").read_text() == "one\nTWO\nthree\n"
    assert note(repo, res.version)["merged_as"] == merged
    assert note(repo, merged)["tool"] == "approve"
    trailers = git(repo, "log", "-1", "--format=%(trailers:only)", merged)
    assert f"Gitpatch-Proposal: {res.proposal_id}" in trailers
    assert_sound(repo)


def test_approve_conflict_refuses_and_changes_nothing(repo: Path, ws: Workspace) -> None:
    res = ws.propose(edit("a.txt", "beta\n", "proposal\n"))
    (repo / "a.txt").write_text("alpha\nperson\ngamma\n")
    git(repo, "commit", "-q", "-am", "person edits a")
    before = snapshot(repo)
    with pytest.raises(MergeConflict) as err:
        ws.approve(res.proposal_id, by="Alice")
    assert err.value.details["paths"] == ["a.txt"] and err.value.hint
    assert snapshot(repo) == before
    assert note(repo, res.version)["status"] == "proposed"
    assert_sound(repo)


def test_approval_carries_the_change_onto_local_changes(repo: Path, ws: Workspace) -> None:
    res = ws.propose(edit("a.txt", "alpha\n", "ALPHA\n"))
    (repo / "a.txt").write_text("alpha\nbeta\ngamma\nmine\n")
    ws.approve(res.proposal_id, by="Alice")
    assert (repo / "a.txt").read_text() == "ALPHA\nbeta\ngamma\nmine\n"
    assert git(repo, "show", "HEAD:a.txt") == "ALPHA\nbeta\ngamma\n"
    assert git(repo, "status", "--porcelain") == " M a.txt\n"
    assert git(repo, "diff").count("\n+mine") == 1
    assert_sound(repo, worktree=False)


def test_local_changes_on_disk_refuse_approval_until_resolved(repo: Path) -> None:
    ws = Workspace.open(repo, mode="review", dirty="refuse")
    res = ws.propose(edit("a.txt", "beta\n", "BETA\n"))
    (repo / "a.txt").write_text("alpha\nbeta\ngamma\nmine\n")
    (repo / "b.txt").write_text("unrelated local edit\n")
    before = snapshot(repo)
    with pytest.raises(DirtyWorktree) as err:
        ws.approve(res.proposal_id, by="Alice")
    assert err.value.details["paths"] == ["a.txt"] and "a.txt" in err.value.message
    assert snapshot(repo) == before
    git(repo, "checkout", "--", "a.txt")
    ws.approve(res.proposal_id, by="Alice")
    assert (repo / "a.txt").read_text() == "alpha\nBETA\ngamma\n"
    assert (repo / "b.txt").read_text() == "unrelated local edit\n", "a local edit was lost"
    assert git(repo, "status", "--porcelain") == " M b.txt\n"


def test_approve_a_proposal_built_on_recorded_local_changes(repo: Path) -> None:
    ws = Workspace.open(repo, mode="review", dirty="record")
    (repo / "a.txt").write_text("alpha\nbeta\ngamma\ndelta\n")  # uncommitted, then edited
    res = ws.propose(edit("a.txt", "delta\n", "DELTA\n"))
    assert (repo / "a.txt").read_text() == "alpha\nbeta\ngamma\ndelta\n"
    ws.approve(res.proposal_id, by="Alice")
    assert (repo / "a.txt").read_text() == "alpha\nbeta\ngamma\nDELTA\n"
    assert_sound(repo)


def test_approve_in_a_bare_repository_moves_only_refs(tmp_path: Path) -> None:
    bare = review_repo(tmp_path / "src", bare_clone=True)
    ws = Workspace.open(bare, mode="review", branch="work")
    res = ws.propose(
        Proposal(operations=(AddFile("new.txt", "hi\n"),), format="patch_resource", tool="test")
    )
    ws.approve(res.proposal_id, by="Alice")
    assert git(bare, "show", f"{WORK}:new.txt") == "hi\n"
    assert not has_ref(bare, res.branch)
    assert_sound(bare, worktree=False)


def test_approve_accepts_the_branch_name_and_refuses_bad_callers(repo: Path, ws: Workspace) -> None:
    res = ws.propose(edit("b.txt", "two\n", "2\n"))
    with pytest.raises(InvalidArguments):
        ws.approve(res.proposal_id, by="  ")
    with pytest.raises(InvalidArguments):
        ws.approve("", by="Alice")
    with pytest.raises(ProposalNotFound) as err:
        ws.approve("0123456789ab", by="Alice")
    assert res.proposal_id in (err.value.hint or ""), "the hint lists the open proposals"
    ws.approve(res.branch, by="Alice")
    assert (repo / "b.txt").read_text() == "one\n2\nthree\n"


# -- sessions on a protected branch --------------------------------------------------------------


def test_approving_a_session_merges_it_into_the_protected_branch(tmp_path: Path) -> None:
    repo = review_repo(tmp_path / "repo", branch="main")
    base = head(repo, MAIN)
    agent = Workspace.open(repo)
    first = agent.propose(edit("a.txt", "alpha\n", "ALPHA\n"))
    second = agent.propose(edit("b.txt", "one\n", "ONE\n"))
    assert second.branch == SESSION and head(repo, MAIN) == base
    listed = {p.id: p for p in lifecycle.proposals(agent.plumbing.context)}
    assert listed["agent"].files == ["a.txt", "b.txt"] and listed["agent"].branch == SESSION

    person = Workspace.open(repo, mode="review", branch="main")
    done = person.approve("agent", by="Alice")
    assert done.branch == MAIN and head(repo, MAIN) == second.version
    assert head(repo, SESSION) == second.version, "the session continues from what was merged"
    assert git(repo, "symbolic-ref", "HEAD").strip() == MAIN, "the person's HEAD never moved"
    for commit in (first.version, second.version):
        assert note(repo, commit)["status"] == "approved"
    with pytest.raises(ProposalClosed):
        person.approve("agent", by="Alice")
    third = agent.propose(edit("src/c.py", "x = 1\n", "x = 3\n"))
    assert git(repo, "rev-parse", f"{third.version}^").strip() == second.version
    assert_sound(repo)


def test_session_merge_after_main_moved_keeps_the_session_worktree_in_step(
    tmp_path: Path,
) -> None:
    repo = review_repo(tmp_path / "repo", branch="main")
    agent = Workspace.open(repo)
    agent.plumbing.session_worktree()
    res = agent.propose(edit("a.txt", "alpha\n", "ALPHA\n"))
    (repo / "b.txt").write_text("one\nperson\nthree\n")
    git(repo, "commit", "-q", "-am", "person on main")
    person_commit = head(repo, MAIN)

    Workspace.open(repo, mode="review").approve("agent", by="Alice")
    merged = head(repo, MAIN)
    assert git(repo, "rev-list", "--parents", "-n1", merged).split()[1:] == [
        person_commit,
        res.version,
    ]
    # the session branch stays where its worktree is; the agent goes on from there
    assert head(repo, SESSION) == res.version
    assert (repo / "b.txt").read_text() == "one\nperson\nthree\n"
    assert (repo / "a.txt").read_text() == "ALPHA\nbeta\ngamma\n", "the person's disk follows"
    assert git(repo, "status", "--porcelain") == ""
    assert agent.plumbing.worktree is not None
    assert git(agent.plumbing.worktree.root, "status", "--porcelain") == ""
    assert_sound(repo)


def _commit_beside(repo: Path, parent: str, tree: str, path: str, text: str) -> str:
    """A person's commit on ``parent`` changing one file, made without touching the disk."""
    env_index = repo / ".git" / "other-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(env_index), "HOME": str(repo)}

    def run(*args: str, stdin: str | None = None) -> str:
        out = subprocess.run(
            ["git", *args], cwd=repo, env=env, input=stdin, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    run("read-tree", tree)
    blob = run("hash-object", "-w", "--stdin", stdin=text)
    run("update-index", "--cacheinfo", f"100644,{blob},{path}")
    new_tree = run("write-tree")
    env_index.unlink()
    return run("commit-tree", new_tree, "-p", parent, "-m", "person on main")


# -- reject -----------------------------------------------------------------------------------


def test_reject_deletes_the_ref_keeps_the_note_and_remembers(repo: Path, ws: Workspace) -> None:
    proposal = edit("b.txt", "two\n", "deux\n")
    res = ws.propose(proposal)
    before_work = head(repo, WORK)
    done = ws.reject(res.proposal_id, by="Bob", reason="keep it in English")
    assert done.status == "rejected" and "keep it in English" in done.message
    assert not has_ref(repo, res.branch) and head(repo, WORK) == before_work
    got = note(repo, res.version)
    assert got["status"] == "rejected" and got["rejected_by"] == "Bob"
    assert got["reason"] == "keep it in English" and got["rejected_at"]
    assert head(repo, f"refs/gitpatch/rejected/{got['fingerprint']}") == res.version

    with pytest.raises(ProposalClosed) as err:
        ws.reject(res.proposal_id, by="Bob", reason="again")
    assert "rejected by Bob" in err.value.message and "keep it in English" in err.value.message
    with pytest.raises(ProposalClosed):
        ws.approve(res.proposal_id, by="Alice")
    with pytest.raises(ProposalRejected):
        ws.propose(proposal)
    revised = ws.propose(proposal, revision=True)
    assert note(repo, revised.version)["revision"] is True
    ws.reject(revised.proposal_id, by="Bob", reason="still no")
    assert head(repo, f"refs/gitpatch/rejected/{got['fingerprint']}") == revised.version
    assert_sound(repo)


def test_a_session_cannot_be_rejected(tmp_path: Path) -> None:
    repo = review_repo(tmp_path / "repo", branch="main")
    agent = Workspace.open(repo)
    agent.propose(edit("a.txt", "alpha\n", "ALPHA\n"))
    before = snapshot(repo)
    with pytest.raises(InvalidArguments):
        agent.reject("agent", by="Bob", reason="no")
    assert snapshot(repo) == before


# -- proposals and show ---------------------------------------------------------------------------


def test_proposals_lists_open_then_closed(repo: Path, ws: Workspace) -> None:
    kept = ws.propose(edit("a.txt", "alpha\n", "A\n"))
    gone = ws.propose(
        Proposal(operations=(DeleteFile("src/c.py"),), format="patch_resource", tool="apply_patch")
    )
    taken = ws.propose(edit("b.txt", "three\n", "3\n"))
    ws.reject(gone.proposal_id, by="Bob", reason="needed")
    ws.approve(taken.proposal_id, by="Alice")
    listed = lifecycle.proposals(ws.plumbing.context)
    assert [(p.id, p.status) for p in listed][0] == (kept.proposal_id, "proposed")
    by_id = {p.id: p for p in listed}
    assert by_id[gone.proposal_id].status == "rejected"
    assert by_id[gone.proposal_id].files == ["src/c.py"]
    assert by_id[taken.proposal_id].status == "approved"
    open_one = by_id[kept.proposal_id]
    assert open_one.target == WORK and open_one.files == ["a.txt"]
    assert open_one.branch == kept.branch and open_one.commit == kept.version
    assert "gitpatch session" in open_one.author and open_one.age_seconds >= 0
    assert open_one.created_at.endswith("Z") and open_one.tool == "test"
    assert len(listed) == 3, "an approval merge or undo commit is no proposal of its own"


def test_show_gives_diff_stats_and_info_for_open_and_closed(repo: Path, ws: Workspace) -> None:
    res = ws.propose(edit("a.txt", "beta\n", "BETA\nmore\n"))
    detail = ws.show(res.proposal_id)
    assert "-beta" in detail.diff and "+BETA" in detail.diff and "+more" in detail.diff
    assert detail.stats == {"files": 1, "insertions": 2, "deletions": 1}
    assert detail.info.id == res.proposal_id and detail.info.status == "proposed"
    ws.reject(res.proposal_id, by="Bob", reason="no")
    closed = ws.show(res.proposal_id)
    assert closed.info.status == "rejected" and closed.diff == detail.diff
    with pytest.raises(ProposalNotFound):
        ws.show("fedcba987654")


def test_show_carries_the_tips_message_and_note(repo: Path, ws: Workspace) -> None:
    res = ws.propose(edit("a.txt", "beta\n", "BETA\n"))
    detail = ws.show(res.proposal_id)
    assert detail.message == git(repo, "log", "-1", "--format=%B", res.version).rstrip("\n") + "\n"
    assert detail.note == note(repo, res.version) and detail.note["status"] == "proposed"
    ws.reject(res.proposal_id, by="Bob", reason="no")
    assert ws.show(res.proposal_id).note["status"] == "rejected"


def test_stats_of_listed_proposals_match_show(repo: Path, ws: Workspace) -> None:
    kept = ws.propose(edit("a.txt", "beta\n", "B1\nB2\n"))
    gone = ws.propose(edit("b.txt", "two\n", "2\n"))
    ws.reject(gone.proposal_id, by="Bob", reason="no")
    for listed in lifecycle.proposals(ws.plumbing.context):
        assert lifecycle.stats(ws.plumbing.context, listed) == ws.show(listed.id).stats
    by_id = {p.id: p for p in lifecycle.proposals(ws.plumbing.context)}
    assert lifecycle.stats(ws.plumbing.context, by_id[kept.proposal_id])["insertions"] == 2
    assert lifecycle.is_open(ws.plumbing.context, by_id[kept.proposal_id])
    assert not lifecycle.is_open(ws.plumbing.context, by_id[gone.proposal_id])


def test_outcome_tells_what_approving_would_do_and_writes_nothing(
    repo: Path, ws: Workspace
) -> None:
    ff = ws.propose(edit("a.txt", "alpha\n", "ALPHA\n"))
    clash = ws.propose(edit("b.txt", "two\n", "agent\n"))
    listed = {p.id: p for p in lifecycle.proposals(ws.plumbing.context)}
    before = snapshot(repo)
    assert lifecycle.outcome(ws.plumbing.context, listed[ff.proposal_id]).kind == "fast-forward"
    (repo / "b.txt").write_text("one\nperson\nthree\n")
    git(repo, "commit", "-q", "-am", "person edits b")
    moved = snapshot(repo)
    got = lifecycle.outcome(ws.plumbing.context, listed[clash.proposal_id])
    assert (got.kind, got.paths) == ("conflict", ["b.txt"])
    assert lifecycle.outcome(ws.plumbing.context, listed[ff.proposal_id]).kind == "merge"
    assert snapshot(repo) == moved != before, "asking wrote nothing"
    ws.approve(ff.proposal_id, by="Alice")
    listed_again = listed[ff.proposal_id].model_copy(update={"target": "refs/heads/work"})
    assert lifecycle.outcome(ws.plumbing.context, listed_again).kind == "nothing"


def test_stamp_moves_with_proposals_verdicts_and_nothing_else(repo: Path, ws: Workspace) -> None:
    first = lifecycle.stamp(ws.plumbing.context)
    assert lifecycle.stamp(ws.plumbing.context) == first
    (repo / "b.txt").write_text("a person's edit\n")
    assert lifecycle.stamp(ws.plumbing.context) == first, "the working tree is not the list"
    res = ws.propose(edit("a.txt", "beta\n", "BETA\n"))
    second = lifecycle.stamp(ws.plumbing.context)
    assert second != first
    ws.reject(res.proposal_id, by="Bob", reason="no")
    assert lifecycle.stamp(ws.plumbing.context) not in (first, second)


def test_head_and_person_read_the_repository(repo: Path, ws: Workspace) -> None:
    commit, summary = lifecycle.head(ws.plumbing.context, WORK)
    assert commit == head(repo) and summary == git(repo, "log", "-1", "--format=%s").strip()
    assert lifecycle.head(ws.plumbing.context, "refs/heads/none") == ("", "")
    git(repo, "config", "user.name", "Pat Person")
    git(repo, "config", "user.email", "pat@example.com")
    assert lifecycle.person(Workspace.open(repo, mode="review").plumbing.context) == (
        "Pat Person <pat@example.com>"
    )


# -- undo and log -------------------------------------------------------------------------------


def test_undo_reverts_the_last_gitpatch_commits_one_by_one(repo: Path) -> None:
    ws = Workspace.open(repo)
    base = head(repo)
    one = ws.propose(edit("a.txt", "alpha\n", "ALPHA\n"))
    (repo / "b.txt").write_text("person\n")
    git(repo, "commit", "-q", "-am", "a person's commit is not undone")
    two = ws.propose(edit("src/c.py", "x = 1\n", "x = 2\n"))

    first = ws.undo()
    assert first.status == "undone" and first.proposal_id == two.proposal_id
    assert (repo / "src/c.py").read_text() == "x = 1\n"
    assert note(repo, two.version)["status"] == "undone"
    assert note(repo, two.version)["undone_as"] == first.version
    second = ws.undo()
    assert second.proposal_id == one.proposal_id
    assert (repo / "a.txt").read_text() == "alpha\nbeta\ngamma\n"
    assert (repo / "b.txt").read_text() == "person\n"
    with pytest.raises(ProposalNotFound) as err:
        ws.undo()
    assert "nothing to undo" in err.value.message
    count = git(repo, "rev-list", "--count", f"{base}..{WORK}").strip()
    assert count == "5", "undo adds commits; history is never rewritten"
    assert_sound(repo)


def test_undo_reverts_an_approval_merge_as_a_whole(repo: Path, ws: Workspace) -> None:
    res = ws.propose(edit("a.txt", "gamma\n", "GAMMA\n"))
    (repo / "b.txt").write_text("one\nTWO\nthree\n")
    git(repo, "commit", "-q", "-am", "person edits b")
    ws.approve(res.proposal_id, by="Alice")
    merge = head(repo, WORK)
    done = ws.undo()
    assert (
        git(repo, "log", "-1", "--format=%(trailers:key=Gitpatch-Reverts,valueonly)").strip()
        == merge
    )
    assert (repo / "a.txt").read_text() == FILES["a.txt"]
    assert (repo / "b.txt").read_text() == "one\nTWO\nthree\n"
    assert note(repo, merge)["status"] == "undone"
    assert note(repo, res.version)["undone_as"] == done.version
    with pytest.raises(ProposalNotFound):
        ws.undo()
    assert_sound(repo)


def test_undo_finds_a_proposal_a_person_merged_with_plain_git(repo: Path, ws: Workspace) -> None:
    res = ws.propose(edit("a.txt", "alpha\n", "ALPHA\n"))
    (repo / "b.txt").write_text("one\nTWO\nthree\n")
    git(repo, "commit", "-q", "-am", "person edits b")
    git(repo, "merge", "-q", "--no-edit", "gitpatch/" + res.proposal_id)
    done = ws.undo()
    assert done.proposal_id == res.proposal_id
    assert (repo / "a.txt").read_text() == FILES["a.txt"]
    assert (repo / "b.txt").read_text() == "one\nTWO\nthree\n"
    assert_sound(repo)


def test_undo_refuses_over_local_changes_and_on_conflicts(repo: Path) -> None:
    ws = Workspace.open(repo)
    ws.propose(edit("a.txt", "alpha\n", "ALPHA\n"))
    (repo / "a.txt").write_text("local\n")
    before = snapshot(repo)
    with pytest.raises(GitpatchError) as err:
        ws.undo()
    assert err.value.code == "dirty_worktree" and err.value.details["lines"] == [[1, 1]]
    assert snapshot(repo) == before
    git(repo, "checkout", "--", "a.txt")
    (repo / "a.txt").write_text("ALPHA changed again\nbeta\ngamma\n")
    git(repo, "commit", "-q", "-am", "person rewrites the same line")
    with pytest.raises(GitpatchError) as err:
        ws.undo()
    assert err.value.code == "merge_conflict"


def test_log_lists_gitpatch_commits_with_tool_and_id(repo: Path) -> None:
    ws = Workspace.open(repo)
    one = ws.propose(edit("a.txt", "alpha\n", "ALPHA\n"))
    two = ws.apply("<<<<<<< SEARCH\ntwo\n=======\n2\n>>>>>>> REPLACE\n", path="b.txt")
    ws.undo()
    entries = ws.log()
    assert [e.tool for e in entries] == ["undo", "patch", "test"]
    assert [e.proposal_id for e in entries] == [two.proposal_id] * 2 + [one.proposal_id]
    assert entries[1].commit == two.version and entries[0].summary.startswith("Undo")
    assert entries[0].time.endswith("Z")
    assert [e.commit for e in ws.log(limit=1)] == [entries[0].commit]
    with pytest.raises(InvalidArguments):
        ws.log(limit=0)


def test_log_shows_recorded_local_changes(repo: Path) -> None:
    ws = Workspace.open(repo, dirty="record")
    (repo / "a.txt").write_text("alpha\nbeta\ngamma\nlocal\n")
    res = ws.propose(edit("a.txt", "local\n", "LOCAL\n"))
    tools = [(e.tool, e.proposal_id) for e in ws.log()]
    assert tools == [("test", res.proposal_id), ("record", res.proposal_id)]


# -- edges ----------------------------------------------------------------------------------------


def test_approving_twice_says_who_approved(repo: Path, ws: Workspace) -> None:
    res = ws.propose(edit("a.txt", "beta\n", "BETA\n"))
    ws.approve(res.proposal_id, by="Alice")
    before = snapshot(repo)
    with pytest.raises(ProposalClosed) as err:
        ws.approve(res.proposal_id.upper(), by="Bob")
    assert "approved by Alice" in err.value.message
    assert snapshot(repo) == before


def test_recorded_local_changes_are_approved_with_the_proposal(repo: Path) -> None:
    ws = Workspace.open(repo, mode="review", dirty="record")
    (repo / "a.txt").write_text("alpha\nbeta\ngamma\nlocal\n")
    res = ws.propose(edit("a.txt", "local\n", "LOCAL\n"))
    record = git(repo, "rev-parse", f"{res.version}^").strip()
    assert "Gitpatch-Record" in git(repo, "log", "-1", "--format=%B", record)
    shown = ws.show(res.proposal_id)  # the one account of it (the web page shows this too)
    assert [(r.commit, r.files) for r in shown.records] == [(record, ["a.txt"])]
    assert "+local" in shown.records[0].diff and shown.recorded_files == ["a.txt"]
    assert shown.recorded.endswith(shown.records[0].diff)
    ws.approve(res.proposal_id, by="Alice")
    got = note(repo, record)
    assert got["status"] == "approved" and got["tool"] == "record"
    assert got["id"] == res.proposal_id and got["merged_as"] == res.version
    assert [p.id for p in ws.proposals()] == [res.proposal_id], "a record is no proposal"
    assert_sound(repo)


def test_a_hand_made_proposal_branch_gets_a_fingerprint_on_rejection(
    repo: Path, ws: Workspace
) -> None:
    """No note: the target defaults to the workspace's, the fingerprint comes from the commit."""
    proposal = edit("b.txt", "two\n", "TWO\n")
    (repo / "b.txt").write_text("one\nTWO\nthree\n")
    blob = git(repo, "hash-object", "-w", "b.txt").strip()
    git(repo, "checkout", "--", "b.txt")
    tree = _tree_with(repo, head(repo), "b.txt", blob)
    commit = git(repo, "commit-tree", tree, "-p", head(repo), "-m", "by hand").strip()
    git(repo, "update-ref", "refs/heads/gitpatch/00000000abcd", commit)
    assert ws.show("00000000abcd").info.target == WORK
    ws.reject("00000000abcd", by="Bob", reason="no")
    with pytest.raises(ProposalRejected):
        ws.propose(proposal)
    assert_sound(repo)


def _tree_with(repo: Path, commit: str, path: str, blob: str) -> str:
    listing = git(repo, "ls-tree", commit)
    lines = [ln for ln in listing.splitlines() if not ln.endswith(f"\t{path}")]
    lines.append(f"100644 blob {blob}\t{path}")
    out = subprocess.run(
        ["git", "mktree"], cwd=repo, input="\n".join(lines) + "\n", capture_output=True, text=True
    )
    return out.stdout.strip()


def test_undo_on_a_protected_branch_is_a_persons_approved_act(tmp_path: Path) -> None:
    repo = review_repo(tmp_path / "repo", branch="main")
    ws = Workspace.open(repo, mode="review")
    res = ws.propose(edit("a.txt", "beta\n", "BETA\n"))
    ws.approve(res.proposal_id, by="Alice")
    done = ws.undo()
    assert done.branch == MAIN and (repo / "a.txt").read_text() == FILES["a.txt"]
    got = note(repo, done.version)
    assert got["tool"] == "undo" and got["status"] == "approved" and got["reverts"] == res.version
    assert [p.id for p in ws.proposals()] == [res.proposal_id]
    assert ws.proposals()[0].status == "undone"
    assert_sound(repo)


def test_show_and_list_a_session(tmp_path: Path) -> None:
    repo = review_repo(tmp_path / "repo", branch="main")
    agent = Workspace.open(repo)
    assert [p.id for p in agent.proposals()] == [], "an empty session is not listed"
    agent.propose(edit("a.txt", "alpha\n", "ALPHA\n"))
    detail = agent.show("agent")
    assert detail.info.status == "applied" and detail.info.branch == SESSION
    assert "+ALPHA" in detail.diff and detail.stats["files"] == 1
    assert detail.info.base == head(repo, MAIN)


def test_two_people_approving_at_once_merge_it_exactly_once(repo: Path) -> None:
    """Whatever the interleaving, one approval wins and the other is told it is closed."""
    res = Workspace.open(repo, mode="review").propose(edit("a.txt", "beta\n", "BETA\n"))
    outcomes: list[str] = []

    def approve_as(name: str) -> None:
        ws = Workspace.open(repo, mode="review")  # one Repository object per thread
        try:
            ws.approve(res.proposal_id, by=name)
            outcomes.append("approved")
        except ProposalClosed:
            outcomes.append("closed")

    threads = [threading.Thread(target=approve_as, args=(n,)) for n in ("Alice", "Bob")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["approved", "closed"]
    assert head(repo, WORK) == res.version and not has_ref(repo, res.branch)
    assert note(repo, res.version)["approved_by"] in ("Alice", "Bob")
    assert_sound(repo)


def test_both_sides_editing_one_file_apart_merge_by_content(repo: Path, ws: Workspace) -> None:
    res = ws.propose(edit("a.txt", "alpha\n", "ALPHA\n"))
    (repo / "a.txt").write_text("alpha\nbeta\nGAMMA\n")
    git(repo, "commit", "-q", "-am", "person edits the last line")
    ws.approve(res.proposal_id, by="Alice")
    assert (repo / "a.txt").read_text() == "ALPHA\nbeta\nGAMMA\n"
    assert git(repo, "show", f"{WORK}:a.txt") == "ALPHA\nbeta\nGAMMA\n"
    ws.undo()
    assert (repo / "a.txt").read_text() == "alpha\nbeta\nGAMMA\n"
    assert_sound(repo)


def test_undo_merges_by_content_when_the_file_changed_since(repo: Path) -> None:
    ws = Workspace.open(repo)
    ws.propose(edit("a.txt", "alpha\n", "ALPHA\n"))
    (repo / "a.txt").write_text("ALPHA\nbeta\nGAMMA\n")
    git(repo, "commit", "-q", "-am", "person edits the last line")
    ws.undo()
    assert (repo / "a.txt").read_text() == "alpha\nbeta\nGAMMA\n"
    assert_sound(repo)


def test_approving_into_a_branch_not_checked_out_leaves_the_disk_alone(repo: Path) -> None:
    git(repo, "branch", "side")
    ws = Workspace.open(repo, mode="review", branch="side")
    res = ws.propose(edit("a.txt", "alpha\n", "ALPHA\n"))
    done = ws.approve(res.proposal_id, by="Alice")
    assert done.branch == "refs/heads/side" and head(repo, "side") == res.version
    assert (repo / "a.txt").read_text() == FILES["a.txt"]
    assert git(repo, "show", "side:a.txt") == "ALPHA\nbeta\ngamma\n"
    assert_sound(repo)
