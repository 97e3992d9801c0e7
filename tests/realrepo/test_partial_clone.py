"""A partial clone (``git clone --filter=blob:none``, from a local ``file://`` repository: no
network) lacks the blobs of files outside its sparse checkout and of commits fetched since. Every
tool and approve then says which file and blob are missing and the command that fetches it,
changes nothing and fetches nothing itself; once the person runs that command, the same call
works (issue 26)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from gitpatch import (
    MountedFilesystem,
    ToolResult,
    Workspace,
    apply_patch_tool,
    patch_resource_tool,
    patch_tool,
    read_tool,
)
from gitpatch.errors import GitpatchError
from tests.gitkit import git, make_repo
from tests.realrepo.kit import edit, state

FILES = {"a.txt": "alpha\n1\n2\n3\nomega\n", "b.txt": "beta\n"}


def partial_clone(tmp_path: Path, *, autocrlf: bool = False) -> tuple[Path, Path]:
    """(origin, clone): a blob-less clone whose sparse checkout holds b.txt only, so the blob
    of a.txt was never fetched."""
    origin = make_repo(tmp_path / "origin", FILES)
    git(origin, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--no-checkout", "--filter=blob:none", origin.as_uri(), "clone")
    git(clone, "config", "user.name", "Test Person")
    git(clone, "config", "user.email", "person@example.com")
    if autocrlf:
        git(clone, "config", "core.autocrlf", "true")
    git(clone, "sparse-checkout", "set", "--no-cone", "/b.txt")
    git(clone, "checkout", "-q", "work")
    assert missing(clone) == [blob_of(clone, "a.txt")]
    return origin, clone


def missing(repo: Path) -> list[str]:
    """The ids of the objects the clone has not fetched (git fetches nothing to list them)."""
    out = git(repo, "rev-list", "--objects", "--all", "--missing=print")
    return sorted(line[1:] for line in out.splitlines() if line.startswith("?"))


def blob_of(repo: Path, path: str, rev: str = "HEAD") -> str:
    return git(repo, "rev-parse", f"{rev}:{path}").strip()


def sr(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


CALLS: dict[str, Callable[[MountedFilesystem], ToolResult]] = {
    "read": lambda fs: read_tool(fs)(path="a.txt"),
    "patch": lambda fs: patch_tool(fs, fs)(path="a.txt", edits=sr("alpha\n", "ALPHA\n")),
    "apply_patch": lambda fs: apply_patch_tool(fs, fs)(
        patch="*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n*** End Patch"
    ),
    "patch_resource": lambda fs: patch_resource_tool(fs, fs)(
        path="a.txt", edits=[{"old_string": "alpha", "new_string": "ALPHA"}]
    ),
}


def fetch_command(text: str) -> list[str]:
    """The `git fetch ...` command a message tells the person to run, as arguments."""
    found = re.search(r"`git (fetch [^`]+)`", text)
    assert found, text
    return found.group(1).split()


@pytest.mark.parametrize("autocrlf", [False, True], ids=["plain", "autocrlf"])
@pytest.mark.parametrize("tool", sorted(CALLS))
def test_every_tool_names_the_missing_blob_and_the_fetch(
    tool: str, autocrlf: bool, tmp_path: Path
) -> None:
    _origin, clone = partial_clone(tmp_path, autocrlf=autocrlf)
    blob = blob_of(clone, "a.txt")
    fs = MountedFilesystem({"/workspace": Workspace.open(clone)})
    before = state(clone)
    res = CALLS[tool](fs)
    assert not res.ok and res.code == "object_missing", str(res)
    text = str(res)
    assert "internal" not in text and "Check the commit id" not in text
    assert "a.txt" in text and blob in text and "partial clone" in text
    assert f"`git fetch origin {blob}`" in text
    assert state(clone) == before and missing(clone) == [blob]  # nothing fetched either
    git(clone, *fetch_command(text))  # the person runs what the message says
    assert missing(clone) == []
    again = CALLS[tool](fs)
    assert again.ok, str(again)


def test_approve_after_a_pull_names_the_file_the_merge_needs(tmp_path: Path) -> None:
    origin, clone = partial_clone(tmp_path)
    git(clone, "fetch", "-q", "origin", blob_of(clone, "a.txt"))  # the agent read a.txt once
    ws = Workspace.open(clone, mode="review")
    pid = ws.propose(edit("a.txt", "alpha", "ALPHA")).proposal_id
    (origin / "a.txt").write_text("alpha\n1\n2\n3\nOMEGA\n")
    git(origin, "commit", "-q", "-am", "upstream")
    git(clone, "pull", "-q", "--ff-only", "origin", "work")  # a.txt is outside the checkout
    blob = blob_of(clone, "a.txt")
    assert missing(clone) == [blob]
    before = state(clone)
    with pytest.raises(GitpatchError) as caught:
        ws.approve(pid, by="Reviewer")
    err = caught.value
    assert err.code == "object_missing" and err.details["reason"] == "partial_clone"
    assert err.details["path"] == "a.txt" and err.details["oid"] == blob
    assert "a.txt" in err.message and "not found in the repository" not in err.message
    assert err.hint and f"`git fetch origin {blob}`" in err.hint
    assert state(clone) == before and missing(clone) == [blob]
    git(clone, *fetch_command(err.hint))
    ws.approve(pid, by="Reviewer")
    assert git(clone, "show", "HEAD:a.txt") == "ALPHA\n1\n2\n3\nOMEGA\n"


def test_a_full_clone_missing_nothing_reads_as_before(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    fs = MountedFilesystem({"/workspace": Workspace.open(repo)})
    assert read_tool(fs)(path="a.txt").data["content"] == FILES["a.txt"]
