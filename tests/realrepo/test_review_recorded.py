"""Review mode shows the person's recorded uncommitted work apart from the agent's change."""

from __future__ import annotations

from pathlib import Path

from gitpatch import Workspace
from tests.gitkit import git
from tests.realrepo.kit import edit, fsck, make_repo, status


def test_show_marks_the_recorded_part_and_approval_lands_exactly_that(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "one\ntwo\n", "b.txt": "bee\n"})
    (repo / "a.txt").write_text("one\ntwo\nperson's line\n")
    ws = Workspace.open(repo, "review", dirty="record")
    res = ws.propose(edit("a.txt", "one", "ONE"))
    assert res.recorded == ["a.txt"] and "recorded in a commit of their own" in res.message
    shown = ws.show(res.proposal_id)
    assert shown.recorded_files == ["a.txt"]
    assert "+person's line" in shown.recorded and "uncommitted work" in shown.recorded
    assert "+ONE" in shown.diff and "+person's line" not in shown.diff
    ws.approve(res.proposal_id, by="Pat")
    assert (repo / "a.txt").read_text() == "ONE\ntwo\nperson's line\n"
    assert git(repo, "log", "--format=%s", "-3").splitlines()[1].startswith("Record")
    assert status(repo) == ""
    fsck(repo)


def test_nothing_recorded_shows_empty(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "one\n"})
    ws = Workspace.open(repo, "review")
    res = ws.propose(edit("a.txt", "one", "ONE"))
    shown = ws.show(res.proposal_id)
    assert shown.recorded == "" and shown.recorded_files == []
