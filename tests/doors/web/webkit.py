"""Repositories with review-mode proposals, and a client for the review page, for tests/web."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from gitpatch import Workspace
from gitpatch.doors.web import Access, create_app, demo
from tests.gitkit import git, make_repo, repo_state

#: What a refused request must keep (``tests.gitkit.repo_state``).
snapshot = repo_state

#: The port the in-process tests pretend to serve on (nothing listens there).
PORT = 8765
ORIGIN = f"http://127.0.0.1:{PORT}"

#: The demo's small service: the same file the demo page reviews.
APP = demo.APP

FILES = {
    "app.py": APP,
    "lib/util.js": "export function add(a, b) {\n  return a + b;\n}\n",
    "README.md": "# demo\n\nA demo repository.\n",
    "logo.bin": b"\x00\x01\x02binary\x00",
}


def review_repo(root: Path, branch: str = "feature") -> Path:
    """A repository at ``root`` with ``FILES`` on ``branch`` (not protected)."""
    return make_repo(root, FILES, branch=branch)


def propose(repo: Path, path: str, old: str, new: str) -> str:
    """A review-mode proposal replacing ``old`` with ``new`` in ``path``; its id."""
    ws = Workspace.open(repo, mode="review")
    block = f"<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"
    return ws.apply(block, path=path).proposal_id


def client(repo: Path) -> tuple[TestClient, Access]:
    """A test client for the page of ``repo`` answering as ``127.0.0.1:PORT``, not logged in."""
    access = Access.new(PORT)
    app = create_app(repo, access)
    return TestClient(app, base_url=ORIGIN, follow_redirects=False), access


def logged_in(repo: Path) -> tuple[TestClient, Access]:
    """A client that opened the page's URL with the token once, so it holds the cookie."""
    web, access = client(repo)
    answer = web.get(f"/?token={access.token}")
    assert answer.status_code == 303, answer.text
    return web, access


def browser_post(web: TestClient, access: Access, url: str, body: dict[str, str]) -> int:
    """A POST as the page's own JavaScript sends it (cookie, Origin, CSRF token): its status."""
    headers = {"Origin": ORIGIN, "X-CSRF-Token": access.csrf, "Sec-Fetch-Site": "same-origin"}
    return web.post(url, json=body, headers=headers).status_code


def note(repo: Path, commit: str) -> str:
    """The gitpatch note of ``commit`` as git prints it ('' when none)."""
    return git(repo, "notes", "--ref", "gitpatch", "show", commit, check=False)
