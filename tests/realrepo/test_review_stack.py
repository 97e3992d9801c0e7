"""A review-mode session's stack on real checkouts: CRLF conversion, staged work, a linked
worktree and a sparse checkout. Each chains two edits of one file by version, reads the
pending change, and lands the stack as git would, leaving the person's state alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import git, head
from tests.realrepo.kit import fsck, make_repo, staged, status

FILES = {"a.txt": "one\ntwo\nthree\n", "s.txt": "staged\n", "b/y.txt": "y one\ny two\n"}


def _chain(ws: Workspace, path: str) -> tuple[str, str]:
    """Two edits of ``path`` chained by version; returns both proposal ids."""
    seen = ws.read(path)
    first = ws.apply(
        [{"after_line": 0, "new_string": "zero\n"}],
        path=path,
        expected_version=seen.version,
    )
    again = ws.read(path)
    assert again.version == first.version and again.content.startswith("zero")
    second = ws.apply(
        [{"old_string": "two", "new_string": "TWO"}],
        path=path,
        expected_version=first.version,
    )
    return first.proposal_id, second.proposal_id


def test_a_stack_on_an_autocrlf_checkout_lands_as_git_would(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "one\ntwo\n"})
    git(repo, "config", "core.autocrlf", "true")
    (repo / "a.txt").unlink()
    git(repo, "checkout", "--", "a.txt")
    assert (repo / "a.txt").read_bytes() == b"one\r\ntwo\r\n"
    ws = Workspace.open(repo, "review", session="bot")
    seen = ws.read("a.txt")
    first = ws.apply(
        [{"after_line": 0, "new_string": "zero\r\n"}],
        path="a.txt",
        expected_version=seen.version,
    )
    assert ws.read("a.txt").content == "zero\r\none\r\ntwo\r\n"
    ws.apply(
        [{"old_string": "two", "new_string": "TWO"}],
        path="a.txt",
        expected_version=first.version,
    )
    ws.approve("bot", by="Pat")
    assert git(repo, "show", "HEAD:a.txt") == "zero\none\nTWO\n"  # stored as git add would
    assert (repo / "a.txt").read_bytes() == b"zero\r\none\r\nTWO\r\n"
    assert status(repo) == ""
    fsck(repo)


def test_a_stack_leaves_the_persons_staged_work_staged(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    (repo / "s.txt").write_text("staged by the person\n")
    git(repo, "add", "s.txt")
    ws = Workspace.open(repo, "review", session="bot")
    _chain(ws, "a.txt")
    assert staged(repo) == "M\ts.txt\n"
    ws.approve("bot", by="Pat")
    assert (repo / "a.txt").read_text() == "zero\none\nTWO\nthree\n"
    assert staged(repo) == "M\ts.txt\n"
    assert git(repo, "show", ":s.txt") == "staged by the person\n"
    assert status(repo) == "M  s.txt\n"
    fsck(repo)


def test_a_stack_in_a_linked_worktree_lands_there_only(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "main", FILES)
    side = tmp_path / "side"
    git(main, "worktree", "add", "-q", "-b", "feature", str(side))
    ws = Workspace.open(side, "review", session="bot")
    _first, second = _chain(ws, "a.txt")
    assert Workspace.open(main, "review").show(second).info.lands == [_first]
    Workspace.open(side, "review").approve("bot", by="Pat")
    assert (side / "a.txt").read_text() == "zero\none\nTWO\nthree\n" and status(side) == ""
    assert (main / "a.txt").read_text() == FILES["a.txt"] and status(main) == ""
    assert head(main, "work") != head(main, "feature")
    fsck(main)


def test_a_stack_outside_the_sparse_set_stays_out_of_the_working_tree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    git(repo, "sparse-checkout", "set", "--no-cone", "/*.txt")
    assert not (repo / "b").exists()
    ws = Workspace.open(repo, "review", session="bot")
    seen = ws.read("b/y.txt")
    first = ws.apply(
        [{"after_line": 0, "new_string": "zero\n"}],
        path="b/y.txt",
        expected_version=seen.version,
    )
    assert ws.read("b/y.txt").content == "zero\ny one\ny two\n"
    ws.apply(
        [{"old_string": "y two", "new_string": "Y TWO"}],
        path="b/y.txt",
        expected_version=first.version,
    )
    ws.approve("bot", by="Pat")
    assert git(repo, "show", "HEAD:b/y.txt") == "zero\ny one\nY TWO\n"
    assert not (repo / "b").exists() and status(repo) == ""
    assert git(repo, "ls-files", "-t", "b/y.txt").startswith("S ")
    fsck(repo)


@pytest.mark.parametrize("squash", [False, True])
def test_a_person_editing_a_stacked_file_meanwhile_keeps_their_edit(
    tmp_path: Path, squash: bool
) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    ws = Workspace.open(repo, "review", session="bot")
    _chain(ws, "a.txt")
    (repo / "a.txt").write_text("the person's own text\n")
    refs = git(repo, "for-each-ref")
    with pytest.raises(GitpatchError):
        ws.approve("bot", by="Pat", squash=squash)  # landing would overwrite their edit
    assert (repo / "a.txt").read_text() == "the person's own text\n"
    assert git(repo, "for-each-ref") == refs


def test_adds_moves_and_deletes_stack_too(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    ws = Workspace.open(repo, "review", session="bot")
    ws.apply("*** Begin Patch\n*** Add File: new.txt\n+new\n*** End Patch\n")
    assert ws.read("new.txt").content == "new\n"  # not on disk: read from the stack
    ws.apply(
        "*** Begin Patch\n*** Update File: new.txt\n*** Move to: moved.txt\n@@\n-new\n+NEW\n"
        "*** End Patch\n"
    )
    assert ws.read("moved.txt").content == "NEW\n"
    ws.apply("*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\n")
    with pytest.raises(GitpatchError) as err:
        ws.read("a.txt")
    assert err.value.code == "resource_not_found"
    ws.apply("*** Begin Patch\n*** Add File: a.txt\n+again\n*** End Patch\n")
    assert status(repo) == ""  # nothing on disk moved
    ws.approve("bot", by="Pat")
    assert (repo / "a.txt").read_text() == "again\n" and (repo / "moved.txt").read_text() == "NEW\n"
    assert not (repo / "new.txt").exists() and status(repo) == ""
    fsck(repo)


def test_the_persons_uncommitted_edit_of_a_stacked_file_is_never_lost(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    (repo / "a.txt").write_text("one\ntwo\nthree\nthe person's line\n")
    ws = Workspace.open(repo, "review", session="bot")
    _chain(ws, "a.txt")
    ws.approve("bot", by="Pat")
    text = (repo / "a.txt").read_text()
    assert text.startswith("zero\none\nTWO\n") and "the person's line\n" in text
    assert git(repo, "show", "HEAD:a.txt").startswith("zero\none\nTWO\n")
    fsck(repo)


def test_a_proposal_branch_deleted_by_hand_leaves_the_stack(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    ws = Workspace.open(repo, "review", session="bot")
    first, second = _chain(ws, "a.txt")
    git(repo, "branch", "-q", "-D", f"gitpatch/{second}")  # git alone: no note changes
    seen = ws.read("a.txt")
    assert seen.content == "zero\none\ntwo\nthree\n" and seen.version == head(
        repo, f"gitpatch/{first}"
    )
    third = ws.apply([{"old_string": "three", "new_string": "3"}], path="a.txt")
    assert head(repo, f"gitpatch/{third.proposal_id}^") == head(repo, f"gitpatch/{first}")
    fsck(repo)
