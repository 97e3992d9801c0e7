"""``python -m gitpatch.doors.web.demo``: the review page on a throwaway repository with proposals.

It builds a small repository in a temp dir, with a person's uncommitted work and three
review-mode proposals from an agent (one of them recorded that work first), prints the
``gitpatch web`` command for it on stderr, and serves the page (its address is the first line
on stdout). The browser tests and the README's screenshot use the same repository.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from gitpatch.doors.web.server import serve
from gitpatch.porcelain.workspace import Workspace

__all__ = ["AGENT", "build", "main"]

#: Who the agent's proposals say they come from.
AGENT = "coding-agent <agent@example.com>"

APP = '''\
"""A small service."""

MAX_RETRIES = 1


def fetch(url: str) -> bytes:
    """Fetch ``url``, retrying on failure."""
    for attempt in range(MAX_RETRIES):
        print("try", attempt, url)
    return b""
'''

#: The person's own edit, left uncommitted when the agent comes along.
MINE = APP.replace('"""A small service."""\n', '"""A small service."""\n\nimport logging\n') + (
    "\n\nlog = logging.getLogger(__name__)\n"
)

AGENT_PATCH = """\
*** Begin Patch
*** Update File: app.py
@@
-MAX_RETRIES = 1
+MAX_RETRIES = 3
+BACKOFF_SECONDS = 0.5
@@
     \"\"\"Fetch ``url``, retrying on failure.\"\"\"
-    for attempt in range(MAX_RETRIES):
-        print("try", attempt, url)
+    for attempt in range(1, MAX_RETRIES + 1):
+        log.info("fetch %s (attempt %d of %d)", url, attempt, MAX_RETRIES)
+        time.sleep(BACKOFF_SECONDS * attempt)
     return b""
*** End Patch
"""

FILES = {
    "app.py": APP,
    "lib/util.js": "export function add(a, b) {\n  return a + b;\n}\n",
    "README.md": "# shop\n\nA demo repository.\n",
}


def _git(repo: Path, *args: str) -> None:
    identity = ("-c", "user.name=Demo Person", "-c", "user.email=person@example.com")
    subprocess.run(["git", *identity, *args], cwd=repo, check=True, capture_output=True)


def _replace(old: str, new: str) -> str:
    return f"<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"


def build(repo: Path) -> Path:
    """The demo repository at ``repo`` (branch ``feature``), with three open proposals."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "feature")
    _git(repo, "config", "user.name", "Demo Person")
    _git(repo, "config", "user.email", "person@example.com")
    for name, text in FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "Initial import")
    (repo / "app.py").write_text(MINE)
    # dirty="record": the page then shows the person's own work recorded under the proposal
    agent = Workspace.open(repo, mode="review", author=AGENT, dirty="record")
    agent.apply(AGENT_PATCH)
    agent.apply(_replace("  return a + b;", "  return Number(a) + Number(b);"), path="lib/util.js")
    agent.apply(_replace("A demo repository.", "A demo repository for gitpatch."), path="README.md")
    return repo


def main() -> int:
    """Build the demo repository and serve its review page until Ctrl-C."""
    repo = build(Path(tempfile.mkdtemp(prefix="gitpatch-web-demo-")) / "shop")
    print(f"demo repository: {repo}  (the same page: gitpatch web -C {repo})", file=sys.stderr)
    serve(repo, open_browser="--no-browser" not in sys.argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
