"""History through the installed ``gitpatch`` binary and the real git: honest texts, agent
authorship, renames in stats, newest-first lists, ``undo ID``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doors.cli.clikit import gp, gp_json, gp_ok
from tests.gitkit import git, make_repo, sr

pytestmark = pytest.mark.slow  # the gitpatch console script in processes of its own

BODY = "".join(f"line {i}\n" for i in range(1, 116))
MOVE = (
    "*** Begin Patch\n*** Update File: src/old.py\n*** Move to: lib/new.py\n@@\n line 4\n"
    "-line 5\n+LINE 5\n line 6\n*** End Patch\n"
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", {"src/old.py": BODY, "a.txt": "a\n", "b.txt": "b\n"})


def test_review_mode_says_proposed_not_applied(repo: Path) -> None:
    out = gp_ok(repo, "patch", "a.txt", "--review", "-", input=sr("a\n", "A\n"))
    assert out.startswith("Proposed ") and "Applied" not in out, out
    assert (repo / "a.txt").read_text() == "a\n"


def test_a_move_with_a_one_line_change_is_one_line_in_stats_and_show(repo: Path) -> None:
    pid = gp_json(repo, "apply-patch", "--review", "-", input=MOVE)["proposal_id"]
    stat = gp_ok(repo, "show", pid, "--stat")
    assert "+1" in stat and "-1" in stat and "+115" not in stat, stat
    shown = gp_json(repo, "show", pid)
    assert shown["stats"] == {"files": 1, "insertions": 1, "deletions": 1}
    assert "rename from src/old.py\nrename to lib/new.py\n" in shown["diff"]
    listing = gp_ok(repo, "proposals")
    assert "+1/-1" in listing and "+115" not in listing, listing
    (repo / "p.diff").write_text(shown["diff"])
    assert git(repo, "apply", "--check", "p.diff") == ""  # git reads it as the same move


def test_agent_commits_are_the_agents_and_the_person_commits_them(repo: Path) -> None:
    gp_ok(repo, "patch", "a.txt", "-", input=sr("a\n", "A\n"))
    log = git(repo, "log", "-1", "--format=%an <%ae>|%cn|%(trailers:key=Gitpatch-Session)")
    author, committer, trailer = log.strip().split("|")
    assert "gitpatch session" in author and author.endswith("@gitpatch.invalid>")
    assert committer == git(repo, "config", "user.name").strip()
    assert trailer.startswith("Gitpatch-Session: ")
    # the person's own commits stay theirs: git log tells the two apart
    assert "gitpatch.invalid" not in git(repo, "log", "-1", "--format=%ae", "HEAD~1")


def test_proposals_are_listed_newest_first(repo: Path) -> None:
    ids = [
        gp_json(repo, "patch", name, "--review", "-", input=sr(f"{name[0]}\n", "X\n"))[
            "proposal_id"
        ]
        for name in ("a.txt", "b.txt", "a.txt", "b.txt")
    ]
    listed = [row["id"] for row in gp_json(repo, "proposals")]
    assert listed == ids[::-1]


def test_undo_takes_an_id(repo: Path) -> None:
    first = gp_json(repo, "patch", "a.txt", "-", input=sr("a\n", "A\n"))["proposal_id"]
    gp_ok(repo, "patch", "b.txt", "-", input=sr("b\n", "B\n"))
    out = gp_ok(repo, "undo", first)
    assert f"Undid proposal {first}" in out
    assert (repo / "a.txt").read_text() == "a\n" and (repo / "b.txt").read_text() == "B\n"
    again = gp(repo, "undo", first)
    assert again.returncode != 0 and again.stderr.startswith("proposal_closed: ")
    before = git(repo, "rev-parse", "HEAD")
    unknown = gp(repo, "undo", "0123456789ab")
    assert unknown.returncode != 0 and unknown.stderr.startswith("proposal_not_found: ")
    assert git(repo, "rev-parse", "HEAD") == before and git(repo, "status", "--porcelain") == ""
