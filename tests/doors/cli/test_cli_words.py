"""The words a new user meets at the ``gitpatch`` console script: a mistyped command names
the one that does it; a session is named one way wherever it is shown, approved or undone;
a request for changes on a rejected proposal is refused with nothing changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from tests.doors.cli.clikit import gp, gp_json, gp_ok
from tests.gitkit import git

pytestmark = pytest.mark.slow  # the gitpatch console script in processes of its own


FILES = {"a.txt": "a1\na2\n", "b.txt": "b1\n", "c.txt": "c1\n"}


def _two(ws: Workspace) -> list[str]:
    """Two proposals (or, in auto mode, two commits) of the Workspace's session."""
    edits = [("a.txt", "a1", "A1"), ("b.txt", "b1", "B1")]
    return [
        ws.apply([{"old_string": old, "new_string": new}], path=path).proposal_id
        for path, old, new in edits
    ]


@pytest.mark.parametrize(("typed", "meant"), [("list", "proposals"), ("ls", "proposals")])
def test_an_unknown_command_names_the_one_that_does_it(repo: Path, typed: str, meant: str) -> None:
    out = gp(repo, typed)
    assert out.returncode == 2, out.stderr
    assert f"No such command '{typed}'. Did you mean '{meant}'?" in out.stderr


def test_show_session_lists_its_proposals_not_what_it_is_stacked_on(repo: Path) -> None:
    ids = _two(Workspace.open(repo, mode="review", session="alice"))
    text = gp_ok(repo, "show", "alice", "--stat")
    assert "stacked on" not in text
    assert (
        f"proposals {ids[0]}, {ids[1]} (bottom first): approving the session lands them all" in text
    )
    # a proposal of the session still says what it is stacked on (not itself)
    top = gp_ok(repo, "show", ids[1], "--stat")
    assert f"stacked on open proposals {ids[0]}: approving it lands them too" in top


def test_approving_a_session_names_it_and_counts_its_proposals_in_both_modes(repo: Path) -> None:
    _two(Workspace.open(repo, mode="review", session="alice"))
    _two(Workspace.open(repo, mode="auto", session="bob"))
    assert gp_ok(repo, "approve", "alice").startswith("Approved session alice (2 proposals) by ")
    approved = gp_ok(repo, "approve", "bob")
    assert approved.startswith("Approved session bob (2 proposals) by "), approved
    assert "refs/heads" not in approved


def test_undoing_a_session_approval_says_so(repo: Path) -> None:
    _two(Workspace.open(repo, mode="auto", session="carol"))
    ws = Workspace.open(repo, mode="review", session="dave")
    ws.apply([{"old_string": "c1", "new_string": "C1"}], path="c.txt")
    gp_ok(repo, "approve", "dave")  # main moves on: carol's approval is a merge
    gp_ok(repo, "approve", "carol")
    undone = gp_ok(repo, "undo")
    assert undone.startswith("Undid the approval of session carol (Merge session carol"), undone
    assert "session/carol" not in undone


def test_request_changes_on_a_rejected_proposal_is_refused_and_changes_nothing(
    repo: Path,
) -> None:
    (pid, _other) = _two(Workspace.open(repo, mode="review", session="erin"))
    gp_ok(repo, "reject", pid, "--reason", "keep a1")
    before = git(repo, "for-each-ref")
    out = gp(repo, "comment", pid, "use a constant", "--request-changes")
    assert out.returncode == 1
    assert out.stderr.startswith(f"proposal_closed: proposal {pid} is already rejected"), out.stderr
    assert "keep a1" in out.stderr
    assert "without --request-changes" in out.stderr  # the CLI's own words
    assert git(repo, "for-each-ref") == before
    # a plain comment is still taken: a note the agent reads for its revision
    gp_ok(repo, "comment", pid, "use a constant")
    comments = gp_json(repo, "show", pid)["info"]["comments"]
    assert [(c["kind"], c["text"]) for c in comments] == [("comment", "use a constant")]
