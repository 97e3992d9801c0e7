"""The CLI on a linked worktree and on an autocrlf repository (read, apply, proposals)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doors.cli.clikit import PATCH_A, gp, gp_json, gp_ok
from tests.gitkit import git, make_repo

#: the console script in a process per call: `make test-fast` leaves these out.
pytestmark = pytest.mark.slow


def test_linked_worktree_read_apply_and_proposals(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "main", {"a.txt": "a\n"})
    linked = tmp_path / "linked"
    git(main, "worktree", "add", "-q", "-b", "side", str(linked))
    assert "     1\ta" in gp_ok(linked, "read", "a.txt")

    landed = gp_json(linked, "apply-patch", "-", input=PATCH_A)
    assert landed["branch"] == "refs/heads/side"
    assert (linked / "a.txt").read_text() == "b\n"
    assert (main / "a.txt").read_text() == "a\n"  # the other worktree is untouched
    assert git(linked, "status", "--porcelain") == ""

    add = "*** Begin Patch\n*** Add File: n.txt\n+n\n*** End Patch\n"
    pid = gp_json(linked, "apply-patch", "--review", "-", input=add)["proposal_id"]
    assert pid in gp_ok(main, "proposals")  # proposals are shared refs
    gp_ok(linked, "approve", pid, "--by", "Ada")
    assert (linked / "n.txt").read_text() == "n\n"
    assert git(linked, "status", "--porcelain") == ""


def test_autocrlf_repository_read_apply_and_proposals(tmp_path: Path) -> None:
    repo = tmp_path / "crlf"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "work")
    git(repo, "config", "core.autocrlf", "true")
    (repo / "a.txt").write_bytes(b"a\r\nkeep\r\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-qm", "crlf file")

    assert "     1\ta\n     2\tkeep" in gp_ok(repo, "read", "a.txt")
    gp_ok(repo, "apply-patch", "-", input=PATCH_A)
    assert (repo / "a.txt").read_bytes() == b"b\r\nkeep\r\n"  # the file keeps its endings

    add = "*** Begin Patch\n*** Update File: a.txt\n@@\n-keep\n+kept\n*** End Patch\n"
    pid = gp_json(repo, "apply-patch", "--review", "-", input=add)["proposal_id"]
    assert pid in gp_ok(repo, "proposals")
    shown = gp_ok(repo, "show", pid)
    assert "+kept" in shown
    assert gp(repo, "approve", pid, "--by", "Ada").returncode == 0
    assert (repo / "a.txt").read_bytes().endswith(b"kept\r\n")
