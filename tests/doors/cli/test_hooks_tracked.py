"""``hooks install`` never writes, unasked, into a ``core.hooksPath`` folder git tracks (husky's
``.husky``): it refuses and names the files, ``--into-tracked`` writes there anyway, ``--local``
installs into ``.git/hooks`` and prints the line a shared hook calls them with (issue 26)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gitpatch.doors.cli import main
from tests.doors.cli.clikit import PATCH_A, git_run, gp_ok
from tests.gitkit import git, head, make_repo, repo_state

HUSKY_PRE_PUSH = "#!/bin/sh\necho husky runs the team's checks\n"


def cli(repo: Path, *args: str) -> Result:
    return CliRunner(env={"NO_COLOR": "1"}).invoke(
        main, ["-C", str(repo), *args], catch_exceptions=False
    )


@pytest.fixture
def husky(tmp_path: Path) -> Path:
    """A repository whose committed ``.husky/`` is git's hooks folder (husky 4-8)."""
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n", ".husky/pre-push": HUSKY_PRE_PUSH})
    os.chmod(repo / ".husky" / "pre-push", 0o755)
    git(repo, "config", "core.hooksPath", ".husky")
    return repo


def _own_hooks(repo: Path) -> list[str]:
    return sorted(p.name for p in (repo / ".git" / "hooks").iterdir() if "sample" not in p.name)


def test_a_tracked_hooks_folder_is_refused_naming_the_files(husky: Path) -> None:
    before, own = repo_state(husky), _own_hooks(husky)
    out = cli(husky, "hooks", "install")
    assert out.exit_code == 1 and out.stderr.startswith("repository_error"), out.output
    assert "rewrite the tracked .husky/pre-push" in out.stderr
    assert ".husky/reference-transaction" in out.stderr and "nothing was changed" in out.stderr
    assert "--local" in out.stderr and "--into-tracked" in out.stderr
    assert repo_state(husky) == before and _own_hooks(husky) == own
    assert (husky / ".husky" / "pre-push").read_text() == HUSKY_PRE_PUSH
    js = cli(husky, "--json", "hooks", "install")
    assert js.exit_code == 1 and '"hooks_path_tracked"' in js.stderr
    assert repo_state(husky) == before


def test_into_tracked_writes_there_when_asked(husky: Path) -> None:
    out = cli(husky, "hooks", "install", "--into-tracked")
    assert out.exit_code == 0, out.output
    assert "pre-push: installed (the existing hook now runs first as pre-push.local)" in out.stdout
    assert (husky / ".husky" / "pre-push.local").read_text() == HUSKY_PRE_PUSH


def test_local_leaves_the_shared_folder_alone_and_prints_the_calls(husky: Path) -> None:
    before = repo_state(husky)
    out = cli(husky, "hooks", "install", "--local")
    assert out.exit_code == 0, out.output
    assert repo_state(husky) == before  # nothing in the working tree, tracked or not
    assert {"pre-push", "reference-transaction"} <= set(_own_hooks(husky))
    assert "core.hooksPath is .husky" in out.stdout
    assert 'hooks/pre-push"; [ ! -x "$h" ] || "$h" "$@" || exit $?' in out.stdout


def test_an_ignored_or_outside_hooks_folder_installs_as_before(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n", ".husky/_/.gitignore": "*\n"})
    git(repo, "config", "core.hooksPath", ".husky/_")  # husky 9: generated, ignored
    assert cli(repo, "hooks", "install").exit_code == 0
    assert (repo / ".husky" / "_" / "pre-push").exists()
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    other = make_repo(tmp_path / "o", {"a.txt": "a\n"})
    git(other, "config", "core.hooksPath", str(tmp_path / "shared-hooks"))
    assert cli(other, "hooks", "install").exit_code == 0
    assert (tmp_path / "shared-hooks" / "reference-transaction").exists()


@pytest.mark.slow  # git's hooks in processes of their own
def test_the_printed_line_makes_the_shared_hook_gate_a_merge(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n", ".husky/pre-push": HUSKY_PRE_PUSH})
    git(repo, "config", "core.hooksPath", ".husky")
    printed = gp_ok(repo, "hooks", "install", "--local")
    line = printed.splitlines()[-2].split(": ", 1)[1]  # reference-transaction's call
    assert line.startswith('h="$(git rev-parse') and "/reference-transaction" in line
    hook = repo / ".husky" / "reference-transaction"
    hook.write_text(f"#!/bin/sh\n{line}\n")
    hook.chmod(0o755)
    git(repo, "switch", "-q", "-c", "feature")
    gp_ok(repo, "apply-patch", "-", input=PATCH_A)
    git(repo, "switch", "-q", "work")
    git(repo, "config", "gitpatch.protected", "work")
    before = head(repo, "work")
    out = git_run(repo, "merge", "--ff-only", "feature")
    assert out.returncode != 0 and "work is protected" in out.stderr
    assert head(repo, "work") == before
    (repo / ".git" / "hooks" / "reference-transaction").unlink()  # a clone without gitpatch
    assert git_run(repo, "merge", "--ff-only", "feature").returncode == 0
