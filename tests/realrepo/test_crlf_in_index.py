"""git's has-CRLF-in-index rule: an automatic eol conversion keeps CRLF the index blob has.

Under ``core.autocrlf=input`` (or ``true``) and under ``text=auto``, ``git add`` stores a file
as it is when its index blob already holds CRLF, so ``git status`` calls the CRLF file clean.
gitpatch asks the same question: such a file is no uncommitted work, an edit keeps its CRLF
in the blob and on disk, and ``dirty="refuse"`` does not refuse it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import git, head, run_git
from tests.realrepo.kit import edit, fsck, make_repo, state, status

CRLF = b"one\r\ntwo\r\n"
SETTINGS = {
    "autocrlf_input": ("core.autocrlf", "input", ""),
    "autocrlf_true": ("core.autocrlf", "true", ""),
    "text_auto": ("core.autocrlf", "false", "*.txt text=auto\n"),
}


@pytest.fixture(params=sorted(SETTINGS))
def repo(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    key, value, attributes = SETTINGS[request.param]
    root = make_repo(tmp_path / "r", {"c.txt": CRLF, "l.txt": "lf\n"})  # CRLF committed as is
    if attributes:
        (root / ".gitattributes").write_text(attributes)
        git(root, "add", ".gitattributes")
        git(root, "commit", "-q", "-m", "attributes")
    git(root, "config", key, value)
    git(root, "rm", "-q", "--cached", "-r", ".")
    git(root, "reset", "-q", "--hard")
    assert status(root) == ""  # git: clean, although a plain hash-object --path converts it
    assert run_git(root, "hash-object", "--path", "c.txt", "c.txt").stdout.strip() != (
        git(root, "rev-parse", "HEAD:c.txt").strip().encode()
    )
    return root


def test_a_clean_crlf_file_is_no_uncommitted_work(repo: Path) -> None:
    base = head(repo)
    res = Workspace.open(repo).propose(edit("c.txt", "two", "TWO"))
    assert head(repo, f"{res.version}~1") == base  # no "Record uncommitted changes" commit
    assert (repo / "c.txt").read_bytes() == b"one\r\nTWO\r\n"
    assert run_git(repo, "cat-file", "blob", f"{res.version}:c.txt").stdout == b"one\r\nTWO\r\n"
    assert status(repo) == ""
    fsck(repo)


def test_dirty_refuse_does_not_refuse_a_clean_crlf_file(repo: Path) -> None:
    res = Workspace.open(repo, dirty="refuse").propose(edit("c.txt", "one", "ONE"))
    assert (repo / "c.txt").read_bytes() == b"ONE\r\ntwo\r\n"
    assert res.version == head(repo) and status(repo) == ""


def test_read_of_a_clean_crlf_file_is_the_branch_version(repo: Path) -> None:
    seen = Workspace.open(repo).read("c.txt")
    assert seen.version == head(repo)


def test_approve_keeps_crlf_in_blob_and_on_disk(repo: Path) -> None:
    ws = Workspace.open(repo, mode="review")
    res = ws.propose(edit("c.txt", "two", "TWO"))
    ws.approve(res.proposal_id, "person")
    assert (repo / "c.txt").read_bytes() == b"one\r\nTWO\r\n"
    assert run_git(repo, "cat-file", "blob", "HEAD:c.txt").stdout == b"one\r\nTWO\r\n"
    assert status(repo) == ""


def test_a_real_local_edit_is_still_seen(repo: Path) -> None:
    (repo / "c.txt").write_bytes(b"one\r\ntwo\r\nmine\r\n")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo, dirty="refuse").propose(edit("c.txt", "one", "ONE"))
    assert err.value.code == "dirty_worktree" and state(repo) == before


def test_an_lf_file_still_converts_as_git_add_does(repo: Path) -> None:
    Workspace.open(repo).propose(edit("l.txt", "lf\n", "lf\r\nmore\r\n"))
    assert run_git(repo, "cat-file", "blob", "HEAD:l.txt").stdout == b"lf\nmore\n"
    assert status(repo) == ""
