"""The review page and its API with the project's checks: a failing approval answers 409
``checks_failed`` and the page shows the output; a skip with a reason lands and is recorded;
``POST /api/queue`` lands several in order; a proposal's clashes with another session's lines
are on its page, and a merge is announced before it happens."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from gitpatch.porcelain.workspace import Workspace
from tests.doors.web.webkit import client
from tests.gitkit import edit, git, head
from tests.review.checkskit import checked, checked_repo


def _api(repo: Path) -> tuple[TestClient, dict[str, str]]:
    web, access = client(repo)
    return web, {"X-Gitpatch-Token": access.token}


def test_a_failing_approval_is_409_and_the_page_shows_why(tmp_path: Path) -> None:
    repo, _log = checked_repo(tmp_path / "repo")
    bob = Workspace.open(repo, mode="review", session="bob")
    pid = bob.propose(edit("b.txt", "1\n", "9\n")).proposal_id
    web, auth = _api(repo)
    before = head(repo, "refs/heads/main")
    answer = web.post(f"/api/proposals/{pid}/approve", json={"by": "Ada"}, headers=auth)
    assert answer.status_code == 409
    error = answer.json()["error"]
    assert error["code"] == "checks_failed" and error["details"]["output"] == "sum is 10"
    assert head(repo, "refs/heads/main") == before
    page = web.get(f"/p/{pid}", headers=auth).text
    assert 'data-status="checks_failed"' in page and "sum is 10" in page
    shown = web.get(f"/api/proposals/{pid}", headers=auth).json()
    assert shown["info"]["checks"]["runs"][0]["exit_code"] == 1
    body = {"by": "Ada", "skip_checks": "the limit is raised in the next change"}
    answer = web.post(f"/api/proposals/{pid}/approve", json=body, headers=auth)
    assert answer.status_code == 200, answer.text
    trailers = git(repo, "log", "-1", "--format=%(trailers)", "main")
    assert "Gitpatch-Checks-Skipped: the limit is raised in the next change" in trailers


def test_the_queue_endpoint_lands_several_in_order(tmp_path: Path) -> None:
    repo, log = checked_repo(tmp_path / "repo")
    Workspace.open(repo, mode="review", session="x").propose(edit("c.txt", "one\n", "1\n"))
    Workspace.open(repo, mode="review", session="y").propose(edit("c.txt", "five\n", "5\n"))
    web, auth = _api(repo)
    bad = web.post("/api/queue", json={"by": "Ada", "ids": "x"}, headers=auth)
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_arguments"
    answer = web.post("/api/queue", json={"by": "Ada", "ids": ["x", "y"]}, headers=auth)
    assert answer.status_code == 200, answer.text
    assert [e["status"] for e in answer.json()["queue"]] == ["approved", "approved"]
    assert git(repo, "show", "main:c.txt") == "1\ntwo\nthree\nfour\n5\n"
    assert len(checked(log)) == 2


def test_a_clash_and_a_coming_merge_are_on_the_page(tmp_path: Path) -> None:
    repo, _log = checked_repo(tmp_path / "repo")
    ann = Workspace.open(repo, mode="review", session="ann")
    first = ann.propose(edit("c.txt", "two\n", "2\n")).proposal_id
    ben = Workspace.open(repo, mode="review", session="ben")
    second = ben.propose(edit("c.txt", "three\n", "3\n")).proposal_id
    web, auth = _api(repo)
    page = web.get(f"/p/{second}", headers=auth).text
    assert (
        f"Another session also changes c.txt near your line 3: session ann (proposal {first}) "
        "changes line 2" in page
    )
    assert "fast-forwards" in page
    carl = Workspace.open(repo, mode="review", session="carl")
    third = carl.propose(edit("c.txt", "five\n", "5\n")).proposal_id
    Workspace.open(repo, mode="review").approve(first, "Ada")
    page = web.get(f"/p/{second}", headers=auth).text
    assert "main changed c.txt line 2 since your base" in page
    assert "Cannot approve: merging into main conflicts: c.txt: main changed line 2, " in page
    page = web.get(f"/p/{third}", headers=auth).text
    assert "main has moved on: approving makes a merge commit on main." in page
