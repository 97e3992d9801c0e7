"""The review page's routes through Starlette's test client, on real repositories.

Scripts authenticate with the ``X-Gitpatch-Token`` header here; the cookie and CSRF path the
page itself uses is in test_security.py and the browser test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from gitpatch import Workspace
from gitpatch.doors.web.diffview import COLLAPSE_LINES
from tests.doors.web.webkit import APP, client, note, propose, review_repo, snapshot
from tests.gitkit import git, head, status_porcelain, write_files


def _api(repo: Path) -> tuple[TestClient, dict[str, str]]:
    web, access = client(repo)
    return web, {"X-Gitpatch-Token": access.token}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return review_repo(tmp_path / "repo")


def test_the_list_shows_open_proposals_first_with_their_facts(repo: Path) -> None:
    first = propose(repo, "app.py", "MAX_RETRIES = 1", "MAX_RETRIES = 3")
    second = propose(repo, "README.md", "A demo repository.", "A demo.\nWith two lines.")
    Workspace.open(repo, mode="review").reject(first, "Ada", "three is too many")
    web, auth = _api(repo)
    rows = web.get("/api/proposals", headers=auth).json()["proposals"]
    assert [(r["id"], r["status"], r["open"]) for r in rows] == [
        (second, "proposed", True),
        (first, "rejected", False),
    ]
    assert (rows[0]["insertions"], rows[0]["deletions"], rows[0]["files"]) == (2, 1, ["README.md"])
    assert rows[0]["tool"] == "patch" and rows[0]["target"] == "refs/heads/feature"
    page = web.get("/", headers=auth).text
    assert page.index(second) < page.index(first)
    assert "pending" in page and "rejected" in page and "+2" in page
    only = web.get("/api/proposals?status=rejected", headers=auth).json()["proposals"]
    assert [r["id"] for r in only] == [first]
    fragment = web.get("/fragment/proposals?status=open", headers=auth).text
    assert second in fragment and first not in fragment


def test_the_stamp_the_page_polls_changes_exactly_when_the_list_may(repo: Path) -> None:
    web, auth = _api(repo)

    def stamp() -> str:
        return str(web.get("/api/stamp", headers=auth).json()["stamp"])

    empty = stamp()
    assert stamp() == empty and f'data-stamp="{empty}"' in web.get("/", headers=auth).text
    pid = propose(repo, "app.py", "MAX_RETRIES = 1", "MAX_RETRIES = 3")
    proposed = stamp()
    assert proposed != empty
    git(repo, "commit", "-q", "--allow-empty", "-m", "a person's commit")  # not a list change
    assert stamp() == proposed
    Workspace.open(repo, mode="review").reject(pid, "Ada", "no")
    assert stamp() not in (empty, proposed)


def test_an_unknown_status_filter_is_a_400_with_a_hint(repo: Path) -> None:
    web, auth = _api(repo)
    answer = web.get("/api/proposals?status=maybe", headers=auth)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "invalid_arguments" and "open" in error["hint"]


def test_the_proposal_page_highlights_the_diff_and_says_it_fast_forwards(repo: Path) -> None:
    pid = propose(repo, "app.py", "MAX_RETRIES = 1", "MAX_RETRIES = 3")
    web, auth = _api(repo)
    page = web.get(f"/p/{pid}", headers=auth).text
    assert 'class="del"' in page and 'class="add"' in page
    assert '<span class="n">MAX_RETRIES</span>' in page  # Pygments, on the server
    assert '<span class="mi">3</span>' in page
    assert "fast-forwards feature" in page
    assert 'id="approve" class="primary">' in page  # enabled
    detail = web.get(f"/api/proposals/{pid}", headers=auth).json()
    assert detail["approval"]["kind"] == "fast-forward"
    assert detail["note"]["tool"] == "patch" and detail["stats"]["insertions"] == 1
    assert detail["message"].startswith("patch: update app.py")


def test_a_moved_target_means_a_merge_and_a_conflict_disables_approve(repo: Path) -> None:
    merge = propose(repo, "README.md", "A demo repository.", "A demo repository, reviewed.")
    clash = propose(repo, "app.py", "MAX_RETRIES = 1", "MAX_RETRIES = 3")
    write_files(repo, {"app.py": APP.replace("MAX_RETRIES = 1", "MAX_RETRIES = 5")})
    git(repo, "commit", "-qam", "a person's own change")
    web, auth = _api(repo)
    objects = git(repo, "count-objects", "-v")
    assert web.get(f"/api/proposals/{merge}", headers=auth).json()["approval"]["kind"] == "merge"
    approval = web.get(f"/api/proposals/{clash}", headers=auth).json()["approval"]
    assert git(repo, "count-objects", "-v") == objects  # the previews wrote no object
    assert approval["kind"] == "conflict" and approval["files"] == ["app.py"]
    page = web.get(f"/p/{clash}", headers=auth).text
    assert 'id="approve" class="primary" disabled' in page
    assert (
        "Cannot approve: merging into feature conflicts: app.py: feature changed line 3, "
        "proposal changed line 3." in page
    )
    assert "Approve is disabled: feature changed the same lines since." in page
    before = snapshot(repo)
    answer = web.post(f"/api/proposals/{clash}/approve", json={"by": "Ada"}, headers=auth)
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "merge_conflict"
    assert snapshot(repo) == before


def test_renames_binary_and_long_files_are_shown_as_such(repo: Path) -> None:
    ws = Workspace.open(repo, mode="review")
    moved = ws.apply(
        "*** Begin Patch\n*** Update File: README.md\n*** Move to: docs/README.md\n"
        "@@\n A demo repository.\n*** End Patch\n"
    ).proposal_id
    long_text = "".join(f"line {n}\n" for n in range(COLLAPSE_LINES + 50))
    added = ws.apply(
        "*** Begin Patch\n*** Add File: big.txt\n"
        + "".join(f"+{line}\n" for line in long_text.splitlines())
        + "*** End Patch\n"
    ).proposal_id
    gone = ws.apply("*** Begin Patch\n*** Delete File: logo.bin\n*** End Patch\n")
    web, auth = _api(repo)
    page = web.get(f"/p/{moved}", headers=auth).text
    assert "README.md → docs/README.md" in page and ">renamed<" in page
    assert "Moved without changes." in page
    page = web.get(f"/p/{added}", headers=auth).text
    assert "<details>" in page and "folded: click to show" in page and ">added<" in page
    page = web.get(f"/p/{gone.proposal_id}", headers=auth).text
    assert "Binary file: contents not shown." in page and ">deleted, binary<" in page


def test_a_persons_recorded_uncommitted_work_is_marked_as_theirs(repo: Path) -> None:
    write_files(repo, {"app.py": APP + "\n# my own note, not committed\n"})
    git(repo, "config", "gitpatch.uncommitted", "record")  # the setting that records it
    pid = propose(repo, "app.py", "MAX_RETRIES = 1", "MAX_RETRIES = 3")
    base = git(repo, "rev-parse", f"gitpatch/{pid}~1").strip()
    assert f"Gitpatch-Record: {pid}" in git(repo, "log", "-1", "--format=%B", base)
    web, auth = _api(repo)
    detail = web.get(f"/api/proposals/{pid}", headers=auth).json()
    assert detail["records"] == [{"commit": base, "files": ["app.py"]}]
    assert "my own note" not in detail["diff"]  # the agent's diff is only the agent's
    page = web.get(f"/p/{pid}", headers=auth).text
    mine = page[page.index("Your own uncommitted work") :]
    assert "my own note, not committed" in mine and "your work" in mine
    assert base[:12] in mine


def test_approve_merges_through_the_review_api_and_reports_the_new_head(repo: Path) -> None:
    pid = propose(repo, "app.py", "MAX_RETRIES = 1", "MAX_RETRIES = 3")
    tip = head(repo, f"gitpatch/{pid}")
    web, auth = _api(repo)
    answer = web.post(f"/api/proposals/{pid}/approve", json={"by": "Ada <ada@x>"}, headers=auth)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["result"]["status"] == "approved"
    assert body["head"] == {"branch": "feature", "commit": tip, "summary": "patch: update app.py"}
    assert head(repo, "feature") == tip
    assert "MAX_RETRIES = 3" in (repo / "app.py").read_text()
    assert status_porcelain(repo) == ""
    assert json.loads(note(repo, tip))["approved_by"] == "Ada <ada@x>"
    again = web.post(f"/api/proposals/{pid}/approve", json={"by": "Ada"}, headers=auth)
    assert again.status_code == 409 and again.json()["error"]["code"] == "proposal_closed"


def test_reject_needs_a_reason_and_notes_it(repo: Path) -> None:
    pid = propose(repo, "app.py", "MAX_RETRIES = 1", "MAX_RETRIES = 3")
    tip = head(repo, f"gitpatch/{pid}")
    web, auth = _api(repo)
    before = snapshot(repo)
    for body in ({"by": "Ada"}, {"by": "Ada", "reason": "  "}, {"by": "Ada", "reason": 3}):
        answer = web.post(f"/api/proposals/{pid}/reject", json=body, headers=auth)
        assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid_arguments"
    answer = web.post(f"/api/proposals/{pid}/reject", content=b"{not json", headers=auth)
    assert answer.status_code == 400
    assert snapshot(repo) == before
    body = {"by": "Ada", "reason": "three retries hide outages"}
    answer = web.post(f"/api/proposals/{pid}/reject", json=body, headers=auth)
    assert answer.status_code == 200 and answer.json()["result"]["status"] == "rejected"
    saved = json.loads(note(repo, tip))
    assert (saved["status"], saved["reason"], saved["rejected_by"]) == (
        "rejected",
        "three retries hide outages",
        "Ada",
    )
    assert git(repo, "branch", "--list", f"gitpatch/{pid}") == ""
    page = web.get(f"/p/{pid}", headers=auth).text
    assert "three retries hide outages" in page and 'id="approve"' not in page


def test_approve_without_a_name_is_refused_and_changes_nothing(repo: Path) -> None:
    pid = propose(repo, "app.py", "MAX_RETRIES = 1", "MAX_RETRIES = 3")
    web, auth = _api(repo)
    before = snapshot(repo)
    answer = web.post(f"/api/proposals/{pid}/approve", json={"by": " "}, headers=auth)
    assert answer.status_code == 400 and "by=" in answer.json()["error"]["message"]
    assert snapshot(repo) == before


def test_unknown_proposals_are_404_as_json_and_as_a_page(repo: Path) -> None:
    web, auth = _api(repo)
    answer = web.get("/api/proposals/0123456789ab", headers=auth)
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "proposal_not_found"
    page = web.get("/p/0123456789ab", headers=auth)
    assert page.status_code == 404 and "proposal_not_found" in page.text


def test_the_log_lists_gitpatch_commits_and_undo_reverts_the_last(repo: Path) -> None:
    pid = propose(repo, "app.py", "MAX_RETRIES = 1", "MAX_RETRIES = 3")
    Workspace.open(repo, mode="review").approve(pid, "Ada")
    web, auth = _api(repo)
    log = web.get("/api/log", headers=auth).json()["log"]
    assert [(e["proposal_id"], e["tool"]) for e in log] == [(pid, "patch")]
    assert pid in web.get("/log", headers=auth).text
    answer = web.post("/api/undo", headers=auth)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["result"]["status"] == "undone" and body["head"]["commit"] == head(repo, "feature")
    assert "MAX_RETRIES = 1" in (repo / "app.py").read_text()
    assert status_porcelain(repo) == ""
    nothing = web.post("/api/undo", headers=auth)
    assert nothing.status_code == 404 and nothing.json()["error"]["code"] == "proposal_not_found"


def test_an_open_session_is_listed_and_cannot_be_rejected(tmp_path: Path) -> None:
    repo = review_repo(tmp_path / "repo", branch="main")  # main is protected: agents get a session
    auto = Workspace.open(repo)
    auto.apply(
        "<<<<<<< SEARCH\nMAX_RETRIES = 1\n=======\nMAX_RETRIES = 2\n>>>>>>> REPLACE",
        path="app.py",
    )
    git(repo, "switch", "-q", "main")
    web, auth = _api(repo)
    rows = web.get("/api/proposals", headers=auth).json()["proposals"]
    # The session first (open), then the agent's commit on it (applied, no verdict needed).
    assert [(r["tool"], r["status"], r["open"]) for r in rows] == [
        ("session", "applied", True),
        ("patch", "applied", False),
    ]
    page = web.get("/p/agent", headers=auth).text
    assert 'id="reject" disabled' in page and "fast-forwards main" in page
    answer = web.post("/api/proposals/agent/approve", json={"by": "Ada"}, headers=auth)
    assert answer.status_code == 200, answer.text
    assert "MAX_RETRIES = 2" in git(repo, "show", "main:app.py")


@pytest.mark.parametrize("kind", ["linked_worktree", "sparse", "staged", "autocrlf"])
def test_approve_from_the_page_in_real_checkouts(tmp_path: Path, kind: str) -> None:
    main = review_repo(tmp_path / "repo")
    repo = main
    if kind == "linked_worktree":
        git(main, "branch", "side")
        repo = tmp_path / "linked"
        git(main, "worktree", "add", "-q", str(repo), "side")
    elif kind == "sparse":
        git(main, "sparse-checkout", "set", "--no-cone", "/app.py", "/README.md")
    elif kind == "staged":
        write_files(main, {"README.md": "# demo\n\nStaged by a person.\n"})
        git(main, "add", "README.md")
    elif kind == "autocrlf":
        git(main, "config", "core.autocrlf", "true")
    pid = propose(repo, "app.py", "MAX_RETRIES = 1", "MAX_RETRIES = 3")
    before = status_porcelain(repo)
    web, auth = _api(repo)
    answer = web.post(f"/api/proposals/{pid}/approve", json={"by": "Ada"}, headers=auth)
    assert answer.status_code == 200, answer.text
    branch = git(repo, "branch", "--show-current").strip()
    assert head(repo, branch) == answer.json()["result"]["version"]
    assert "MAX_RETRIES = 3" in (repo / "app.py").read_text()
    assert status_porcelain(repo) == before  # staged work stays staged, nothing else changes
    assert git(main, "fsck", "--strict", "--no-progress") == ""
