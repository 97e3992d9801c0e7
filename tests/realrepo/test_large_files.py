"""A large file's edit (1 MB and up: streamed, never joined, written as a loose object by
``store.loose``) in the checkouts people have: autocrlf, a ``filter=`` driver, a linked
worktree, a sparse checkout, and staged work (refused, nothing changed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.core.model import Proposal, Replace, UpdateFile
from gitpatch.errors import StagedChanges
from gitpatch.store import LARGE_BLOB as LARGE
from tests.gitkit import git, make_repo, repo_state

BIG = "".join(f"line {i} of a large file\n" for i in range(80_000))
ROT = "tr A-Za-z N-ZA-Mn-za-m"


def edit(path: str) -> Proposal:
    return Proposal(
        (UpdateFile(path, (Replace("line 40000 of", "LINE 40000 of"),)),), "patch_resource"
    )


def sound(where: Path) -> None:
    assert git(where, "status", "--porcelain") == ""
    subprocess.run(["git", "fsck", "--strict", "--no-progress"], cwd=where, check=True)


@pytest.mark.parametrize("setting", ["autocrlf", "filter", "worktree", "sparse"])
def test_a_large_file_lands_as_git_would_store_and_check_it_out(
    tmp_path: Path, setting: str
) -> None:
    assert len(BIG) > LARGE
    repo = make_repo(tmp_path / "r", {"big.txt": BIG, "d/x.txt": "x\n"})
    where, path, stored = repo, "big.txt", BIG.replace("line 40000", "LINE 40000")
    if setting == "autocrlf":
        git(repo, "config", "core.autocrlf", "true")
        git(repo, "rm", "-q", "--cached", "big.txt")
        git(repo, "reset", "-q", "--hard")
    elif setting == "filter":
        for key in ("clean", "smudge"):
            git(repo, "config", f"filter.rot.{key}", ROT)
        (repo / ".gitattributes").write_text("*.sec filter=rot\n")
        (repo / "big.sec").write_text(BIG)
        git(repo, "add", ".gitattributes", "big.sec")
        git(repo, "commit", "-qm", "secret")
        path = "big.sec"
        stored = subprocess.run(
            ROT.split(), input=stored, capture_output=True, text=True, check=True
        ).stdout
    elif setting == "worktree":
        where = tmp_path / "linked"
        git(repo, "worktree", "add", "-q", "-b", "side", str(where))
    else:
        git(repo, "sparse-checkout", "set", "d")
    Workspace.open(where).propose(edit(path))
    assert git(where, "show", f"HEAD:{path}") == stored
    disk = (where / path).read_bytes()
    expected = BIG.replace("line 40000", "LINE 40000").encode()
    assert disk == (expected.replace(b"\n", b"\r\n") if setting == "autocrlf" else expected)
    sound(where)


def test_a_large_file_with_staged_changes_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"big.txt": BIG})
    (repo / "big.txt").write_text(BIG.replace("line 5 ", "line FIVE "))
    git(repo, "add", "big.txt")
    before = repo_state(repo)
    with pytest.raises(StagedChanges) as err:
        Workspace.open(repo).propose(edit("big.txt"))
    assert err.value.code == "staged_changes" and err.value.hint
    assert repo_state(repo) == before
