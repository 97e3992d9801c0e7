"""Staged work: a path whose index entry differs from the branch is never overwritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import git
from tests.realrepo.kit import edit, fsck, make_repo, staged, state, status

FILES = {"a.txt": "one\ntwo\nthree\n", "b.txt": "bee\n"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", FILES)


def refused(ws: Workspace, repo: Path, code: str = "staged_changes") -> GitpatchError:
    before = state(repo)
    cached = staged(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(edit("a.txt", "three", "THREE"))
    assert err.value.code == code
    assert state(repo) == before and staged(repo) == cached
    return err.value


def test_staged_version_differing_from_head_and_disk_is_refused(repo: Path) -> None:
    (repo / "a.txt").write_text("one\nSTAGED\nthree\n")
    git(repo, "add", "a.txt")
    (repo / "a.txt").write_text("one\nSTAGED\nthree\nunstaged\n")
    err = refused(Workspace.open(repo), repo)
    assert err.details["paths"] == ["a.txt"] and "git restore --staged" in (err.hint or "")
    assert git(repo, "show", ":a.txt") == "one\nSTAGED\nthree\n"


def test_git_rm_cached_is_never_undone(repo: Path) -> None:
    git(repo, "rm", "-q", "--cached", "a.txt")
    refused(Workspace.open(repo), repo)
    assert status(repo) == "D  a.txt\n?? a.txt\n"


def test_git_rm_is_refused_too(repo: Path) -> None:
    git(repo, "rm", "-q", "a.txt")
    ws = Workspace.open(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(edit("a.txt", "three", "THREE"))
    assert err.value.code in ("staged_changes", "resource_not_found")
    assert status(repo) == "D  a.txt\n"


def test_staged_work_on_other_files_stays_staged(repo: Path) -> None:
    (repo / "b.txt").write_text("staged bee\n")
    git(repo, "add", "b.txt")
    Workspace.open(repo).propose(edit("a.txt", "three", "THREE"))
    assert staged(repo) == "M\tb.txt\n"
    assert git(repo, "show", ":b.txt") == "staged bee\n"
    assert (repo / "a.txt").read_text() == "one\ntwo\nTHREE\n"
    fsck(repo)


def test_approve_refuses_over_staged_work_and_changes_nothing(repo: Path) -> None:
    ws = Workspace.open(repo, "review")
    res = ws.propose(edit("a.txt", "three", "THREE"))
    (repo / "a.txt").write_text("ONE\ntwo\nthree\n")
    git(repo, "add", "a.txt")
    (repo / "a.txt").write_text(FILES["a.txt"])  # only the index differs from the branch
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.approve(res.proposal_id, by="Pat")
    assert err.value.code == "staged_changes"
    assert state(repo) == before
    git(repo, "checkout", "--", "a.txt")
    git(repo, "commit", "-q", "-m", "person commits the staged work")
    ws.approve(res.proposal_id, by="Pat")
    assert (repo / "a.txt").read_text() == "ONE\ntwo\nTHREE\n"
    assert status(repo) == ""
    fsck(repo)


def test_staged_work_is_seen_in_a_split_index_too(repo: Path) -> None:
    # libgit2 cannot read a split index: the entries are read with git ls-files instead
    git(repo, "update-index", "--split-index")
    (repo / "a.txt").write_text("one\nSTAGED\nthree\n")
    git(repo, "add", "a.txt")
    (repo / "a.txt").write_text(FILES["a.txt"])
    refused(Workspace.open(repo), repo)
    assert git(repo, "show", ":a.txt") == "one\nSTAGED\nthree\n"


def test_an_unmerged_path_is_refused_in_a_split_index_too(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "a.txt").write_text("one\nOTHER\nthree\n")
    git(repo, "commit", "-q", "-am", "other")
    git(repo, "checkout", "-q", "work")
    (repo / "a.txt").write_text("one\nWORK\nthree\n")
    git(repo, "commit", "-q", "-am", "work")
    git(repo, "merge", "other", check=False)
    git(repo, "update-index", "--split-index")
    ws = Workspace.open(repo, "review")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(edit("a.txt", "three", "THREE"))
    assert err.value.code == "operation_in_progress" and "merge" in err.value.message
    assert state(repo) == before


def test_an_older_index_written_back_after_a_land_is_named_and_undone_by_its_hint(
    repo: Path,
) -> None:
    """A person's ``git commit`` (no ``-a``) that read the index before a land and lost its
    race for HEAD writes that index back: the land's change is undone in it. The next land
    refuses, says so, and its hint puts the committed version back."""
    ws = Workspace.open(repo)
    older = (repo / ".git" / "index").read_bytes()  # what the losing commit had read
    ws.propose(edit("a.txt", "one", "ONE"))
    (repo / ".git" / "index").write_bytes(older)  # ... and wrote back after the land
    err = refused(ws, repo)
    assert err.details == {"paths": ["a.txt"], "reason": "older_index"}
    assert "as it was before the branch's last commit" in err.message
    assert "`git restore --staged a.txt`" in (err.hint or "")
    git(repo, "restore", "--staged", "a.txt")
    ws.propose(edit("a.txt", "three", "THREE"))
    assert git(repo, "show", "HEAD:a.txt") == "ONE\ntwo\nTHREE\n"
    assert status(repo) == ""


@pytest.mark.parametrize("checkout", ["linked", "autocrlf", "sparse"])
def test_an_older_index_is_named_on_real_checkouts(repo: Path, checkout: str) -> None:
    """The same in a linked worktree (its own index), a CRLF checkout and a sparse one."""
    where = repo
    if checkout == "linked":
        where = repo.parent / "linked"
        git(repo, "worktree", "add", "-q", "-b", "feature", str(where))
    elif checkout == "autocrlf":
        git(repo, "config", "core.autocrlf", "true")
        (repo / "a.txt").unlink()
        git(repo, "checkout", "--", "a.txt")  # CRLF on disk now
        assert (repo / "a.txt").read_bytes() == b"one\r\ntwo\r\nthree\r\n"
    else:
        git(repo, "sparse-checkout", "set", "--no-cone", "/a.txt")
        assert not (repo / "b.txt").exists()
    index = Path(git(where, "rev-parse", "--path-format=absolute", "--git-path", "index").strip())
    ws = Workspace.open(where)
    older = index.read_bytes()
    ws.propose(edit("a.txt", "one", "ONE"))
    index.write_bytes(older)
    before = state(where)
    with pytest.raises(GitpatchError) as err:
        ws.propose(edit("a.txt", "three", "THREE"))
    assert err.value.code == "staged_changes"
    assert err.value.details == {"paths": ["a.txt"], "reason": "older_index"}
    assert state(where) == before
    git(where, "restore", "--staged", "a.txt")
    ws.propose(edit("a.txt", "three", "THREE"))
    assert git(where, "show", "HEAD:a.txt") == "ONE\ntwo\nTHREE\n"
    assert status(where) == ""


def test_a_persons_own_staged_change_is_not_called_an_older_index(repo: Path) -> None:
    Workspace.open(repo).propose(edit("a.txt", "one", "ONE"))
    (repo / "a.txt").write_text("ONE\nSTAGED\nthree\n")
    git(repo, "add", "a.txt")
    err = refused(Workspace.open(repo), repo)
    assert err.details == {"paths": ["a.txt"]}
    assert "has staged changes" in err.message
