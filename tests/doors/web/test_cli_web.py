"""``gitpatch web`` through the real console script: a subprocess printing its address first.

The page is reached over loopback with the standard library's HTTP client, then the server is
stopped by the test.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.doors.web.browser import running
from tests.doors.web.webkit import propose, review_repo
from tests.gitkit import head

#: gitpatch web in a process of its own: `make test-fast` leaves these out.
pytestmark = pytest.mark.slow


def _script() -> str:
    path = Path(sys.executable).with_name("gitpatch")
    assert path.exists(), f"console script {path} is not installed (make install)"
    return str(path)


def _request(
    url: str, method: str, path: str, headers: dict[str, str], body: bytes | None = None
) -> tuple[int, bytes]:
    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname or "", where.port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers)
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


@pytest.mark.parametrize("where", ["own_option", "global_option"])
def test_gitpatch_web_prints_its_address_first_and_serves_the_page(
    tmp_path: Path, where: str
) -> None:
    repo = review_repo(tmp_path / "repo")
    pid = propose(repo, "app.py", "MAX_RETRIES = 1", "MAX_RETRIES = 3")
    flags = ["web", "-C", str(repo)] if where == "own_option" else ["-C", str(repo), "web"]
    with running([_script(), *flags, "--no-browser"], cwd=tmp_path) as url:
        parts = urlsplit(url)
        assert (parts.scheme, parts.hostname, parts.path) == ("http", "127.0.0.1", "/")
        token = parts.query.removeprefix("token=")
        assert parts.port and len(token) >= 40
        status, _ = _request(url, "GET", "/api/proposals", {})
        assert status == 403  # no token, no page
        auth = {"X-Gitpatch-Token": token}
        status, body = _request(url, "GET", "/api/proposals", auth)
        assert status == 200 and [p["id"] for p in json.loads(body)["proposals"]] == [pid]
        status, _ = _request(url, "GET", "/", {**auth, "Host": f"evil.example:{parts.port}"})
        assert status == 403
        tip = head(repo, f"gitpatch/{pid}")
        approve = json.dumps({"by": "Ada"}).encode()
        headers = {**auth, "Content-Type": "application/json"}
        status, body = _request(url, "POST", f"/api/proposals/{pid}/approve", headers, approve)
        assert status == 200, body
        assert head(repo, "feature") == tip


def test_gitpatch_web_refuses_a_directory_that_is_not_a_repository(tmp_path: Path) -> None:
    import subprocess

    out = subprocess.run(
        [_script(), "web", "-C", str(tmp_path), "--no-browser"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.startswith("repository_error: not a git repository")


def test_the_web_demo_serves_three_open_proposals(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "gitpatch.doors.web.demo", "--no-browser"]
    with running(command, cwd=tmp_path, env={**os.environ, "TMPDIR": str(tmp_path)}) as url:
        token = urlsplit(url).query.removeprefix("token=")
        status, body = _request(url, "GET", "/api/proposals", {"X-Gitpatch-Token": token})
        rows = json.loads(body)["proposals"]
        assert status == 200 and [r["status"] for r in rows] == ["proposed"] * 3
        assert {r["author"] for r in rows} == {"coding-agent <agent@example.com>"}
    assert [p.name for p in tmp_path.glob("gitpatch-web-demo-*/shop")] == ["shop"]


def test_without_a_display_it_serves_and_says_to_open_the_address(tmp_path: Path) -> None:
    repo = review_repo(tmp_path / "repo")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    with running([_script(), "web", "-C", str(repo)], cwd=tmp_path, env=env) as url:
        token = urlsplit(url).query.removeprefix("token=")
        status, _ = _request(url, "GET", "/", {"X-Gitpatch-Token": token})
        assert status == 200
