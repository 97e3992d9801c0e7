"""Protected branches: auto mode lands on gitpatch/session/<name>, never on the protected one."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch.errors import GitpatchError
from gitpatch.workspace.api import Workspace, protected_branches, session_target
from tests.doors.cli.clikit import gp_json
from tests.gitkit import git, head, make_repo, status_porcelain
from tests.workspace.workspace_kit import commit_on, sr, state

FILES = {"a.txt": "alpha\nbeta\n", "b.txt": "one\n"}
SESSION = "refs/heads/gitpatch/session/agent"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", FILES, branch="main")


def test_auto_on_main_starts_session_keeping_local_changes(repo: Path) -> None:
    base = head(repo)
    (repo / "b.txt").write_text("one\nlocal\n")
    index_before = (repo / ".git/index").read_bytes()
    ws = Workspace.open(repo)
    assert ws.target == "refs/heads/main" and ws.branch == SESSION and ws.session == "agent"
    assert git(repo, "symbolic-ref", "HEAD").strip() == SESSION
    assert head(repo, SESSION) == base
    assert (repo / ".git/index").read_bytes() == index_before
    assert status_porcelain(repo) == " M b.txt\n"
    res = ws.patch("a.txt", sr("beta\n", "BETA\n"))
    assert res.branch == SESSION and res.target == "refs/heads/main"
    assert SESSION in res.message and "approve('agent')" in res.message
    assert head(repo, "main") == base
    assert head(repo, SESSION) == res.version
    assert (repo / "a.txt").read_text() == "alpha\nBETA\n"
    assert status_porcelain(repo) == " M b.txt\n"
    assert session_target(ws.store, "agent") == "refs/heads/main"


def test_reopen_resumes_session(repo: Path) -> None:
    ws = Workspace.open(repo)
    first = ws.patch("a.txt", sr("beta\n", "BETA\n"))
    again = Workspace.open(repo)
    assert again.branch == SESSION and again.target == "refs/heads/main"
    second = again.patch("b.txt", sr("one\n", "ONE\n"))
    assert second.base == first.version and head(repo, "main") != second.version


def test_resume_from_main_switches_files_to_session(repo: Path) -> None:
    ws = Workspace.open(repo)
    res = ws.patch("a.txt", sr("beta\n", "BETA\n"))
    git(repo, "checkout", "-q", "main")
    assert (repo / "a.txt").read_text() == FILES["a.txt"]
    Workspace.open(repo)
    assert git(repo, "symbolic-ref", "HEAD").strip() == SESSION
    assert head(repo) == res.version
    assert (repo / "a.txt").read_text() == "alpha\nBETA\n" and status_porcelain(repo) == ""


def test_resume_refused_when_local_changes_would_be_lost(repo: Path) -> None:
    Workspace.open(repo).patch("a.txt", sr("beta\n", "BETA\n"))
    git(repo, "checkout", "-q", "main")
    (repo / "a.txt").write_text("mine\n")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo)
    assert err.value.code == "dirty_worktree" and "a.txt" in err.value.message
    assert state(repo) == before


def test_named_session_and_review_mode_needs_none(repo: Path) -> None:
    ws = Workspace.open(repo, session="feature-x")
    assert ws.branch == "refs/heads/gitpatch/session/feature-x"
    git(repo, "checkout", "-q", "main")
    review = Workspace.open(repo, mode="review")
    assert review.session is None and review.branch == "refs/heads/main"
    res = review.patch("a.txt", sr("beta\n", "B\n"))
    assert res.branch == f"refs/heads/gitpatch/{res.proposal_id}"
    assert head(repo, "main") == res.base


def test_protected_config_multi_valued_and_comma_separated(repo: Path) -> None:
    git(repo, "config", "--add", "gitpatch.protected", "release, prod")
    git(repo, "config", "--add", "gitpatch.protected", "main")
    ws = Workspace.open(repo, mode="review")
    assert protected_branches(ws.store) == {
        "refs/heads/release",
        "refs/heads/prod",
        "refs/heads/main",
    }
    assert protected_branches(ws.store, ["dev"]) == {"refs/heads/dev"}


def test_unprotected_by_override_lands_on_main(repo: Path) -> None:
    ws = Workspace.open(repo, protected=[])
    res = ws.patch("a.txt", sr("beta\n", "BETA\n"))
    assert res.branch == "refs/heads/main" and head(repo, "main") == res.version


def test_session_branch_follows_person_commits_on_it(repo: Path) -> None:
    ws = Workspace.open(repo)
    commit_on(repo, {"b.txt": "one\ntwo\n"})
    res = ws.patch("a.txt", sr("beta\n", "BETA\n"))
    assert git(repo, "log", "-1", "--format=%s", res.base).strip() == "person"
    assert head(repo, "main") != res.version


def test_bare_protected_branch_gets_session_without_head_move(tmp_path: Path) -> None:
    src = make_repo(tmp_path / "src", FILES, branch="main")
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(src), str(bare))
    ws = Workspace.open(bare)
    res = ws.patch("a.txt", sr("beta\n", "BETA\n"))
    assert res.branch == SESSION
    assert git(bare, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert head(bare, "main") == head(src)


def test_empty_repository_on_main_starts_an_unborn_session(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    ws = Workspace.open(root)
    assert ws.branch == SESSION and git(root, "symbolic-ref", "HEAD").strip() == SESSION
    res = ws.apply_patch("*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n")
    assert res.branch == SESSION and head(root, SESSION) == res.version
    assert git(root, "rev-parse", "--verify", "-q", "refs/heads/main", check=False) == ""
    assert (root / "hello.txt").read_text() == "hi\n" and status_porcelain(root) == ""


def test_open_honours_the_config_file_like_the_cli(repo: Path) -> None:
    # One resolver (config.protected_names): Python and the CLI agree on what is protected.
    git(repo, "switch", "-q", "-c", "dev")
    (repo / ".gitpatch.toml").write_text('[review]\nprotected = ["dev"]\n')
    ws = Workspace.open(repo)
    assert protected_branches(ws.store) == {"refs/heads/dev"}
    assert ws.target == "refs/heads/dev" and ws.branch == SESSION
    git(repo, "switch", "-q", "dev")
    patch = "*** Begin Patch\n*** Update File: b.txt\n@@\n-one\n+two\n*** End Patch\n"
    out = gp_json(repo, "apply-patch", "-", input=patch)
    assert out["branch"] == SESSION and out["target"] == "refs/heads/dev"
    git(repo, "config", "gitpatch.protected", "release")  # git config wins over the file
    assert protected_branches(Workspace.open(repo, mode="review").store) == {"refs/heads/release"}


def test_a_broken_config_file_refuses_to_open_and_changes_nothing(repo: Path) -> None:
    (repo / ".gitpatch.toml").write_text("[review]\nprotected = 'main'\n")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo)
    assert err.value.code == "invalid_arguments" and "list of strings" in err.value.message
    assert state(repo) == before
