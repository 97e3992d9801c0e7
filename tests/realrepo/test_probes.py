"""States probed one by one, each handled as git would or refused cleanly: fsmonitor, a gc /
pack-refs / maintenance run between or during calls, ``core.ignorecase=true``,
``core.symlinks=false`` and file names that are not UTF-8."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.core.model import AddFile, Proposal, Replace, UpdateFile
from gitpatch.errors import GitpatchError
from tests.gitkit import git, head
from tests.realrepo.kit import edit, fsck, make_repo, state, status

FILES = {"a.txt": "one\ntwo\n", "b.txt": "b\n", "d/c.txt": "c\n"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", FILES)


# -- fsmonitor ----------------------------------------------------------------------------------

FSMONITOR = """#!/bin/sh
# a query-fsmonitor hook (protocol 2) that reports {report}
printf '%s\\0' "token-$(date +%s%N)"
{body}
"""


@pytest.mark.parametrize("report", ["everything changed", "nothing changed"])
def test_fsmonitor_hook_keeps_status_clean_after_edits(repo: Path, report: str) -> None:
    """With an fsmonitor index extension, the entries a land writes stay true: even a hook
    that reports nothing changed (git then trusts the index) sees the new content."""
    hook = repo / ".git/fsmonitor-hook"
    body = "printf '/\\0'" if report == "everything changed" else ":"
    hook.write_text(FSMONITOR.format(report=report, body=body))
    hook.chmod(hook.stat().st_mode | stat.S_IEXEC)
    git(repo, "config", "core.fsmonitor", str(hook))
    git(repo, "update-index", "--fsmonitor")
    git(repo, "status", "--porcelain")  # writes the FSMN extension
    ws = Workspace.open(repo)
    ws.propose(edit("a.txt", "two", "TWO"))
    ws.propose(Proposal((AddFile("new.txt", "n\n"),), "patch_resource"))
    # HEAD == index, then index == files. Not ``git diff HEAD``: git 2.39's diff-index skips
    # lstat for fsmonitor-valid entries and then reads an uninitialised stat, so it reports
    # random files as deleted with a correct index (pre-commit/pre-commit#2795; fixed in git).
    assert git(repo, "diff", "--cached", "HEAD", "--stat") == ""
    assert git(repo, "diff", "--stat") == "" and status(repo) == ""
    assert git(repo, "show", "HEAD:new.txt") == "n\n"
    fsck(repo)


# -- gc, pack-refs, maintenance -----------------------------------------------------------------


@pytest.mark.parametrize(
    "run", [["gc", "-q", "--prune=now"], ["pack-refs", "--all"], ["maintenance", "run"]]
)
def test_a_gc_between_calls_changes_nothing_for_the_next(repo: Path, run: list[str]) -> None:
    ws = Workspace.open(repo, mode="review")
    res = ws.propose(edit("a.txt", "one", "ONE"))
    git(repo, *run)
    ws.approve(res.proposal_id, "person")
    assert (repo / "a.txt").read_text() == "ONE\ntwo\n" and status(repo) == ""
    git(repo, *run)
    Workspace.open(repo).propose(edit("b.txt", "b", "B"))
    fsck(repo)


def test_a_pin_pruned_by_gc_is_a_clear_error_and_changes_nothing(repo: Path) -> None:
    (repo / "a.txt").write_text("one\ntwo\nmine\n")
    ws = Workspace.open(repo)
    seen = ws.read("a.txt")  # a pin: a commit no ref points at
    git(repo, "gc", "-q", "--prune=now")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.apply(
            [{"old_string": "two", "new_string": "TWO"}],
            path="a.txt",
            expected_version=seen.version,
        )
    assert err.value.code in ("invalid_arguments", "resource_conflict")
    assert seen.version[:12] in err.value.message or "expected_version" in err.value.message
    assert state(repo) == before


def test_a_pack_refs_holding_packed_refs_lock_refuses_a_reject_cleanly(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git pack-refs (or gc) holds packed-refs.lock while it runs: a ref delete waits, then
    is concurrent_update naming the lock; nothing changed; it works once the lock is gone."""
    monkeypatch.setattr("gitpatch.store._refs.LOCK_RETRIES", 2)
    ws = Workspace.open(repo, mode="review")
    res = ws.propose(edit("a.txt", "one", "ONE"))
    git(repo, "pack-refs", "--all")
    lock = repo / ".git/packed-refs.lock"
    lock.write_text("")  # pack-refs at work
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.reject(res.proposal_id, "person", "no")
    assert err.value.code == "concurrent_update" and "packed-refs.lock" in err.value.message
    assert state(repo) == before and lock.exists()
    lock.unlink()
    ws.reject(res.proposal_id, "person", "no")
    assert git(repo, "branch", "--list", f"gitpatch/{res.proposal_id}") == ""


# -- core.ignorecase ----------------------------------------------------------------------------


def test_ignorecase_a_new_path_that_is_a_tracked_one_for_git_is_refused(repo: Path) -> None:
    git(repo, "config", "core.ignorecase", "true")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo).propose(Proposal((AddFile("A.txt", "x\n"),), "patch_resource"))
    assert err.value.code == "resource_exists" and "core.ignorecase" in err.value.message
    assert "a.txt" in err.value.message and state(repo) == before


def test_ignorecase_a_case_only_rename_is_refused_cleanly(repo: Path) -> None:
    git(repo, "config", "core.ignorecase", "true")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo).propose(
            Proposal(
                (UpdateFile("b.txt", (Replace("b", "B"),), move_to="B.txt"),), "patch_resource"
            )
        )
    assert err.value.code == "resource_exists" and "git mv" in (err.value.hint or "")
    assert state(repo) == before


def test_without_ignorecase_both_names_are_files(repo: Path) -> None:
    Workspace.open(repo).propose(Proposal((AddFile("A.txt", "x\n"),), "patch_resource"))
    assert git(repo, "ls-files") == "A.txt\na.txt\nb.txt\nd/c.txt\n"


# -- core.symlinks=false ------------------------------------------------------------------------


def test_symlinks_false_a_link_checked_out_as_a_file_is_refused_others_land(
    tmp_path: Path,
) -> None:
    root = make_repo(tmp_path / "r", FILES)
    os.symlink("a.txt", root / "link")
    git(root, "add", "link")
    git(root, "commit", "-q", "-m", "link")
    git(root, "config", "core.symlinks", "false")
    (root / "link").unlink()
    git(root, "checkout", "--", "link")  # now a plain file holding the target
    assert (root / "link").read_text() == "a.txt" and not (root / "link").is_symlink()
    before = state(root)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(root).propose(edit("link", "a.txt", "b.txt"))
    assert err.value.code == "path_unsafe" and "symbolic link" in err.value.message
    assert state(root) == before
    Workspace.open(root).propose(edit("a.txt", "two", "TWO"))
    assert status(root) == "" and git(root, "ls-files", "-s", "link").startswith("120000")


# -- non-UTF-8 path bytes -----------------------------------------------------------------------


@pytest.fixture
def latin1(tmp_path: Path) -> tuple[Path, str]:
    root = make_repo(tmp_path / "r", FILES)
    name = os.fsdecode(b"caf\xe9.txt")
    (root / name).write_text("cafe\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a latin-1 name")
    return root, name


def test_a_non_utf8_name_is_refused_cleanly(latin1: tuple[Path, str]) -> None:
    root, name = latin1
    ws = Workspace.open(root)
    before = state(root)
    for call in (
        lambda: ws.read(name),
        lambda: ws.propose(edit(name, "cafe", "CAFE")),
        lambda: ws.propose(Proposal((AddFile(name + "2", "x\n"),), "patch_resource")),
    ):
        with pytest.raises(GitpatchError) as err:
            call()
        assert err.value.code == "path_unsafe" and "not valid UTF-8" in err.value.message
        assert "caf\\xe9" in err.value.message
    assert state(root) == before


def test_other_files_of_a_repository_with_non_utf8_names_land(latin1: tuple[Path, str]) -> None:
    root, name = latin1
    ws = Workspace.open(root, mode="review")
    res = ws.propose(edit("a.txt", "two", "TWO"))
    assert ws.show(res.proposal_id).diff
    ws.approve(res.proposal_id, "person")
    assert status(root) == "" and head(root) != ""
    assert (root / name).read_text() == "cafe\n"
    fsck(root)
