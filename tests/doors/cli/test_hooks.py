"""The approval gate through the real ``git`` binary and the installed hook scripts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitpatch.doors import hooks as gate
from tests.doors.cli.clikit import PATCH_A, git_run, gp, gp_ok, propose
from tests.gitkit import git, head, make_repo

#: the real git running the installed hook scripts: `make test-fast` leaves these out.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "x.txt": "x\n"}, branch="main")
    gp_ok(repo, "hooks", "install")
    return repo


def test_the_checked_in_hooks_are_the_scripts_the_package_installs() -> None:
    for name in gate.HOOKS:
        assert (ROOT / "hooks" / name).read_text() == gate.hook_script(name)
        assert os.access(ROOT / "hooks" / name, os.X_OK)


def test_git_merge_of_a_proposal_into_main_is_refused_until_approved(repo: Path) -> None:
    pid = propose(repo)
    before = head(repo, "main")
    out = git_run(repo, "merge", "--ff-only", f"gitpatch/{pid}")
    assert out.returncode != 0
    assert "approval_required: main is protected" in out.stderr
    assert f"gitpatch approve {pid}" in out.stderr
    assert head(repo, "main") == before
    git(repo, "reset", "--merge")  # what the message advises: git wrote the files first
    assert (repo / "a.txt").read_text() == "a\n"

    gp_ok(repo, "approve", pid, "--by", "Ada")
    assert (repo / "a.txt").read_text() == "b\n"
    assert git(repo, "status", "--porcelain") == ""


def test_a_three_way_git_merge_is_refused_too(repo: Path) -> None:
    pid = propose(repo)
    (repo / "x.txt").write_text("y\n")
    git(repo, "commit", "-qam", "person moves main")
    before = head(repo, "main")
    out = git_run(repo, "merge", "--no-edit", f"gitpatch/{pid}")
    assert out.returncode != 0 and "approval_required" in out.stderr
    assert head(repo, "main") == before


def test_commits_applied_on_a_branch_merge_after_approve_range(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "feature")
    gp_ok(repo, "apply-patch", "-", input=PATCH_A)  # auto mode on an unprotected branch
    git(repo, "switch", "-q", "main")
    refused = git_run(repo, "merge", "--ff-only", "feature")
    assert refused.returncode != 0
    assert "gitpatch approve --range" in refused.stderr
    git(repo, "reset", "--merge")

    gp_ok(repo, "approve", "--range", "main..feature", "--by", "Ada")
    allowed = git_run(repo, "merge", "--ff-only", "feature")
    assert allowed.returncode == 0, allowed.stderr
    assert head(repo, "main") == head(repo, "feature")


def test_plain_commits_by_people_are_never_blocked(repo: Path) -> None:
    (repo / "x.txt").write_text("by hand\n")
    git(repo, "commit", "-qam", "person")
    git(repo, "switch", "-q", "-c", "topic")
    (repo / "new.txt").write_text("n\n")
    git(repo, "add", "new.txt")
    git(repo, "commit", "-qm", "topic work")
    git(repo, "switch", "-q", "main")
    assert git_run(repo, "merge", "--no-ff", "--no-edit", "topic").returncode == 0


def _remote(tmp_path: Path, repo: Path) -> Path:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    # A server needs only pre-receive: it sees the whole push, notes included.
    assert gp_ok(bare, "hooks", "install").splitlines() == ["pre-receive: installed"]
    git(repo, "remote", "add", "origin", str(bare))
    git(repo, "push", "-q", "origin", "main")
    return bare


def test_pre_receive_rejects_unapproved_agent_commits_and_accepts_approved(
    tmp_path: Path, repo: Path
) -> None:
    bare = _remote(tmp_path, repo)
    pid = propose(repo)
    before = head(bare, "main")
    # Pushing the proposal branch itself is fine: only protected branches are gated.
    assert git_run(repo, "push", "origin", f"gitpatch/{pid}").returncode == 0
    # --no-verify skips the local pre-push: the server must hold the line by itself.
    rejected = git_run(repo, "push", "--no-verify", "origin", f"gitpatch/{pid}:main")
    assert rejected.returncode != 0
    assert "pre-receive hook declined" in rejected.stderr and pid in rejected.stderr
    assert head(bare, "main") == before

    gp_ok(repo, "approve", pid, "--by", "Ada")
    without_notes = git_run(repo, "push", "--no-verify", "origin", "main")
    assert without_notes.returncode != 0  # the remote has not seen the approval yet
    accepted = git_run(repo, "push", "origin", "main", "refs/notes/gitpatch")
    assert accepted.returncode == 0, accepted.stderr
    assert head(bare, "main") == head(repo, "main")


def test_pre_push_refuses_before_anything_is_sent(tmp_path: Path, repo: Path) -> None:
    bare = tmp_path / "plain.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))  # no hooks on this remote
    git(repo, "remote", "add", "plain", str(bare))
    git(repo, "push", "-q", "plain", "main")
    pid = propose(repo)
    out = git_run(repo, "push", "plain", f"gitpatch/{pid}:main")
    assert out.returncode != 0 and "approval_required" in out.stderr
    assert head(bare, "main") == head(repo, "main")


def test_install_is_idempotent_and_chains_a_foreign_hook(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n"}, branch="main")
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    foreign = hooks / "pre-push"
    foreign.write_text("#!/bin/sh\necho foreign-ran >&2\nexit 0\n")
    foreign.chmod(0o755)

    first = gp_ok(repo, "hooks", "install")
    assert "pre-push: installed (the existing hook now runs first as pre-push.local)" in first
    assert (hooks / "pre-push.local").read_text().startswith("#!/bin/sh\necho foreign-ran")
    again = gp_ok(repo, "hooks", "install")
    assert again.count("already installed") == 3

    bare = tmp_path / "b.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(repo, "remote", "add", "origin", str(bare))
    pushed = git_run(repo, "push", "origin", "main")
    assert pushed.returncode == 0 and "foreign-ran" in pushed.stderr


def test_install_refuses_when_a_foreign_hook_and_its_local_copy_exist(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n"}, branch="main")
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in ("pre-push", "pre-push.local"):
        (hooks / name).write_text("#!/bin/sh\nexit 0\n")
    out = gp(repo, "hooks", "install")
    assert out.returncode == 1 and out.stderr.startswith("invalid_arguments: ")
    assert (hooks / "pre-push").read_text() == "#!/bin/sh\nexit 0\n"
    assert not (hooks / "pre-receive").exists()  # checked before anything was written
    forced = gp_ok(repo, "hooks", "install", "--force")
    assert "pre-push: replaced (--force)" in forced
    assert gate.MARKER in (hooks / "pre-push").read_text()
