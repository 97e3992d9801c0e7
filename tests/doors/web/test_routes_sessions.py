"""The review page shows a session's proposals as a stack, takes comments ("request
changes") and approves or rejects a whole session, through its routes (Starlette's client)."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from gitpatch import Workspace
from tests.doors.web.webkit import client, review_repo
from tests.gitkit import git, head


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return review_repo(tmp_path / "repo")


def _api(repo: Path) -> tuple[TestClient, dict[str, str]]:
    web, access = client(repo)
    return web, {"X-Gitpatch-Token": access.token, "Origin": "http://127.0.0.1:8765"}


def _session(repo: Path) -> tuple[Workspace, list[str]]:
    ws = Workspace.open(repo, mode="review", session="bot")
    one = ws.apply([{"old_string": "= 1", "new_string": "= 3"}], path="app.py")
    two = ws.apply([{"old_string": "A demo", "new_string": "The demo"}], path="README.md")
    return ws, [one.proposal_id, two.proposal_id]


def test_the_page_shows_a_session_as_a_stack_with_what_each_approval_lands(repo: Path) -> None:
    _ws, ids = _session(repo)
    web, auth = _api(repo)
    page = web.get("/", headers=auth).text
    assert "Session <code>bot</code>" in page and "Approve all" in page and "Reject all" in page
    assert page.index(ids[0], page.index('id="stacks"')) < page.index(
        ids[1], page.index('id="stacks"')
    )
    assert f"approving it also lands {ids[0]}" in page
    (stack,) = web.get("/api/sessions", headers=auth).json()["sessions"]
    assert [p["id"] for p in stack["proposals"]] == ids
    shown = web.get(f"/p/{ids[1]}", headers=auth).text
    assert f"Approving also lands the open proposals it is stacked on: {ids[0]}" in shown
    assert "Request changes" in shown


def test_request_changes_on_the_page_reaches_the_agent(repo: Path) -> None:
    ws, ids = _session(repo)
    web, auth = _api(repo)
    body = {"by": "Ada", "text": "call it MAX_TRIES", "kind": "request_changes"}
    answer = web.post(f"/api/proposals/{ids[0]}/comment", json=body, headers=auth)
    assert answer.status_code == 200, answer.text
    assert "call it MAX_TRIES" in web.get(f"/p/{ids[0]}", headers=auth).text
    assert ws.plumbing.notices() == [
        f"Ada requested changes on proposal {ids[0]} at "
        f"{answer.json()['comment']['at']}: call it MAX_TRIES"
    ]
    notes = git(repo, "rev-parse", "refs/notes/gitpatch")
    for body in ({"by": "Ada"}, {"by": "Ada", "text": "x", "kind": "verdict"}):
        bad = web.post(f"/api/proposals/{ids[0]}/comment", json=body, headers=auth)
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_arguments"
    good = {"by": "Ada", "text": "x"}
    missing = web.post("/api/proposals/0123456789ab/comment", json=good, headers=auth)
    assert missing.status_code == 404
    assert git(repo, "rev-parse", "refs/notes/gitpatch") == notes


def test_approve_all_lands_the_whole_session(repo: Path) -> None:
    _ws, ids = _session(repo)
    web, auth = _api(repo)
    answer = web.post("/api/sessions/bot/approve", json={"by": "Ada"}, headers=auth)
    assert answer.status_code == 200, answer.text
    assert head(repo, "feature") == answer.json()["result"]["version"]
    assert "MAX_RETRIES = 3" in git(repo, "show", "feature:app.py")
    assert git(repo, "for-each-ref", "refs/heads/gitpatch/") == ""


def test_reject_all_needs_a_reason_and_then_rejects_every_proposal(repo: Path) -> None:
    _ws, ids = _session(repo)
    web, auth = _api(repo)
    refs = git(repo, "for-each-ref")
    refused = web.post("/api/sessions/bot/reject", json={"by": "Ada"}, headers=auth)
    assert refused.status_code == 400 and git(repo, "for-each-ref") == refs
    answer = web.post(
        "/api/sessions/bot/reject", json={"by": "Ada", "reason": "wrong task"}, headers=auth
    )
    assert answer.status_code == 200, answer.text
    rows = {r["id"]: r for r in web.get("/api/proposals", headers=auth).json()["proposals"]}
    assert rows[ids[0]]["status"] == rows[ids[1]]["status"] == "rejected"
    assert rows[ids[1]]["reason"] == "wrong task"
    git(repo, "fsck", "--strict", "--no-progress")


def test_a_sessions_page_lists_its_proposals_not_what_it_is_stacked_on(repo: Path) -> None:
    _ws, ids = _session(repo)
    web, auth = _api(repo)
    shown = web.get("/p/bot", headers=auth).text
    assert "stacked on" not in shown
    assert f'<dt>proposals</dt><dd class="lands"><a href="/p/{ids[0]}">' in shown
    assert f'<a href="/p/{ids[1]}">{ids[1]}</a></dd>' in shown
