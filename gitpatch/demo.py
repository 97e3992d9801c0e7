"""``make demo``: gitpatch placing and refusing edits, then landing them through git.

Everything happens on an embedded sample file in a throwaway repository under a temp dir, so the
demo needs nothing but Python and git. Run it with ``python -m gitpatch.demo``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pygit2

from gitpatch.errors import GitpatchError
from gitpatch.match import seek
from gitpatch.text import Document
from gitpatch.workspace import Workspace

SAMPLE = '''\
"""Inventory helpers."""

DEFAULT_LIMIT = 10


def load(path):
    with open(path) as fh:
        return [line.strip() for line in fh]


def report(items, limit=DEFAULT_LIMIT):
    for item in items[:limit]:
        print("item:", item)
    return len(items)


def summary(items, limit=DEFAULT_LIMIT):
    for item in items[:limit]:
        print("item:", item)
    return "done"
'''


def _title(text: str) -> None:
    print(f"\n== {text}")


def _attempt(label: str, action: Callable[[], str]) -> None:
    try:
        print(f"  {label}: {action()}")
    except GitpatchError as err:
        first_hint = (err.hint or "").splitlines()[:3]
        print(f"  {label}: refused [{err.code}] {err.message}")
        for line in first_hint:
            print(f"      {line}")


def show_matcher() -> None:
    """Where the matcher places damaged edits, and what it refuses."""
    lines = Document.from_text(SAMPLE).lines
    _title("The matcher on an embedded sample file (inventory.py)")

    def place(pattern: list[str], **kw: object) -> Callable[[], str]:
        def run() -> str:
            m = seek(lines, pattern, **kw)  # type: ignore[arg-type]
            return f"lines {m.start + 1}-{m.end} at level {m.level.value}"

        return run

    _attempt(
        "exact block                ",
        place(["def load(path):", "    with open(path) as fh:"]),
    )
    _attempt(
        "trailing spaces added      ",
        place(["DEFAULT_LIMIT = 10   "]),
    )
    _attempt(
        "curly quotes (typographic) ",
        place(["    return \u201cdone\u201d"]),
    )
    _attempt(
        "indentation lost           ",
        place(["with open(path) as fh:", "    return [line.strip() for line in fh]"]),
    )
    _attempt(
        "block in two places        ",
        place(["    for item in items[:limit]:", '        print("item:", item)']),
    )
    _attempt(
        "same block, line hint 19   ",
        place(["    for item in items[:limit]:", '        print("item:", item)'], line_hint=19),
    )
    _attempt(
        "a line not in the file     ",
        place(["def save(path, items):"]),
    )


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    return out.stdout.rstrip()


def _make_repo(root: Path) -> Path:
    repo_dir = root / "inventory"
    repo = pygit2.init_repository(str(repo_dir), initial_head="feature")
    repo.config["user.name"] = "Demo Person"
    repo.config["user.email"] = "person@example.com"
    (repo_dir / "inventory.py").write_text(SAMPLE)
    repo.index.add("inventory.py")
    repo.index.write()
    sig = pygit2.Signature("Demo Person", "person@example.com")
    repo.create_commit("HEAD", sig, sig, "Initial import", repo.index.write_tree(), [])
    return repo_dir


def show_git(root: Path) -> None:
    """One auto edit and one reviewed proposal, on a throwaway repository."""
    repo = _make_repo(root)
    _title(f"A throwaway repository at {repo}, branch feature")
    print("  (main and master are protected: agent edits there land on a session branch)")

    auto = Workspace.open(repo, mode="auto")
    result = auto.patch(
        "inventory.py",
        "<<<<<<< SEARCH\nDEFAULT_LIMIT = 10\n=======\nDEFAULT_LIMIT = 25\n>>>>>>> REPLACE\n",
    )
    print(f"  auto edit: {result.message}")
    print(
        f"  version {result.version[:12]}, git status: {_git(repo, 'status', '--short') or 'clean'}"
    )

    review = Workspace.open(repo, mode="review")
    patch = (
        "*** Begin Patch\n*** Update File: inventory.py\n@@ def summary\n"
        '-    return "done"\n+    return f"{len(items)} items"\n'
        "*** Add File: CHANGES.md\n+Summary now counts items.\n*** End Patch\n"
    )
    proposed = review.apply_patch(patch)
    print(f"  review proposal: {proposed.message}")
    print(f"  files on disk untouched: CHANGES.md exists? {(repo / 'CHANGES.md').exists()}")
    for info in review.proposals():
        print(f"  open proposal {info.id}: {info.status}, files {', '.join(info.files)}")
    detail = review.show(proposed.proposal_id)
    print("  its diff:")
    for line in detail.diff.splitlines()[:20]:
        print(f"    {line}")

    approved = review.approve(proposed.proposal_id, by="Demo Person")
    print(f"  approved: {approved.message}")
    print(f"  CHANGES.md now on disk: {(repo / 'CHANGES.md').read_text().strip()!r}")
    print("  git log:")
    for line in _git(repo, "log", "--oneline", "--graph", "feature").splitlines():
        print(f"    {line}")
    print("  its status note (git notes --ref gitpatch show HEAD):")
    note = json.loads(_git(repo, "notes", "--ref", "gitpatch", "show", "HEAD"))
    print(f"    status {note['status']}, by {note.get('approved_by')}, tool {note['tool']}")
    print(f"  git fsck: {_git(repo, 'fsck', '--strict') or 'clean'}")


def main() -> int:
    """Run both halves of the demo; the throwaway repository is removed afterwards."""
    show_matcher()
    root = Path(tempfile.mkdtemp(prefix="gitpatch-demo-"))
    try:
        show_git(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("\nDone. `make test` runs the whole suite.")
    print(
        "Review proposals in a browser (a demo repository): .venv/bin/python -m gitpatch.web.demo"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
