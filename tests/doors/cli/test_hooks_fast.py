"""The hook shims decide in the shell: Python starts only when an agent commit would reach a
protected branch. Every test runs the real ``git`` binary over the installed shims, with
``GITPATCH_PYTHON`` pointing at a wrapper that records each start of the gate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gitpatch.doors import hooks as gate
from tests.doors.cli.clikit import PATCH_A, git_run, gp_ok, propose
from tests.gitkit import git, git_env, head, make_repo

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
    assert starts.read_text() == "-m gitpatch.doors.hooks reference-transaction prepared\n"


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
    assert starts.read_text().count("gitpatch.doors.hooks") == 1


def test_the_config_file_s_protected_list_is_left_to_python(repo: Path, starts: Path) -> None:
    (repo / ".gitpatch.toml").write_text('[review]\nprotected = ["dev"]\n')
    git(repo, "branch", "-q", "dev")
    _agent_branch(repo, "feature")
    # The shell cannot read the file: an agent range goes to Python, which lets main move.
    assert git_run(repo, "merge", "--ff-only", "feature").returncode == 0
    assert starts.read_text().count("gitpatch.doors.hooks") == 1
    git(repo, "switch", "-q", "dev")
    _commit(repo, "d.txt", "d\n")  # a person's commit on dev: still no Python
    assert starts.read_text().count("gitpatch.doors.hooks") == 1
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
    assert starts.read_text() == "-m gitpatch.doors.hooks pre-push origin " + str(bare) + "\n"
    forced = git_run(repo, "push", "--no-verify", "origin", f"gitpatch/{pid}:main")
    assert forced.returncode != 0 and "pre-receive hook declined" in forced.stderr
    assert starts.read_text().splitlines()[-1] == "-m gitpatch.doors.hooks pre-receive"


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


#: A shim as ``gitpatch hooks install`` wrote it before the layout move (``gitpatch.gate``);
#: the shims of the next layout ran ``gitpatch.workspace.gate`` instead.
LEGACY = """\
#!/bin/sh
# gitpatch-hook: approval gate.
python="${GITPATCH_PYTHON:-python3}"
input=$(cat)
[ "$1" = prepared ] || exit 0
printf '%s\\n' "$input" | grep -q ' refs/heads/' || exit 0
printf '%s\\n' "$input" | "$python" -m gitpatch.gate reference-transaction "$@"
"""


@pytest.mark.parametrize("module", ["gitpatch.gate", "gitpatch.workspace.gate"])
def test_hooks_installed_before_the_layout_move_still_gate_and_install_refreshes_them(
    repo: Path, starts: Path, module: str
) -> None:
    hook = repo / ".git" / "hooks" / "reference-transaction"
    hook.write_text(LEGACY.replace("gitpatch.gate", module))
    _agent_branch(repo, "feature")
    out = git_run(repo, "merge", "--ff-only", "feature")
    assert out.returncode != 0 and "approval_required" in out.stderr
    assert "`gitpatch hooks install` refreshes them" in out.stderr
    git(repo, "reset", "-q", "--merge")

    assert "reference-transaction: updated" in gp_ok(repo, "hooks", "install")
    system = gate.git_system_config()
    assert hook.read_text() == gate.hook_script("reference-transaction", sys.executable, system)


def test_the_gate_imports_neither_pydantic_nor_the_checkout() -> None:
    # What the gate needs is the store and the rule; the results' models and the working tree
    # are most of a start it would pay on every agent range a person moves.
    code = (
        "import sys, gitpatch.doors.hooks; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic' "
        "or m.startswith(('gitpatch.checkout', 'gitpatch.tools', 'gitpatch.doors.')) "
        "and m != 'gitpatch.doors.hooks'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- the protected list: read by the shell only when it can be sure, else git config or Python


def _git_with(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args],
        cwd=repo,
        env={**git_env(repo), **env},
        capture_output=True,
        text=True,
        check=False,
    )


def _refused_into(repo: Path, branch: str, env: dict[str, str] | None = None) -> None:
    """An agent commit fast-forwarded into ``branch`` is refused and ``branch`` stays put."""
    git(repo, "switch", "-q", branch)
    before = head(repo, branch)
    out = _git_with(repo, env or {}, "merge", "--ff-only", "feature")
    assert out.returncode != 0 and f"{branch} is protected" in out.stderr, out.stderr
    assert head(repo, branch) == before
    git(repo, "reset", "-q", "--merge")


def test_a_config_file_included_by_the_repository_s_config_is_read(
    repo: Path, starts: Path
) -> None:
    (repo / ".git" / "protect.cfg").write_text("[gitpatch]\n\tprotected = topic\n")
    git(repo, "config", "include.path", "protect.cfg")
    git(repo, "branch", "-q", "topic")
    _agent_branch(repo, "feature")
    _refused_into(repo, "topic")
    git(repo, "switch", "-q", "main")
    assert git_run(repo, "merge", "--ff-only", "feature").returncode == 0  # main is not listed


def test_the_global_config_s_protected_list_counts(repo: Path, starts: Path) -> None:
    # git_env sets HOME to the repository itself, so ~/.gitconfig is repo/.gitconfig
    (repo / ".gitconfig").write_text("[GitPatch]\n\tProtected = topic\n")
    git(repo, "branch", "-q", "topic")
    git(repo, "branch", "-q", "other")
    _agent_branch(repo, "feature")
    _refused_into(repo, "topic")
    (repo / ".gitconfig").unlink()
    (repo / ".config" / "git").mkdir(parents=True)
    (repo / ".config" / "git" / "config").write_text("[gitpatch]\n\tprotected = other\n")
    _refused_into(repo, "other")


def test_git_c_options_and_config_environment_leave_the_decision_to_python(
    repo: Path, starts: Path
) -> None:
    git(repo, "branch", "-q", "topic")
    _agent_branch(repo, "feature")
    git(repo, "switch", "-q", "main")
    before = head(repo, "main")
    for args in (("-c", "gc.auto=0"), ("-c", "gitpatch.protected=topic")):
        out = git_run(repo, *args, "merge", "--ff-only", "feature")
        assert out.returncode != 0 and "main is protected" in out.stderr, (args, out.stderr)
        assert head(repo, "main") == before
        git(repo, "reset", "-q", "--merge")
    empty = repo / ".git" / "empty.cfg"
    empty.write_text("")
    environments = [
        {"GIT_CONFIG_GLOBAL": str(empty)},
        {"GIT_CONFIG_SYSTEM": str(empty)},
        {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "gitpatch.protected",
            "GIT_CONFIG_VALUE_0": "topic",
        },
    ]
    for env in environments:
        _refused_into(repo, "main", env)
    # the gate reads the repository's own config, whatever git was told
    starts.write_text("")
    git(repo, "config", "gitpatch.protected", "topic")
    _refused_into(repo, "topic", {"GIT_CONFIG_GLOBAL": str(empty)})
    assert starts.read_text().count("gitpatch.doors.hooks") == 1


def test_a_person_s_commit_never_starts_python_whatever_the_config_source(
    repo: Path, starts: Path
) -> None:
    (repo / ".git" / "protect.cfg").write_text("[gitpatch]\n\tprotected = main\n")
    git(repo, "config", "include.path", "protect.cfg")
    (repo / ".gitpatch.toml").write_text('[review]\nprotected = ["main"]\n')
    _commit(repo, "x.txt", "by hand\n")
    out = _git_with(
        repo, {"GIT_CONFIG_GLOBAL": "/dev/null"}, "commit", "-qam", "again", "--allow-empty"
    )
    assert out.returncode == 0, out.stderr
    assert (
        git_run(
            repo, "-c", "gitpatch.protected=x", "commit", "-q", "--allow-empty", "-m", "c"
        ).returncode
        == 0
    )
    assert starts.read_text() == ""


def test_the_system_config_git_names_is_read_too(tmp_path: Path, repo: Path, starts: Path) -> None:
    system = tmp_path / "etc" / "gitconfig"
    system.parent.mkdir()
    system.write_text("[include]\n\tpath = /nowhere\n")
    hook = repo / ".git" / "hooks" / "reference-transaction"
    hook.write_text(gate.hook_script("reference-transaction", sys.executable, str(system)))
    assert f"'{system}'" in hook.read_text()
    _agent_branch(repo, "feature")
    # git skips it under GIT_CONFIG_NOSYSTEM (set for every test), the gate may not: Python
    # decides every agent range, and refuses the one reaching main.
    _refused_into(repo, "main")
    assert starts.read_text().count("gitpatch.doors.hooks") == 1
    git(repo, "switch", "-q", "-c", "topic")
    _commit(repo, "t.txt", "t\n")
    assert starts.read_text().count("gitpatch.doors.hooks") == 1
