"""Each security rule of the review page, tested so that the test fails without the rule.

Every refused request must answer 403 (405 for GET on a POST route) and leave every ref, note,
index entry and file as it was; a positive control shows the same request passes when only the
rule's condition is fixed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doors.web.webkit import (
    ORIGIN,
    PORT,
    browser_post,
    client,
    logged_in,
    propose,
    review_repo,
    snapshot,
)
from tests.gitkit import git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = review_repo(tmp_path / "repo")
    propose(root, "app.py", "MAX_RETRIES = 1", "MAX_RETRIES = 3")
    return root


def _pid(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname:lstrip=3)", "refs/heads/gitpatch/").strip()


@pytest.mark.parametrize("url", ["/", "/log", "/api/proposals", "/static/app.js", "/p/x"])
def test_without_the_token_every_page_is_403(repo: Path, url: str) -> None:
    web, access = client(repo)
    assert web.get(url).status_code == 403
    assert web.get(url, headers={"X-Gitpatch-Token": access.token + "x"}).status_code == 403
    assert web.get(url, headers={"X-Gitpatch-Token": access.token}).status_code in (200, 404)


def test_without_the_token_an_approval_is_403_and_nothing_happens(repo: Path) -> None:
    web, access = client(repo)
    before = snapshot(repo)
    answer = web.post(f"/api/proposals/{_pid(repo)}/approve", json={"by": "Eve"})
    assert answer.status_code == 403
    assert answer.json()["error"]["code"] == "forbidden"
    wrong = {"X-Gitpatch-Token": "guess", "X-CSRF-Token": access.csrf, "Origin": ORIGIN}
    assert web.post("/api/undo", headers=wrong).status_code == 403
    assert snapshot(repo) == before


def test_the_token_in_the_url_becomes_an_httponly_strict_cookie(repo: Path) -> None:
    web, access = client(repo)
    answer = web.get(f"/?status=open&token={access.token}")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/?status=open"  # the token leaves the address bar
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"gitpatch_{PORT}={access.token};")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert web.get("/?status=open").status_code == 200  # the cookie is enough from now on


def test_a_token_in_the_url_of_a_post_does_not_count(repo: Path) -> None:
    web, access = client(repo)
    before = snapshot(repo)
    headers = {"Origin": ORIGIN, "X-CSRF-Token": access.csrf}
    answer = web.post(f"/api/undo?token={access.token}", headers=headers)
    assert answer.status_code == 403
    assert snapshot(repo) == before


@pytest.mark.parametrize(
    "host", ["evil.example", f"evil.example:{PORT}", "127.0.0.1:9", f"127.0.0.2:{PORT}", ""]
)
def test_a_foreign_host_header_is_refused_even_with_the_token(repo: Path, host: str) -> None:
    """DNS rebinding: a name the attacker controls resolving to 127.0.0.1 keeps its Host."""
    web, access = client(repo)
    before = snapshot(repo)
    token = {"X-Gitpatch-Token": access.token}
    assert web.get("/api/proposals", headers={**token, "Host": host}).status_code == 403
    approve = f"/api/proposals/{_pid(repo)}/approve"
    answer = web.post(approve, json={"by": "Eve"}, headers={**token, "Host": host})
    assert answer.status_code == 403
    assert snapshot(repo) == before
    for good in (f"127.0.0.1:{PORT}", f"localhost:{PORT}"):
        assert web.get("/api/proposals", headers={**token, "Host": good}).status_code == 200


@pytest.mark.parametrize("origin", ["http://evil.example", f"http://evil.example:{PORT}", "null"])
def test_a_cross_origin_post_is_refused(repo: Path, origin: str) -> None:
    web, access = logged_in(repo)
    before = snapshot(repo)
    approve = f"/api/proposals/{_pid(repo)}/approve"
    for auth in ({"X-CSRF-Token": access.csrf}, {"X-Gitpatch-Token": access.token}):
        answer = web.post(approve, json={"by": "Eve"}, headers={**auth, "Origin": origin})
        assert answer.status_code == 403, answer.text
    site = {"X-CSRF-Token": access.csrf, "Origin": ORIGIN, "Sec-Fetch-Site": "cross-site"}
    assert web.post(approve, json={"by": "Eve"}, headers=site).status_code == 403
    assert snapshot(repo) == before
    assert browser_post(web, access, approve, {"by": "Ada"}) == 200  # the page's own request


def test_a_browser_post_without_the_csrf_token_is_refused(repo: Path) -> None:
    web, access = logged_in(repo)
    before = snapshot(repo)
    approve = f"/api/proposals/{_pid(repo)}/approve"
    assert web.post(approve, json={"by": "Eve"}, headers={"Origin": ORIGIN}).status_code == 403
    wrong = {"Origin": ORIGIN, "X-CSRF-Token": access.token}  # the session token is not it
    assert web.post(approve, json={"by": "Eve"}, headers=wrong).status_code == 403
    assert snapshot(repo) == before
    assert browser_post(web, access, approve, {"by": "Ada"}) == 200


def test_a_browser_post_that_hides_its_origin_is_refused(repo: Path) -> None:
    web, access = logged_in(repo)
    before = snapshot(repo)
    approve = f"/api/proposals/{_pid(repo)}/approve"
    answer = web.post(approve, json={"by": "Eve"}, headers={"X-CSRF-Token": access.csrf})
    assert answer.status_code == 403
    assert snapshot(repo) == before


def test_get_cannot_change_state(repo: Path) -> None:
    web, access = client(repo)
    token = {"X-Gitpatch-Token": access.token}
    pid = _pid(repo)
    before = snapshot(repo)
    for url in (f"/api/proposals/{pid}/approve", f"/api/proposals/{pid}/reject", "/api/undo"):
        assert web.get(url, headers=token).status_code == 405
    pages = ("/", "/log", f"/p/{pid}", "/fragment/proposals", "/api/proposals", "/api/log")
    for url in (*pages, "/api/stamp"):
        assert web.get(url, headers=token).status_code == 200
    assert web.get(f"/api/proposals/{pid}", headers=token).status_code == 200
    assert snapshot(repo) == before


def test_every_answer_carries_the_security_headers(repo: Path) -> None:
    web, access = client(repo)
    for answer in (web.get("/"), web.get("/", headers={"X-Gitpatch-Token": access.token})):
        csp = answer.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["referrer-policy"] == "no-referrer"
        assert answer.headers["cache-control"] == "no-store"


def test_a_cookie_holding_another_pages_token_is_refused(repo: Path) -> None:
    web, access = logged_in(repo)
    other, _ = client(repo)
    other.cookies.set(f"gitpatch_{PORT}", access.token)  # another page's cookie: other token
    assert other.get("/").status_code == 403
    assert web.get("/").status_code == 200
