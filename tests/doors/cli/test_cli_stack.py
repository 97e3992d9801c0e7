"""A review-mode session's stack through the ``gitpatch`` binary: approving lands what a
proposal stacks on (named first), rejecting re-bases or marks needs_revision, comments."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch.errors import InvalidArguments
from gitpatch.formats import patch_resource
from gitpatch.porcelain import Workspace
from tests.doors.cli.clikit import gp, gp_json, gp_ok
from tests.gitkit import git, head

pytestmark = pytest.mark.slow  # the gitpatch console script in processes of its own


FILES = {"a.txt": "a1\na2\n", "b.txt": "b1\n", "c.txt": "c1\n"}


def _edit(ws: Workspace, path: str, old: str, new: str) -> str:
    edits = [{"old_string": old, "new_string": new}]
    return ws.apply(edits, path=path).proposal_id


def _stack(repo: Path) -> tuple[Workspace, list[str]]:
    """Four proposals of session ``bot``: a.txt, b.txt, a.txt again, c.txt."""
    ws = Workspace.open(repo, mode="review", session="bot")
    ids = [
        _edit(ws, "a.txt", "a1", "A1"),
        _edit(ws, "b.txt", "b1", "B1"),
        _edit(ws, "a.txt", "a2", "A2"),
        _edit(ws, "c.txt", "c1", "C1"),
    ]
    return ws, ids


def _parent(repo: Path, pid: str) -> str:
    return head(repo, f"gitpatch/{pid}^")


def _fsck(repo: Path) -> None:
    git(repo, "fsck", "--strict", "--no-progress")


def test_each_call_is_one_proposal_stacked_on_the_one_before(repo: Path) -> None:
    _ws, ids = _stack(repo)
    for below, above in zip(ids, ids[1:], strict=False):
        assert _parent(repo, above) == head(repo, f"gitpatch/{below}")
    assert gp_json(repo, "show", ids[2])["info"]["lands"] == ids[:2]
    text = gp_ok(repo, "show", ids[2], "--stat")
    assert f"stacked on open proposals {ids[0]}, {ids[1]}" in text and "session bot" in text
    listed = {p["id"]: p for p in gp_json(repo, "proposals")}
    assert listed[ids[3]]["lands"] == ids[:3] and listed[ids[0]]["lands"] == []
    table = gp_ok(repo, "proposals").splitlines()
    assert table[0].split()[-1] == "SESSION"
    row = next(line for line in table if line.startswith(ids[3]))
    assert row.endswith("bot (lands 3 beneath)")


def test_approving_a_proposal_lands_the_ones_beneath_it_and_says_so_first(repo: Path) -> None:
    _ws, ids = _stack(repo)
    before = head(repo, "work")
    out = gp(repo, "approve", ids[1], "--by", "Rev")
    assert out.returncode == 0, out.stderr
    assert f"also lands the open proposals beneath it: {ids[0]}" in out.stderr
    assert git(repo, "show", "work:a.txt") == "A1\na2\n"
    assert git(repo, "show", "work:b.txt") == "B1\n"
    assert head(repo, "work") != before
    refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/heads/gitpatch/")
    assert sorted(refs.split()) == sorted(f"refs/heads/gitpatch/{i}" for i in ids[2:])
    closed = {p["id"]: p for p in gp_json(repo, "proposals", "--all")}
    assert closed[ids[0]]["status"] == closed[ids[1]]["status"] == "approved"
    assert closed[ids[0]]["decided_by"] == "Rev"
    # what is left still stacks: approving the top lands the rest
    assert gp_json(repo, "show", ids[3])["info"]["lands"] == [ids[2]]
    _fsck(repo)


def test_approving_a_session_lands_its_whole_stack_as_one_commit_with_squash(repo: Path) -> None:
    _ws, ids = _stack(repo)
    before = head(repo, "work")
    out = gp(repo, "approve", "bot", "--squash", "--by", "Rev")
    assert out.returncode == 0, out.stderr
    assert f"lands proposals {', '.join(ids)}" in out.stderr
    assert git(repo, "rev-parse", "work^").strip() == before  # one commit on top
    assert git(repo, "show", "work:a.txt") == "A1\nA2\n"
    assert git(repo, "show", "work:c.txt") == "C1\n"
    assert git(repo, "for-each-ref", "refs/heads/gitpatch/") == ""
    assert head(repo, f"refs/gitpatch/squashed/{ids[-1]}") != head(repo, "work")
    git(repo, "gc", "-q", "--prune=now")
    assert "+A1" in gp_json(repo, "show", ids[0])["diff"]  # still shown after a gc
    _fsck(repo)


def test_rejecting_one_rebases_the_later_ones_that_do_not_depend_on_it(repo: Path) -> None:
    _ws, ids = _stack(repo)
    gp_ok(repo, "reject", ids[1], "--reason", "not b", "--by", "Rev")
    # a.txt again and c.txt change no file of the rejected b.txt proposal: re-based without it
    assert _parent(repo, ids[2]) == head(repo, f"gitpatch/{ids[0]}")
    assert _parent(repo, ids[3]) == head(repo, f"gitpatch/{ids[2]}")
    assert git(repo, "show", f"gitpatch/{ids[3]}:b.txt") == "b1\n"
    assert git(repo, "show", f"gitpatch/{ids[3]}:a.txt") == "A1\nA2\n"
    assert gp_json(repo, "show", ids[3])["info"]["lands"] == [ids[0], ids[2]]
    _fsck(repo)


def test_rejecting_one_marks_the_later_ones_on_its_files_needs_revision(repo: Path) -> None:
    ws, ids = _stack(repo)
    assert (
        ws.plumbing.notices() == []
    )  # nothing yet; the next call reads only the notes changed since
    out = gp_ok(repo, "reject", ids[0], "--reason", "keep a1", "--by", "Rev")
    assert f"{ids[2]} change the same files and now need a revision" in out
    assert git(repo, "rev-parse", "--verify", "-q", f"gitpatch/{ids[2]}", check=False) == ""
    shown = gp_json(repo, "show", ids[2])["info"]
    assert shown["status"] == "needs_revision" and "keep a1" in shown["reason"]
    assert ids[0] in shown["reason"]
    # b.txt and c.txt are re-based onto the target; nothing is dropped
    assert _parent(repo, ids[1]) == head(repo, "work")
    assert git(repo, "show", f"gitpatch/{ids[3]}:a.txt") == "a1\na2\n"
    lines = ws.plumbing.notices()
    assert any(f"Proposal {ids[0]} was rejected by Rev" in line for line in lines)
    assert any(f"Proposal {ids[2]} needs revision" in line for line in lines)
    assert any(f"Proposal {ids[1]} was re-based" in line for line in lines)
    assert ws.plumbing.notices() == []  # each is told once
    _fsck(repo)


def test_a_comment_reaches_show_and_the_agents_next_notice(repo: Path) -> None:
    ws, ids = _stack(repo)
    gp_ok(repo, "comment", ids[1], "use B2 instead", "--request-changes", "--by", "Rev")
    (note,) = gp_json(repo, "show", ids[1])["info"]["comments"]
    assert note["by"] == "Rev" and note["text"] == "use B2 instead"
    assert note["kind"] == "request_changes" and note["at"]
    assert f"Rev requested changes on proposal {ids[1]}" in ws.plumbing.notices()[0]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["comment", "0123456789ab", "x"], "proposal_not_found"),
        (["comment", "bot", "x"], "proposal_not_found"),
        (["comment", "ID", "   "], "invalid_arguments"),
    ],
)
def test_a_bad_comment_is_refused_and_changes_nothing(
    repo: Path, args: list[str], code: str
) -> None:
    _ws, ids = _stack(repo)
    args = [ids[0] if a == "ID" else a for a in args]
    refs = git(repo, "for-each-ref")
    out = gp(repo, *args)
    assert out.returncode == 1 and out.stderr.startswith(f"{code}:"), out.stderr
    assert git(repo, "for-each-ref") == refs


def test_revises_must_name_a_proposal_and_changes_nothing(repo: Path) -> None:
    ws, _ids = _stack(repo)
    refs = git(repo, "for-each-ref")

    proposal = patch_resource.parse("a.txt", [{"after_line": 0, "new_string": "x\n"}])
    with pytest.raises(InvalidArguments):
        ws.propose(proposal, revises="0123456789ab")
    assert git(repo, "for-each-ref") == refs


def test_show_session_shows_what_approving_it_lands(repo: Path) -> None:
    _ws, ids = _stack(repo)
    shown = gp_json(repo, "show", "bot")
    assert shown["info"]["lands"] == ids and shown["info"]["id"] == "bot"
    assert sorted(shown["info"]["files"]) == ["a.txt", "b.txt", "c.txt"]
    assert "+A1" in shown["diff"] and "+A2" in shown["diff"] and "+C1" in shown["diff"]
