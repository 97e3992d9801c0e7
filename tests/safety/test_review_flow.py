"""The review flow end to end, checked with the real git binary after every scenario.

propose -> proposals -> show -> approve (fast-forward, and 3-way after the target moved);
propose -> reject (ref gone, note kept, the same change refused unless it is a revision); undo;
atomicity of a multi-file proposal that fails on its last file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitpatch.core.model import AddFile, Proposal, Replace, UpdateFile
from gitpatch.errors import GitpatchError
from gitpatch.porcelain.workspace import Workspace
from tests.gitkit import git, head, make_repo, run_git, write_files
from tests.safety.proofkit import (
    assert_fsck_clean,
    assert_status_clean,
    disk_files,
    note_json,
    proposal_trailer,
    refs_snapshot,
    tree_files,
)

MAIN = "refs/heads/main"
FILES = {
    "a.txt": b"alpha\nbeta\ngamma\n",
    "b.txt": b"one\ntwo\nthree\n",
    "src/c.py": b"def f():\n    return 1\n",
}
BRANCH = "main"


def _edit(path: str, old: str, new: str) -> Proposal:
    op = UpdateFile(path=path, edits=(Replace(old=old, new=new),))
    return Proposal(operations=(op,), format="patch_resource", tool="proof")


def _note(repo: Path, commit: str) -> dict[str, object]:
    text = note_json(repo, commit)
    assert text, f"no note on {commit} in refs/notes/gitpatch"
    data = json.loads(text)
    assert isinstance(data, dict)
    return data


def _after_scenario(repo: Path, *paths: str) -> None:
    """What every scenario ends with: fsck clean and ``git log --stat`` naming the paths."""
    assert_fsck_clean(repo)
    stat = git(repo, "log", "--stat", "--all")
    for path in paths:
        assert path in stat, f"git log --stat does not mention {path}:\n{stat}"


def _ref_exists(repo: Path, ref: str) -> bool:
    return run_git(repo, "show-ref", "--verify", "--quiet", ref).returncode == 0


def test_propose_list_show_approve_fast_forward(repo: Path) -> None:
    """A reviewed proposal touches nothing until approved, then fast-forwards the target."""
    base = head(repo)
    ws = Workspace.open(str(repo), mode="review")
    res = ws.propose(_edit("a.txt", "beta\n", "BETA\n"))
    assert res.status == "proposed" and res.mode == "review"
    assert res.branch == f"refs/heads/gitpatch/{res.proposal_id}"
    assert res.target == MAIN and res.base == base
    assert len(res.proposal_id) == 12 and int(res.proposal_id, 16) >= 0
    assert head(repo, res.branch) == res.version
    assert head(repo, MAIN) == base, "review mode must not move the target"
    assert disk_files(repo) == FILES, "review mode must not touch the working tree"
    assert_status_clean(repo)
    assert proposal_trailer(repo, res.version) == res.proposal_id
    note = _note(repo, res.version)
    assert note["status"] == "proposed" and note["id"] == res.proposal_id
    assert note["target"] == MAIN and note["base"] == base

    listed = {p.id: p for p in ws.proposals()}
    assert listed[res.proposal_id].status == "proposed"
    assert listed[res.proposal_id].files == ["a.txt"]
    detail = ws.show(res.proposal_id)
    assert "-beta" in detail.diff and "+BETA" in detail.diff
    assert detail.stats.get("insertions") == 1 and detail.stats.get("deletions") == 1

    done = ws.approve(res.proposal_id, by="Alice Reviewer")
    assert done.status == "approved"
    assert head(repo, MAIN) == res.version, "an approval with no new target commit fast-forwards"
    assert not _ref_exists(repo, res.branch), "the proposal ref outlives its approval"
    assert disk_files(repo) == {**FILES, "a.txt": b"alpha\nBETA\ngamma\n"}
    assert_status_clean(repo)
    note = _note(repo, res.version)
    assert note["status"] == "approved" and note["approved_by"] == "Alice Reviewer"
    assert res.proposal_id not in {p.id for p in ws.proposals() if p.status == "proposed"}
    _after_scenario(repo, "a.txt")


def test_approve_three_way_after_target_moved(repo: Path) -> None:
    """The target moved (a person committed with git): approval merges both, on disk too."""
    ws = Workspace.open(str(repo), mode="review")
    res = ws.propose(_edit("a.txt", "gamma\n", "GAMMA\n"))
    write_files(repo, {"b.txt": b"one\nTWO\nthree\n"})
    git(repo, "commit", "-q", "-am", "person edits b")
    moved = head(repo, MAIN)

    ws.approve(res.proposal_id, by="Alice Reviewer")
    merged = head(repo, MAIN)
    parents = git(repo, "rev-list", "--parents", "-n", "1", merged).split()[1:]
    assert parents == [moved, res.version], "a 3-way approval is a merge of target and proposal"
    want = {**FILES, "a.txt": b"alpha\nbeta\nGAMMA\n", "b.txt": b"one\nTWO\nthree\n"}
    assert tree_files(repo, MAIN) == want
    assert disk_files(repo) == want
    assert_status_clean(repo)
    note = _note(repo, res.version)
    assert note["status"] == "approved" and note.get("merged_as") == merged
    _after_scenario(repo, "a.txt", "b.txt")


def test_approve_conflict_changes_nothing(repo: Path) -> None:
    """Target and proposal changed the same line: merge_conflict, and nothing moves."""
    ws = Workspace.open(str(repo), mode="review")
    res = ws.propose(_edit("a.txt", "beta\n", "proposal beta\n"))
    write_files(repo, {"a.txt": b"alpha\nperson beta\ngamma\n"})
    git(repo, "commit", "-q", "-am", "person edits a")
    refs, disk = refs_snapshot(repo), disk_files(repo)

    with pytest.raises(GitpatchError) as err:
        ws.approve(res.proposal_id, by="Alice Reviewer")
    assert err.value.code == "merge_conflict"
    assert "a.txt" in str(err.value)
    assert refs_snapshot(repo) == refs and disk_files(repo) == disk
    assert _note(repo, res.version)["status"] == "proposed"
    assert_status_clean(repo)
    _after_scenario(repo, "a.txt")


def test_reject_removes_ref_keeps_note_and_refuses_the_same_change(repo: Path) -> None:
    """Rejecting deletes the proposal ref, keeps a note and refuses the identical change again."""
    base = head(repo)
    ws = Workspace.open(str(repo), mode="review")
    proposal = _edit("b.txt", "two\n", "deux\n")
    res = ws.propose(proposal)
    done = ws.reject(res.proposal_id, by="Bob Reviewer", reason="keep it in English")
    assert done.status == "rejected"
    assert not _ref_exists(repo, res.branch)
    assert head(repo, MAIN) == base and disk_files(repo) == FILES

    shown = run_git(repo, "notes", "--ref", "gitpatch", "show", res.version)
    assert shown.returncode == 0, "the note must survive the rejection"
    note = json.loads(shown.stdout)
    assert note["status"] == "rejected" and note["rejected_by"] == "Bob Reviewer"
    assert note["reason"] == "keep it in English"
    fingerprint = note["fingerprint"]
    assert head(repo, f"refs/gitpatch/rejected/{fingerprint}") == res.version

    for again in (
        lambda: ws.reject(res.proposal_id, by="Bob Reviewer", reason="twice"),
        lambda: ws.approve(res.proposal_id, by="Bob Reviewer"),
    ):
        with pytest.raises(GitpatchError) as err:
            again()
        assert err.value.code == "proposal_closed"
    with pytest.raises(GitpatchError) as err:
        ws.approve("0123456789ab", by="Bob Reviewer")
    assert err.value.code == "proposal_not_found"

    refs = refs_snapshot(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(proposal)
    assert err.value.code == "proposal_rejected"
    assert refs_snapshot(repo) == refs
    revised = ws.propose(proposal, revision=True)
    assert revised.status == "proposed" and revised.proposal_id != res.proposal_id
    assert _note(repo, revised.version).get("revision") is True
    assert_status_clean(repo)
    _after_scenario(repo, "b.txt")


def test_undo_reverts_the_last_gitpatch_commit(tmp_path: Path) -> None:
    """Undo adds a commit that restores the files; history is kept, not rewritten."""
    repo = make_repo(tmp_path / "repo", FILES, branch="work")
    base = head(repo)
    ws = Workspace.open(str(repo))
    res = ws.propose(_edit("src/c.py", "return 1\n", "return 2\n"))
    assert res.status == "applied" and head(repo, "refs/heads/work") == res.version
    assert (repo / "src/c.py").read_bytes() == b"def f():\n    return 2\n"

    ws.undo()
    tip = head(repo, "refs/heads/work")
    assert git(repo, "rev-list", "--count", f"{base}..{tip}").strip() == "2"
    assert git(repo, "rev-parse", f"{tip}^").strip() == res.version
    assert tree_files(repo, tip) == FILES and disk_files(repo) == FILES
    assert_status_clean(repo)
    assert _note(repo, res.version)["status"] == "undone"
    _after_scenario(repo, "src/c.py")


def test_auto_mode_on_protected_branch_lands_on_a_session(repo: Path) -> None:
    """On protected main, auto mode lands on the session branch; approving it merges to main."""
    base = head(repo)
    ws = Workspace.open(str(repo))
    res = ws.propose(_edit("a.txt", "alpha\n", "ALPHA\n"))
    session = "refs/heads/gitpatch/session/agent"
    assert res.branch == session and session in res.message
    assert head(repo, MAIN) == base, "an agent commit landed on a protected branch"
    assert git(repo, "symbolic-ref", "HEAD").strip() == "refs/heads/main", "HEAD was switched"
    assert ws.plumbing.worktree is None  # an edit alone makes no worktree: made when first needed
    ws.plumbing.session_worktree()
    assert ws.plumbing.worktree is not None and ws.plumbing.worktree.root != repo
    assert (ws.plumbing.worktree.root / "a.txt").read_bytes() == b"ALPHA\nbeta\ngamma\n"
    assert (repo / "a.txt").read_bytes() == b"alpha\nbeta\ngamma\n"
    assert_status_clean(repo)
    assert_status_clean(ws.plumbing.worktree.root)

    Workspace.open(str(repo), mode="review").approve("agent", by="Alice Reviewer")
    assert (repo / "a.txt").read_bytes() == b"ALPHA\nbeta\ngamma\n"
    assert tree_files(repo, MAIN)["a.txt"] == b"ALPHA\nbeta\ngamma\n"
    assert git(repo, "merge-base", "--is-ancestor", res.version, MAIN) == ""
    assert_status_clean(repo)
    _after_scenario(repo, "a.txt")


@pytest.mark.parametrize("mode", ["auto", "review"])
def test_three_file_proposal_failing_on_the_third_changes_nothing(
    tmp_path: Path, mode: str
) -> None:
    """The third file cannot be edited: no file, ref, index entry or note changes."""
    repo = make_repo(tmp_path / "repo", FILES, branch="work")
    ws = Workspace.open(str(repo), mode=mode)  # type: ignore[arg-type]
    ops = (
        UpdateFile(path="a.txt", edits=(Replace(old="alpha\n", new="ALPHA\n"),)),
        AddFile(path="new/d.txt", content="dee\n"),
        UpdateFile(path="b.txt", edits=(Replace(old="not in the file\n", new="x\n"),)),
    )
    refs, disk = refs_snapshot(repo), disk_files(repo)
    index = (repo / ".git" / "index").read_bytes()
    with pytest.raises(GitpatchError) as err:
        ws.propose(Proposal(operations=ops, format="patch_resource", tool="proof"))
    assert "b.txt" in str(err.value)
    assert refs_snapshot(repo) == refs, "a ref (branch, proposal or notes) moved"
    assert disk_files(repo) == disk, "a file changed on disk"
    assert (repo / ".git" / "index").read_bytes() == index, "the index changed"
    assert not (repo / "new").exists()
    assert_status_clean(repo)
    _after_scenario(repo, "a.txt")


def test_uncommitted_edit_is_recorded_before_the_agent_edit(tmp_path: Path) -> None:
    """A person's uncommitted edit becomes its own commit; the agent's diff holds only its own."""
    repo = make_repo(tmp_path / "repo", FILES, branch="work")
    base = head(repo)
    person = b"alpha\nbeta (person)\ngamma\n"
    write_files(repo, {"a.txt": person})
    ws = Workspace.open(str(repo), dirty="record")
    res = ws.propose(_edit("a.txt", "gamma\n", "GAMMA\n"))

    record = git(repo, "rev-parse", f"{res.version}^").strip()
    assert git(repo, "rev-parse", f"{record}^").strip() == base
    fmt = "--format=%(trailers:key=Gitpatch-Record,valueonly)"
    assert git(repo, "log", "-1", fmt, record).strip() == res.proposal_id
    assert tree_files(repo, record)["a.txt"] == person
    agent_diff = git(repo, "diff", record, res.version)
    assert "+GAMMA" in agent_diff and "-gamma" in agent_diff
    assert "+beta (person)" not in agent_diff and "-beta" not in agent_diff
    assert (repo / "a.txt").read_bytes() == b"alpha\nbeta (person)\nGAMMA\n"
    assert_status_clean(repo)
    _after_scenario(repo, "a.txt")


def test_dirty_refuse_changes_nothing(tmp_path: Path) -> None:
    """With dirty='refuse' an uncommitted edit under the proposal is dirty_worktree."""
    repo = make_repo(tmp_path / "repo", FILES, branch="work")
    write_files(repo, {"a.txt": b"alpha\nbeta (person)\ngamma\n"})
    ws = Workspace.open(str(repo), dirty="refuse")
    refs, disk = refs_snapshot(repo), disk_files(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(_edit("a.txt", "gamma\n", "GAMMA\n"))
    assert err.value.code == "dirty_worktree" and "a.txt" in str(err.value)
    assert refs_snapshot(repo) == refs and disk_files(repo) == disk
    _after_scenario(repo, "a.txt")
