"""The person's uncommitted work stays theirs: a change is carried onto it by a 3-way merge and
never committed with it; where the two overlap, dirty_worktree names the lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import before_first_publish, git
from tests.realrepo.kit import delete, edit, fsck, make_repo, staged, state, status

TEXT = "".join(f"line {i}\n" for i in range(1, 11))
FILES = {"a.txt": TEXT, "b.txt": "bee\n", "d/c.txt": "sea\n"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", FILES)


def mine(text: str = TEXT) -> str:
    """``text`` with the person's uncommitted line after line 1."""
    return text.replace("line 1\n", "line 1\nPERSON\n", 1)


def carried(repo: Path, ws: Workspace) -> None:
    res = ws.propose(edit("a.txt", "line 9", "LINE 9"))
    assert res.carried == ["a.txt"] and res.recorded == []
    assert "stays uncommitted" in res.message
    assert git(repo, "show", "HEAD:a.txt") == TEXT.replace("line 9", "LINE 9")
    assert (repo / "a.txt").read_text() == mine().replace("line 9", "LINE 9")
    assert "Record uncommitted" not in git(repo, "log", "--format=%s")
    fsck(repo)


def test_the_change_is_committed_alone_and_the_persons_line_stays_uncommitted(repo: Path) -> None:
    (repo / "a.txt").write_text(mine())
    carried(repo, Workspace.open(repo))
    assert status(repo) == " M a.txt\n"
    assert [line for line in git(repo, "diff").splitlines() if line[:1] in "+-"][2:] == ["+PERSON"]


def test_staged_work_in_other_files_stays_staged(repo: Path) -> None:
    (repo / "b.txt").write_text("bee\nstaged\n")
    git(repo, "add", "b.txt")
    (repo / "a.txt").write_text(mine())
    carried(repo, Workspace.open(repo))
    assert staged(repo) == "M\tb.txt\n"
    assert status(repo) == " M a.txt\nM  b.txt\n"


def test_a_staged_touched_file_is_staged_changes(repo: Path) -> None:
    (repo / "a.txt").write_text(mine())
    git(repo, "add", "a.txt")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo).propose(edit("a.txt", "line 9", "LINE 9"))
    assert err.value.code == "staged_changes" and state(repo) == before


def test_overlapping_lines_are_named_and_nothing_changes(repo: Path) -> None:
    (repo / "a.txt").write_text(TEXT.replace("line 5\n", "line five, the person's\n"))
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo).propose(edit("a.txt", "line 6", "LINE 6"))
    assert err.value.code == "dirty_worktree"
    assert "a.txt" in err.value.message and "line 5" in err.value.message
    assert err.value.details["lines"] == [[5, 5]]
    assert state(repo) == before


def test_deleting_a_file_with_uncommitted_changes_is_refused(repo: Path) -> None:
    (repo / "b.txt").write_text("bee\nmine\n")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo).propose(delete("b.txt"))
    assert err.value.code == "dirty_worktree" and "deletes b.txt" in err.value.message
    assert state(repo) == before


def test_an_untracked_file_is_not_committed_with_the_change(repo: Path) -> None:
    (repo / "draft.txt").write_text("draft\n")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo).propose(edit("draft.txt", "draft", "final"))
    assert err.value.code == "dirty_worktree" and "not committed" in err.value.message
    assert state(repo) == before


def test_review_mode_proposes_only_the_change_and_approval_carries_it(repo: Path) -> None:
    (repo / "a.txt").write_text(mine())
    ws = Workspace.open(repo, mode="review")
    res = ws.propose(edit("a.txt", "line 9", "LINE 9"))
    assert res.carried == ["a.txt"] and "approving it merges it" in res.message
    assert git(repo, "show", f"{res.version}:a.txt") == TEXT.replace("line 9", "LINE 9")
    assert (
        git(repo, "rev-parse", f"{res.version}^").strip() == git(repo, "rev-parse", "HEAD").strip()
    )
    assert ws.show(res.proposal_id).recorded_files == []
    # the person edits the file again before approving: the approval carries, not refuses
    (repo / "a.txt").write_text(mine() + "more of mine\n")
    ws.approve(res.proposal_id, by="Ada")
    assert (repo / "a.txt").read_text() == mine().replace("line 9", "LINE 9") + "more of mine\n"
    assert git(repo, "show", "HEAD:a.txt") == TEXT.replace("line 9", "LINE 9")
    assert status(repo) == " M a.txt\n"


def test_record_stays_a_setting_and_says_so(repo: Path) -> None:
    git(repo, "config", "gitpatch.uncommitted", "record")
    (repo / "a.txt").write_text(mine())
    res = Workspace.open(repo).propose(edit("a.txt", "line 9", "LINE 9"))
    assert res.recorded == ["a.txt"] and "recorded in a commit of their own" in res.message
    assert git(repo, "log", "-1", "--format=%s", "HEAD~1").startswith("Record uncommitted")
    assert status(repo) == ""


def test_a_bad_setting_is_refused(repo: Path) -> None:
    git(repo, "config", "gitpatch.uncommitted", "sometimes")
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo)
    assert err.value.code == "invalid_arguments" and "gitpatch.uncommitted" in err.value.message


def test_sparse_checkout(repo: Path) -> None:
    git(repo, "sparse-checkout", "set", "--no-cone", "/a.txt", "/b.txt")
    assert not (repo / "d").exists()
    (repo / "a.txt").write_text(mine())
    carried(repo, Workspace.open(repo))
    assert status(repo) == " M a.txt\n" and not (repo / "d").exists()


def test_a_persons_linked_worktree(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "main", FILES)
    side = tmp_path / "side"
    git(main, "worktree", "add", "-q", "-b", "feature", str(side))
    (side / "a.txt").write_text(mine())
    (main / "a.txt").write_text("main's own edit\n")
    res = Workspace.open(side).propose(edit("a.txt", "line 9", "LINE 9"))
    assert res.carried == ["a.txt"]
    assert git(side, "show", "feature:a.txt") == TEXT.replace("line 9", "LINE 9")
    assert (side / "a.txt").read_text() == mine().replace("line 9", "LINE 9")
    assert status(side) == " M a.txt\n"
    assert (main / "a.txt").read_text() == "main's own edit\n"
    fsck(main)


def test_a_disk_edit_while_preparing_is_carried_on_the_retry(repo: Path) -> None:
    ws = Workspace.open(repo)
    with before_first_publish(lambda: (repo / "a.txt").write_text(mine())):
        res = ws.propose(edit("a.txt", "line 9", "LINE 9"))
    assert res.carried == ["a.txt"]
    assert (repo / "a.txt").read_text() == mine().replace("line 9", "LINE 9")
    assert git(repo, "show", "HEAD:a.txt") == TEXT.replace("line 9", "LINE 9")


def test_undo_carries_onto_the_persons_edits_too(repo: Path) -> None:
    ws = Workspace.open(repo)
    ws.propose(edit("a.txt", "line 9", "LINE 9"))
    (repo / "a.txt").write_text(mine(TEXT.replace("line 9", "LINE 9")))
    ws.undo()
    assert git(repo, "show", "HEAD:a.txt") == TEXT
    assert (repo / "a.txt").read_text() == mine()
    assert status(repo) == " M a.txt\n"
    fsck(repo)
