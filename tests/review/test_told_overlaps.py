"""What a session was told of other sessions' work on its files: each line once, kept across
Workspace objects (a restarted server), forgotten once gone, told again when it comes back."""

from __future__ import annotations

from pathlib import Path

from gitpatch import Workspace
from gitpatch.review import feedback
from tests.gitkit import make_repo

LINE = "a.txt: session other (proposal 0123456789ab)"
MORE = "b.txt: session other (proposal 0123456789ab)"


def test_each_overlap_is_told_once_across_workspaces_and_again_after_it_went(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    ctx = Workspace.open(repo, mode="review", session="s").plumbing.context
    assert feedback.new_overlaps(ctx, [LINE]) == [LINE]
    assert feedback.new_overlaps(ctx, [LINE]) == []
    later = Workspace.open(repo, mode="review", session="s").plumbing.context  # a restarted server
    assert feedback.new_overlaps(later, [LINE, MORE]) == [MORE]
    other = Workspace.open(repo, mode="review", session="t").plumbing.context  # its own record
    assert feedback.new_overlaps(other, [LINE]) == [LINE]
    assert feedback.new_overlaps(later, []) == []  # gone: forgotten
    assert feedback.new_overlaps(later, [LINE]) == [LINE]


def test_an_unreadable_record_tells_again_rather_than_never(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    ctx = Workspace.open(repo, mode="review", session="s").plumbing.context
    feedback.new_overlaps(ctx, [LINE])
    (repo / ".git" / "gitpatch" / "sessions" / "s.told").write_text("{not json")
    assert feedback.new_overlaps(ctx, [LINE]) == [LINE]
    assert feedback.new_overlaps(ctx, [LINE]) == []
