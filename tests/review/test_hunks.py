"""Review at the grain of hunks (issue 27): stable hunk ids, verdicts per hunk, a person's own
edits, line comments, and what the agent is told; on real repositories, checked with git."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gitpatch.core.model import Proposal, Replace, UpdateFile
from gitpatch.doors.cli import main
from gitpatch.errors import GitpatchError, InvalidArguments, MergeConflict
from gitpatch.porcelain.workspace import Workspace
from tests.gitkit import git, make_repo, status_porcelain
from tests.safety.proofkit import fsck_problems

LINES = "".join(f"line {i}\n" for i in range(1, 41))
PERSON = "Pat Person <pat@example.com>"
C_PY = "c = 1\nd = 2\ne = 3\nf = 4\n"


def three(path: str = "a.py") -> Proposal:
    """One proposal with three hunks in ``path``: lines 2, 20 and 38."""
    edits = (
        Replace("line 2\n", "line two\n"),
        Replace("line 20\n", "line twenty\n"),
        Replace("line 38\n", "line 38b\n"),
    )
    return Proposal((UpdateFile(path, edits),), "patch_resource", tool="patch")


def edit(path: str, old: str, new: str) -> Proposal:
    return Proposal((UpdateFile(path, (Replace(old, new),)),), "patch_resource", tool="patch")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", {"a.py": LINES, "b.py": "x = 1\n", "c.py": C_PY}, "main")


def agent(repo: Path) -> Workspace:
    return Workspace.open(repo, mode="review", session="bot")


def person(repo: Path) -> Workspace:
    return Workspace.open(repo, mode="review")


def state(repo: Path) -> str:
    """Every ref and the notes, as git lists them (what a refused call must leave alone)."""
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)")


def cli(repo: Path, *args: str, input: str | None = None, env: dict[str, str] | None = None) -> Any:
    result = CliRunner(env={"NO_COLOR": "1", **(env or {})}).invoke(
        main, ["-C", str(repo), *args], input=input, catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return result.output


def ids(ws: Workspace, pid: str) -> list[tuple[str, int, str]]:
    return [(h.id, h.number, h.verdict) for h in ws.show(pid).hunks]


# -- ids ------------------------------------------------------------------------------------------


def test_hunks_are_numbered_per_file_and_across_and_stay_so(repo: Path) -> None:
    ws = agent(repo)
    pid = ws.propose(three()).proposal_id
    ws.propose(
        Proposal(
            (
                UpdateFile("b.py", (Replace("x = 1\n", "x = 2\n"),)),
                UpdateFile("c.py", (), move_to="d.py"),
            ),
            "patch_resource",
            tool="patch",
        )
    )
    first = ids(person(repo), pid)
    assert first == [("a.py:1", 1, "open"), ("a.py:2", 2, "open"), ("a.py:3", 3, "open")]
    assert ids(person(repo), pid) == first  # the same on every run
    detail = person(repo).show(pid)
    assert detail.hunks[1].lines[3:5] == ["-line 20", "+line twenty"]
    assert detail.hunks[1].new_start == 17
    # the CLI prints the same names over the same lines
    shown = cli(repo, "show", pid)
    assert "# [2] a.py:2 open" in shown
    assert shown.index("# [2] a.py:2") < shown.index("+line twenty") < shown.index("# [3] a.py:3")


def test_a_whole_file_add_delete_or_move_is_one_hunk(repo: Path) -> None:
    ws = agent(repo)
    patch = (
        "*** Begin Patch\n*** Add File: new.py\n+one\n+two\n*** Delete File: b.py\n"
        "*** Update File: c.py\n*** Move to: d.py\n@@\n-c = 1\n+c = 0\n*** End Patch\n"
    )
    pid = ws.apply(patch).proposal_id
    hunks = person(repo).show(pid).hunks
    kinds = [(h.id, h.kind) for h in hunks]
    assert kinds == [("b.py:1", "delete"), ("d.py:1", "move"), ("new.py:1", "add")]
    assert [h.number for h in hunks] == [1, 2, 3]
    # a whole-file hunk lands whole: here the move alone
    person(repo).approve(pid, by=PERSON, hunks="d.py:1")
    assert git(repo, "show", "main:d.py") == C_PY.replace("c = 1", "c = 0")
    assert git(repo, "ls-tree", "--name-only", "main").split() == ["a.py", "b.py", "d.py"]


# -- approve and reject by hunk -------------------------------------------------------------------


def test_approving_hunks_lands_exactly_them_as_one_agent_commit(repo: Path) -> None:
    (repo / "b.py").write_text("x = 'person'\n")  # the person's uncommitted work elsewhere
    ws = agent(repo)
    pid = ws.propose(three()).proposal_id
    before = git(repo, "rev-parse", "main").strip()
    result = person(repo).approve(pid, by=PERSON, hunks="1,a.py:3")
    assert result.status == "approved"
    landed = git(repo, "show", "main:a.py")
    assert landed == LINES.replace("line 2\n", "line two\n").replace("line 38\n", "line 38b\n")
    assert git(repo, "rev-parse", "main^").strip() == before  # one commit
    made = git(repo, "log", "-1", "--format=%an|%(trailers:key=Gitpatch-Session)", "main")
    assert made.startswith("agent (gitpatch session bot)|Gitpatch-Session: bot")
    note = json.loads(git(repo, "notes", "--ref", "gitpatch", "show", "main"))
    assert note["approved_by"] == PERSON and note["hunks"] == ["a.py:1", "a.py:3"]
    # the rest stays open as the same proposal, built on what landed, its number kept
    main_tip = git(repo, "rev-parse", "main").strip()
    assert git(repo, "rev-parse", f"gitpatch/{pid}^").strip() == main_tip
    assert ids(person(repo), pid) == [
        ("a.py:1", 1, "approved"),
        ("a.py:2", 2, "open"),
        ("a.py:3", 3, "approved"),
    ]
    assert (repo / "a.py").read_text() == landed  # the checkout followed
    assert (repo / "b.py").read_text() == "x = 'person'\n"  # and kept the person's work
    assert status_porcelain(repo) == " M b.py\n"
    assert fsck_problems(repo) == ""
    # approving the last open hunk is the whole verdict: main fast-forwards, the ref goes
    person(repo).approve(pid, by=PERSON, hunks="2")
    assert git(repo, "show", "main:a.py") == three_applied()
    assert git(repo, "for-each-ref", f"refs/heads/gitpatch/{pid}") == ""


def three_applied() -> str:
    return (
        LINES.replace("line 2\n", "line two\n")
        .replace("line 20\n", "line twenty\n")
        .replace("line 38\n", "line 38b\n")
    )


def test_the_target_moved_meanwhile_is_merged_with_the_chosen_hunks(repo: Path) -> None:
    pid = agent(repo).propose(three()).proposal_id
    (repo / "a.py").write_text(LINES.replace("line 30\n", "line thirty\n"))
    git(repo, "commit", "-qam", "person's own change")
    person(repo).approve(pid, by=PERSON, hunks="2")
    assert git(repo, "show", "main:a.py") == LINES.replace("line 20\n", "line twenty\n").replace(
        "line 30\n", "line thirty\n"
    )
    person(repo).approve(pid, by=PERSON)
    assert git(repo, "show", "main:a.py") == three_applied().replace("line 30\n", "line thirty\n")
    assert fsck_problems(repo) == ""


def test_rejecting_hunks_keeps_the_rest_open_and_the_target_unchanged(repo: Path) -> None:
    ws = agent(repo)
    pid = ws.propose(three()).proposal_id
    main = git(repo, "rev-parse", "main").strip()
    result = person(repo).reject(pid, by=PERSON, hunks="2", reason="keep line 20 as it is")
    assert result.status == "rejected"
    assert git(repo, "rev-parse", "main").strip() == main
    assert git(repo, "show", f"gitpatch/{pid}:a.py") == three_applied().replace(
        "line twenty\n", "line 20\n"
    )
    shown = {h.id: h for h in person(repo).show(pid).hunks}
    assert shown["a.py:2"].verdict == "rejected"
    assert shown["a.py:2"].reason == "keep line 20 as it is"
    assert "+line twenty" in shown["a.py:2"].lines
    # the agent is told which hunk, its lines and the reason, once
    told = "\n".join(ws.plumbing.notices())
    assert "Hunk 2 (a.py:2) of proposal" in told and "keep line 20 as it is" in told
    assert "+line twenty" in told and f"revises='{pid}'" in told
    assert ws.plumbing.notices() == []
    person(repo).approve(pid, by=PERSON)
    assert git(repo, "show", "main:a.py") == three_applied().replace("line twenty\n", "line 20\n")


@pytest.mark.parametrize(
    ("verb", "spec"),
    [
        ("approve", "7"),
        ("approve", "a.py:9"),
        ("reject", "b.py:1"),
        ("approve", ""),
        ("reject", "x"),
    ],
)
def test_a_hunk_that_is_not_open_is_refused_with_nothing_changed(
    repo: Path, verb: str, spec: str
) -> None:
    pid = agent(repo).propose(three()).proposal_id
    person(repo).reject(pid, by=PERSON, hunks="3", reason="no")
    before, disk = state(repo), (repo / "a.py").read_text()
    with pytest.raises(InvalidArguments) as err:
        if verb == "approve":
            person(repo).approve(pid, by=PERSON, hunks=spec)
        else:
            person(repo).reject(pid, by=PERSON, hunks=spec, reason="r")
    assert err.value.code == "invalid_arguments"
    assert state(repo) == before and (repo / "a.py").read_text() == disk
    if spec:
        assert "a.py:1" in (err.value.hint or "")
    with pytest.raises(InvalidArguments):
        person(repo).approve(pid, by=PERSON, hunks="3")  # decided already
    assert state(repo) == before


def test_hunks_of_a_session_or_of_a_stacked_proposal_are_refused(repo: Path) -> None:
    ws = agent(repo)
    low = ws.propose(edit("b.py", "x = 1", "x = 2")).proposal_id
    high = ws.propose(three()).proposal_id
    before = state(repo)
    for name in ("bot", high):
        with pytest.raises(InvalidArguments) as err:
            person(repo).approve(name, by=PERSON, hunks="1")
        assert err.value.code == "invalid_arguments"
    assert low in (err.value.hint or "")
    assert state(repo) == before


def test_a_conflict_with_the_target_refuses_with_nothing_changed(repo: Path) -> None:
    pid = agent(repo).propose(three()).proposal_id
    (repo / "a.py").write_text(LINES.replace("line 20\n", "line XX\n"))
    git(repo, "commit", "-qam", "person's own change to line 20")
    before = state(repo)
    with pytest.raises(MergeConflict):
        person(repo).approve(pid, by=PERSON, hunks="2")
    assert state(repo) == before and status_porcelain(repo) == ""


def test_the_gate_holds_for_a_hunk_commit_with_no_approval(repo: Path) -> None:
    """The landed commit passes the approval gate because its note says who approved it."""
    pid = agent(repo).propose(three()).proposal_id
    person(repo).approve(pid, by=PERSON, hunks="1")
    from gitpatch.store import Store
    from gitpatch.workspace import gate

    store = Store.open(repo)
    tip = store.ref_target("refs/heads/main")
    assert tip is not None
    assert gate.pending(store, store.info(tip).parents[0], tip) == []
    # without that note the same commit would be refused
    assert git(repo, "notes", "--ref", "gitpatch", "remove", "main") == ""
    assert [p.proposal for p in gate.pending(store, store.info(tip).parents[0], tip)] == [pid]


# -- stacks ---------------------------------------------------------------------------------------


def test_a_stack_above_re_bases_or_needs_revision_naming_the_lines(repo: Path) -> None:
    ws = agent(repo)
    pid = ws.propose(three()).proposal_id
    other = ws.propose(edit("b.py", "x = 1", "x = 2")).proposal_id
    same = ws.propose(edit("a.py", "line 21\n", "line 21b\n")).proposal_id
    result = person(repo).reject(pid, by=PERSON, hunks="2", reason="not 20")
    assert other in result.message and same in result.message
    # the proposal on another file is re-based on the new version
    assert (
        git(repo, "rev-parse", f"gitpatch/{other}^").strip()
        == git(repo, "rev-parse", f"gitpatch/{pid}").strip()
    )
    # the one changing a.py above the rejected lines needs a revision, the lines named
    assert git(repo, "for-each-ref", f"refs/heads/gitpatch/{same}") == ""
    listed = {p.id: p for p in person(repo).proposals()}
    assert listed[same].status == "needs_revision"
    assert "a.py lines 17-23" in listed[same].reason
    told = "\n".join(ws.plumbing.notices())
    assert f"Proposal {same} needs revision" in told and "a.py lines 17-23" in told
    assert f"Proposal {other} was re-based after hunks 2 (a.py:2) of it were rejected" in told
    assert fsck_problems(repo) == ""


# -- amend ----------------------------------------------------------------------------------------


def test_a_persons_edit_is_a_new_version_the_agent_is_shown(repo: Path) -> None:
    ws = agent(repo)
    pid = ws.propose(three()).proposal_id
    above = ws.propose(edit("b.py", "x = 1", "x = 2")).proposal_id
    files = person(repo).plumbing.proposal_files(pid)
    assert list(files) == ["a.py"]
    mine = files["a.py"].replace(b"line 38b\n", b"line 38 (Pat's)\n")
    result = person(repo).amend(pid, by=PERSON, files={"a.py": mine})
    assert result.status == "proposed" and "a.py line 38" in result.message
    assert git(repo, "show", f"gitpatch/{pid}:a.py").encode() == mine
    assert ids(person(repo), pid)[2] == ("a.py:3", 3, "open")  # the id survives the edit
    assert git(repo, "rev-parse", f"gitpatch/{above}^").strip() == result.version  # re-based
    detail = person(repo).show(pid)
    assert detail.amendments[0].where == ["a.py line 38"]
    assert "+line 38 (Pat's)" in detail.amendments[0].diff
    told = "\n".join(ws.plumbing.notices())
    assert "edited proposal" in told and "-line 38b" in told and "+line 38 (Pat's)" in told
    assert result.version in told
    # the agent's next edit builds on the person's version
    ws.propose(edit("a.py", "line 37\n", "line 37b\n"))
    top = ws.proposals()[0]
    assert "line 38 (Pat's)" in git(repo, "show", f"{top.commit}:a.py")


def test_amend_takes_a_patch_and_the_cli_runs_the_editor(repo: Path) -> None:
    pid = agent(repo).propose(three()).proposal_id
    patch = (
        "--- a/a.py\n+++ b/a.py\n@@ -19,3 +19,3 @@\n line 19\n-line twenty\n+line 20 (Pat)\n"
        " line 21\n"
    )
    person(repo).amend(pid, by=PERSON, patch=patch)
    assert "line 20 (Pat)\n" in git(repo, "show", f"gitpatch/{pid}:a.py")
    out = cli(repo, "amend", pid, env={"EDITOR": "sed -i s/line.two/line-2-by-editor/"})
    assert "Amended proposal" in out
    text = git(repo, "show", f"gitpatch/{pid}:a.py")
    assert "line-2-by-editor\n" in text and "line 20 (Pat)\n" in text
    assert len(person(repo).show(pid).amendments) == 2
    assert status_porcelain(repo) == ""  # the person's checkout never saw the scratch files


def test_an_edit_that_changes_nothing_is_refused(repo: Path) -> None:
    pid = agent(repo).propose(three()).proposal_id
    before = state(repo)
    with pytest.raises(InvalidArguments):
        person(repo).amend(pid, by=PERSON, files=person(repo).plumbing.proposal_files(pid))
    with pytest.raises(InvalidArguments):
        person(repo).amend(pid, by=PERSON)
    with pytest.raises(GitpatchError):
        person(repo).amend(pid, by=PERSON, patch="--- a/a.py\n+++ b/a.py\n@@\n-nope\n+no\n")
    assert state(repo) == before


# -- line comments --------------------------------------------------------------------------------


def test_a_line_comment_reaches_the_agent_with_the_line(repo: Path) -> None:
    ws = agent(repo)
    pid = ws.propose(three()).proposal_id
    out = cli(repo, "comment", pid, "--at", "a.py:20", "say why twenty")
    assert "Commented" in out
    comment = person(repo).show(pid).info.comments[0]
    assert (comment.path, comment.line, comment.line_text) == ("a.py", 20, "line twenty")
    told = "\n".join(ws.plumbing.notices())
    assert "a.py line 20 ('line twenty')" in told and "say why twenty" in told


@pytest.mark.parametrize("at", ["a.py:0", "a.py:41", "a.py", "nope.py:1", ":3"])
def test_a_line_comment_on_no_line_is_refused(repo: Path, at: str) -> None:
    pid = agent(repo).propose(three()).proposal_id
    before = state(repo)
    with pytest.raises(InvalidArguments) as err:
        person(repo).comment(pid, by=PERSON, text="hm", at=at)
    assert "a.py" in (err.value.hint or "")
    assert state(repo) == before


# -- revisions ------------------------------------------------------------------------------------


def test_a_partly_decided_proposal_can_be_revised(repo: Path) -> None:
    ws = agent(repo)
    pid = ws.propose(three()).proposal_id
    person(repo).approve(pid, by=PERSON, hunks="1")
    person(repo).reject(pid, by=PERSON, hunks="2", reason="twenty stays numeric")
    revision = ws.propose(edit("a.py", "line 20\n", "line 20  # 20\n"), revises=pid)
    # the revision stacks on what is still open of the proposal (hunk 3)
    assert (
        git(repo, "rev-parse", f"gitpatch/{revision.proposal_id}^").strip()
        == git(repo, "rev-parse", f"gitpatch/{pid}").strip()
    )
    assert person(repo).show(revision.proposal_id).info.revises == pid
    person(repo).approve(revision.proposal_id, by=PERSON)
    assert git(repo, "show", "main:a.py") == LINES.replace("line 2\n", "line two\n").replace(
        "line 20\n", "line 20  # 20\n"
    ).replace("line 38\n", "line 38b\n")


# -- the CLI and the page's API: the same steps ---------------------------------------------------


def test_the_cli_decides_hunks_and_says_so(repo: Path) -> None:
    pid = agent(repo).propose(three()).proposal_id
    out = cli(repo, "approve", pid, "--hunks", "a.py:1")
    assert "Approved hunks 1 (a.py:1)" in out and "stay open" in out
    out = cli(repo, "reject", pid, "--hunks", "2", "--reason", "no")
    assert "Rejected hunks 2 (a.py:2)" in out
    shown = json.loads(cli(repo, "--json", "show", pid))
    verdicts = [(h["id"], h["verdict"], h["reason"]) for h in shown["hunks"]]
    assert verdicts == [
        ("a.py:1", "approved", ""),
        ("a.py:2", "rejected", "no"),
        ("a.py:3", "open", ""),
    ]
    text = cli(repo, "show", pid)
    assert "# [2] a.py:2 rejected by" in text and ": no" in text


def test_the_page_api_takes_hunks_edits_and_line_comments(repo: Path) -> None:
    from tests.doors.web.webkit import client

    pid = agent(repo).propose(three()).proposal_id
    web, access = client(repo)
    auth = {"X-Gitpatch-Token": access.token}
    base = f"/api/proposals/{pid}"
    before = state(repo)
    bad = web.post(f"{base}/amend", json={"by": "Ada", "hunk": "a.py:3"}, headers=auth)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_arguments"
    nowhere = {"by": "Ada", "text": "x", "at": "a.py:99"}
    bad = web.post(f"{base}/comment", json=nowhere, headers=auth)
    assert bad.status_code == 400
    bad = web.post(f"{base}/reject", json={"by": "Ada", "hunks": "2"}, headers=auth)
    assert bad.status_code == 400  # a reason is required
    assert state(repo) == before
    ok = web.post(f"{base}/approve", json={"by": "Ada", "hunks": "1"}, headers=auth)
    assert ok.status_code == 200 and ok.json()["result"]["status"] == "approved"
    shown = web.get(base, headers=auth).json()
    edit = "\n".join(line[1:] for line in shown["hunks"][2]["lines"] if line[0] != "-")
    edit = edit.replace("line 38b", "line 38 (Ada)")
    ok = web.post(f"{base}/amend", json={"by": "Ada", "hunk": "a.py:3", "text": edit}, headers=auth)
    assert ok.status_code == 200, ok.text
    assert "line 38 (Ada)\nline 39\n" in git(repo, "show", f"gitpatch/{pid}:a.py")
    ok = web.post(f"{base}/comment", json={"by": "Ada", "text": "x", "at": "a.py:38"}, headers=auth)
    assert ok.json()["comment"]["line_text"] == "line 38 (Ada)"
    page = web.get(f"/p/{pid}", headers=auth).text
    assert 'data-hunk="a.py:2"' in page and 'data-hunk="a.py:3"' in page
    assert 'class="decided-hunk approved" data-hunk="a.py:1"' in page
    assert 'data-at="a.py:38"' in page and "line 38 (Ada)" in page


def test_a_stack_above_a_partly_approved_proposal_is_re_based_on_its_rest(repo: Path) -> None:
    ws = agent(repo)
    pid = ws.propose(three()).proposal_id
    above = ws.propose(edit("b.py", "x = 1", "x = 2")).proposal_id
    result = person(repo).approve(pid, by=PERSON, hunks="3")
    assert above in result.message
    rest = git(repo, "rev-parse", f"gitpatch/{pid}").strip()
    assert git(repo, "rev-parse", f"gitpatch/{above}^").strip() == rest
    main_tip = git(repo, "rev-parse", "main").strip()
    assert git(repo, "rev-parse", f"gitpatch/{pid}^").strip() == main_tip
    # approving the one above now lands the rest of the first beneath it, nothing twice
    person(repo).approve(above, by=PERSON)
    assert git(repo, "show", "main:a.py") == three_applied()
    assert git(repo, "show", "main:b.py") == "x = 2\n"
    assert git(repo, "log", "--format=%s", "main").splitlines()[:3] == [
        "patch: update b.py",
        "patch: update a.py",
        "patch: update a.py (hunks 3 (a.py:3))",
    ]
    assert fsck_problems(repo) == ""
