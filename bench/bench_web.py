"""The review page's answer times, in process (Starlette's test client, no network).

A repository with 50 open and 50 rejected proposals (the list shows them all: open ones, then
the 50 most recent closed), and one proposal changing a 2,000-line Python file in 100 places:
the list page, the JSON list, the stamp the page polls, and the proposal page (Pygments on the
server).
Run: ``python -m bench.bench_web``.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from starlette.testclient import TestClient

from bench._common import GIT_ENV, GIT_QUIET, median_ms
from gitpatch import Workspace
from gitpatch.doors.web import Access, create_app

PORT = 8765


def _repo(root: Path) -> tuple[Path, str]:
    repo = root / "repo"
    repo.mkdir()
    big = "".join(f"def f{n}(x):\n    return x + {n}\n\n\n" for n in range(500))
    (repo / "big.py").write_text(big)
    for n in range(100):
        (repo / f"f{n}.txt").write_text("x\n")

    def git(*args: str) -> None:
        subprocess.run(["git", *GIT_QUIET, *args], cwd=repo, env=GIT_ENV, check=True)

    git("init", "-q", "-b", "feature")
    git("add", "-A")
    git("commit", "-q", "-m", "files")
    ws = Workspace.open(repo, mode="review")
    ids = [
        ws.apply("<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n", path=f"f{n}.txt").proposal_id
        for n in range(100)
    ]
    for pid in ids[:50]:
        ws.reject(pid, "Bench", "bench")
    edits = [
        {"old_string": f"    return x + {n}\n", "new_string": f"    return x * {n}\n"}
        for n in range(0, 500, 5)
    ]
    big_id = ws.apply(edits, path="big.py").proposal_id
    return repo, big_id


def main() -> None:
    """Print the medians."""
    with tempfile.TemporaryDirectory() as tmp:
        repo, big_id = _repo(Path(tmp))
        access = Access.new(PORT)
        web = TestClient(create_app(repo, access), base_url=f"http://127.0.0.1:{PORT}")
        auth = {"X-Gitpatch-Token": access.token}
        for label, url in (
            ("list page, 101 proposals", "/"),
            ("GET /api/proposals", "/api/proposals"),
            ("GET /api/stamp (polled every 3 s)", "/api/stamp"),
            ("proposal page, 100 hunks in a 2,000-line file", f"/p/{big_id}"),
            ("GET /api/proposals/{id}, same proposal", f"/api/proposals/{big_id}"),
        ):
            assert web.get(url, headers=auth).status_code == 200
            print(f"{label:50s} {median_ms(lambda u=url: web.get(u, headers=auth), 15):8.1f} ms")


if __name__ == "__main__":
    main()
