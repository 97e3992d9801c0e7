"""The hook shims decide in the shell: Python starts only when an agent commit would reach a
protected branch. Every test runs the real ``git`` binary over the installed shims, with
``GITPATCH_PYTHON`` pointing at a wrapper that records each start of the gate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gitpatch.workspace import gate
from tests.doors.cli.clikit import PATCH_A, git_run, gp_ok, propose
from tests.gitkit import git, head, make_repo

pytestmark = pytest.mark.slow  # a server or git's hooks in processes of their own


@pytest.fixture
def starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The log the gate's Python wrapper appends to, one line per start."""
    log = tmp_path / "starts.log"
    log.write_text("")
    wrapper = tmp_path / "python-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("GITPATCH_PYTHON", str(wrapper))
    return log


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "x.txt": "x\n"}, branch="main")
    gp_ok(repo, "hooks", "install")
    return repo


def _commit(repo: Path, name: str, text: str) -> None:
    (repo / name).write_text(text)
    git(repo, "add", name)
    git(repo, "commit", "-qm", f"person writes {name}")


def _agent_branch(repo: Path, branch: str) -> None:
    """``branch`` off main with one agent commit, applied in auto mode (no hook runs)."""
    git(repo, "switch", "-q", "-c", branch)
    gp_ok(repo, "apply-patch", "-", input=PATCH_A)
    git(repo, "switch", "-q", "main")


def test_a_commit_on_an_unprotected_branch_starts_no_python(repo: Path, starts: Path) -> None:
    git(repo, "switch", "-q", "-c", "topic")
    _commit(repo, "n.txt", "n\n")
    git(repo, "branch", "-q", "-f", "other", "HEAD~1")
    git(repo, "switch", "-q", "main")
    git(repo, "branch", "-q", "-D", "other")
    assert starts.read_text() == ""


def test_a_person_s_commit_on_a_protected_branch_starts_no_python(repo: Path, starts: Path) -> None:
    _commit(repo, "x.txt", "by hand\n")
    git(repo, "switch", "-q", "-c", "topic")
    _commit(repo, "t.txt", "t\n")
    git(repo, "switch", "-q", "main")
    assert git_run(repo, "merge", "-q", "--no-ff", "--no-edit", "topic").returncode == 0
    assert starts.read_text() == ""


def test_an_agent_commit_reaching_main_starts_the_gate_and_is_refused(
    repo: Path, starts: Path
) -> None:
    _agent_branch(repo, "feature")
    before = head(repo, "main")
    out = git_run(repo, "merge", "--ff-only", "feature")
    assert out.returncode != 0 and "approval_required: main is protected" in out.stderr
    assert head(repo, "main") == before
    assert starts.read_text() == "-m gitpatch.workspace.gate reference-transaction prepared\n"


def test_an_agent_commit_reaching_an_unprotected_branch_starts_no_python(
    repo: Path, starts: Path
) -> None:
    _agent_branch(repo, "feature")
    git(repo, "switch", "-q", "-c", "integration")
    assert git_run(repo, "merge", "--ff-only", "feature").returncode == 0
    assert head(repo, "integration") == head(repo, "feature")
    assert starts.read_text() == ""


def test_git_config_names_the_protected_branches_comma_separated(repo: Path, starts: Path) -> None:
    git(repo, "config", "gitpatch.protected", "dev, release")
    git(repo, "branch", "-q", "release")
    _agent_branch(repo, "feature")
    assert git_run(repo, "merge", "--ff-only", "feature").returncode == 0  # main is not
    assert starts.read_text() == ""
    git(repo, "switch", "-q", "release")
    out = git_run(repo, "merge", "--ff-only", "feature")
    assert out.returncode != 0 and "release is protected" in out.stderr
    assert starts.read_text().count("gitpatch.workspace.gate") == 1


def test_the_config_file_s_protected_list_is_left_to_python(repo: Path, starts: Path) -> None:
    (repo / ".gitpatch.toml").write_text('[review]\nprotected = ["dev"]\n')
    git(repo, "branch", "-q", "dev")
    _agent_branch(repo, "feature")
    # The shell cannot read the file: an agent range goes to Python, which lets main move.
    assert git_run(repo, "merge", "--ff-only", "feature").returncode == 0
    assert starts.read_text().count("gitpatch.workspace.gate") == 1
    git(repo, "switch", "-q", "dev")
    _commit(repo, "d.txt", "d\n")  # a person's commit on dev: still no Python
    assert starts.read_text().count("gitpatch.workspace.gate") == 1
    out = git_run(repo, "merge", "--no-edit", "feature")
    assert out.returncode != 0 and "dev is protected" in out.stderr


def test_a_linked_worktree_takes_the_same_fast_paths(
    tmp_path: Path, repo: Path, starts: Path
) -> None:
    _agent_branch(repo, "feature")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked), "main")
    _commit(linked, "s.txt", "s\n")
    assert starts.read_text() == ""
    git(repo, "switch", "-q", "-c", "parking")  # main is free to check out over there
    git(linked, "switch", "-q", "main")
    before = head(repo, "main")
    out = git_run(linked, "merge", "--ff-only", "feature")
    assert out.returncode != 0 and "approval_required" in out.stderr
    assert head(repo, "main") == before


def test_pushes_start_python_only_for_agent_commits(
    tmp_path: Path, repo: Path, starts: Path
) -> None:
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    gp_ok(bare, "hooks", "install")
    git(repo, "remote", "add", "origin", str(bare))
    _commit(repo, "x.txt", "pushed by a person\n")
    assert git_run(repo, "push", "-q", "origin", "main").returncode == 0
    assert starts.read_text() == ""  # neither pre-push here nor pre-receive there

    pid = propose(repo)
    refused = git_run(repo, "push", "origin", f"gitpatch/{pid}:main")
    assert refused.returncode != 0 and "approval_required" in refused.stderr
    assert starts.read_text() == "-m gitpatch.workspace.gate pre-push origin " + str(bare) + "\n"
    forced = git_run(repo, "push", "--no-verify", "origin", f"gitpatch/{pid}:main")
    assert forced.returncode != 0 and "pre-receive hook declined" in forced.stderr
    assert starts.read_text().splitlines()[-1] == "-m gitpatch.workspace.gate pre-receive"


def test_a_chained_hook_sees_every_state_and_line(repo: Path, starts: Path) -> None:
    hooks = repo / ".git" / "hooks"
    seen = repo.parent / "seen.log"
    local = hooks / "reference-transaction.local"
    local.write_text(f'#!/bin/sh\n{{ echo "state $1"; cat; }} >> "{seen}"\n')
    local.chmod(0o755)
    _commit(repo, "x.txt", "y\n")
    lines = seen.read_text().splitlines()
    states = [line for line in lines if line.startswith("state ")]
    assert states == ["state prepared", "state committed"]
    assert sum(line.endswith(" refs/heads/main") for line in lines) == 2
    assert starts.read_text() == ""


def test_a_refusing_chained_hook_stops_the_update(repo: Path, starts: Path) -> None:
    local = repo / ".git" / "hooks" / "reference-transaction.local"
    local.write_text('#!/bin/sh\n[ "$1" != prepared ] || { echo no >&2; exit 1; }\n')
    local.chmod(0o755)
    before = head(repo, "main")
    (repo / "x.txt").write_text("y\n")
    out = git_run(repo, "commit", "-qam", "refused by the local hook")
    assert out.returncode != 0 and head(repo, "main") == before


#: A shim as ``gitpatch hooks install`` wrote it before the layout move (``gitpatch.gate``).
LEGACY = """\
#!/bin/sh
# gitpatch-hook: approval gate.
python="${GITPATCH_PYTHON:-python3}"
input=$(cat)
[ "$1" = prepared ] || exit 0
printf '%s\\n' "$input" | grep -q ' refs/heads/' || exit 0
printf '%s\\n' "$input" | "$python" -m gitpatch.gate reference-transaction "$@"
"""


def test_hooks_installed_before_the_layout_move_still_gate_and_install_refreshes_them(
    repo: Path, starts: Path
) -> None:
    hook = repo / ".git" / "hooks" / "reference-transaction"
    hook.write_text(LEGACY)
    _agent_branch(repo, "feature")
    out = git_run(repo, "merge", "--ff-only", "feature")
    assert out.returncode != 0 and "approval_required" in out.stderr
    assert "`gitpatch hooks install` refreshes them" in out.stderr
    git(repo, "reset", "-q", "--merge")

    assert "reference-transaction: updated" in gp_ok(repo, "hooks", "install")
    assert hook.read_text() == gate.hook_script("reference-transaction", sys.executable)


def test_the_gate_imports_neither_pydantic_nor_the_checkout() -> None:
    # What the gate needs is the store and the rule; the results' models and the working tree
    # are most of a start it would pay on every agent range a person moves.
    code = (
        "import sys, gitpatch.workspace.gate; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic' "
        "or m.startswith(('gitpatch.checkout', 'gitpatch.tools', 'gitpatch.doors'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
