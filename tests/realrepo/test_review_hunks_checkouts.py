"""Partial verdicts and a person's edit landing into real checkouts: a CRLF-converting one,
a sparse one, one with staged work, and a linked worktree. What lands on disk is what `git
checkout` would write, the person's staged and uncommitted work stays theirs, `git status` and
`git fsck --strict` agree."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.core.model import Proposal, Replace, UpdateFile
from tests.gitkit import git, make_repo, status_porcelain
from tests.safety.proofkit import fsck_problems

LINES = "".join(f"line {i}\n" for i in range(1, 31))
PERSON = "Pat <pat@example.com>"


def two_hunks(path: str) -> Proposal:
    edits = (Replace("line 2\n", "line two\n"), Replace("line 28\n", "line 28b\n"))
    return Proposal((UpdateFile(path, edits),), "patch_resource", tool="patch")


def decide(repo: Path, path: str) -> str:
    """Propose two hunks in ``path``; approve hunk 2 after editing it; reject hunk 1."""
    pid = Workspace.open(repo, mode="review", session="bot").propose(two_hunks(path)).proposal_id
    person = Workspace.open(repo, mode="review")
    mine = "line 25\nline 26\nline 27\nline 28 (Pat)\nline 29\nline 30\n"  # the hunk's new side
    person.amend(pid, by=PERSON, hunk=f"{path}:2", text=mine)
    person.reject(pid, by=PERSON, hunks="1", reason="keep it")
    person.approve(pid, by=PERSON, hunks="2")
    return LINES.replace("line 28\n", "line 28 (Pat)\n")


def test_a_crlf_checkout_gets_what_git_checkout_writes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": LINES}, "main")
    git(repo, "config", "core.autocrlf", "true")
    (repo / "a.txt").unlink()
    git(repo, "checkout", "--", "a.txt")
    assert (repo / "a.txt").read_bytes() == LINES.replace("\n", "\r\n").encode()
    want = decide(repo, "a.txt")
    assert git(repo, "show", "main:a.txt") == want  # stored with LF
    assert (repo / "a.txt").read_bytes() == want.replace("\n", "\r\n").encode()
    assert status_porcelain(repo) == "" and fsck_problems(repo) == ""


def test_a_sparse_checkout_keeps_files_outside_its_set_off_disk(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"in/a.txt": "x\n", "out/b.txt": LINES}, "main")
    git(repo, "sparse-checkout", "set", "in")
    want = decide(repo, "out/b.txt")
    assert git(repo, "show", "main:out/b.txt") == want
    assert not (repo / "out").exists()
    assert "S out/b.txt" in git(repo, "ls-files", "-t")
    assert status_porcelain(repo) == "" and fsck_problems(repo) == ""


def test_staged_and_uncommitted_work_stays_the_persons(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": LINES, "b.txt": "b\n", "c.txt": "c\n"}, "main")
    (repo / "b.txt").write_text("b staged\n")
    git(repo, "add", "b.txt")
    (repo / "c.txt").write_text("c on disk\n")
    want = decide(repo, "a.txt")
    assert (repo / "a.txt").read_text() == want
    assert status_porcelain(repo) == "M  b.txt\n M c.txt\n"
    assert git(repo, "diff", "--cached", "--name-only").split() == ["b.txt"]
    assert (repo / "c.txt").read_text() == "c on disk\n"
    assert fsck_problems(repo) == ""


@pytest.mark.parametrize("where", ["linked", "main"])
def test_a_linked_worktree_lands_where_the_branch_is_checked_out(
    tmp_path: Path, where: str
) -> None:
    main = make_repo(tmp_path / "main", {"a.txt": LINES}, "trunk")
    git(main, "worktree", "add", "-q", "-b", "side", str(tmp_path / "linked"))
    linked = tmp_path / "linked"
    repo = linked if where == "linked" else main
    want = decide(repo, "a.txt")
    branch = "side" if where == "linked" else "trunk"
    assert git(main, "show", f"{branch}:a.txt") == want
    assert (repo / "a.txt").read_text() == want
    other = main if where == "linked" else linked
    assert (other / "a.txt").read_text() == LINES  # the other checkout is untouched
    assert status_porcelain(main) == "" and status_porcelain(linked) == ""
    assert fsck_problems(main) == ""
