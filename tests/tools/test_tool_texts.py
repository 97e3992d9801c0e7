"""Every failure the patch spec lists has its own stable, recoverable text, and changes nothing;
the review, rejection, limit and writer rules hold through the tools."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from gitpatch import (
    MemoryStorage,
    Workspace,
    apply_patch_tool,
    patch_resource_tool,
    patch_tool,
    workspace_tool_policy,
)
from tests.gitkit import git, head, mounted, sr, state

FILES = {
    "a.txt": "one\ntwo\none\n",
    "dir/inner.txt": "x\n",
    "latin1.txt": b"caf\xe9\n",
    "private.txt": "p\n",
}

# (case, path, edits, code, a text fragment that names the cause)
PATCH_FAILURES = [
    ("empty path", "", sr("one\n", "1\n"), "invalid_arguments", "path is empty"),
    ("NUL in path", "a\x00.txt", sr("one\n", "1\n"), "path_unsafe", "NUL byte"),
    ("missing file", "nope.txt", sr("one\n", "1\n"), "resource_not_found", "no such file"),
    ("directory", "dir", sr("x\n", "y\n"), "not_a_text_resource", "is a directory"),
    ("malformed blocks", "a.txt", "<<<<<<< SEARCH\none\n", "invalid_patch", "SEARCH"),
    (
        "no block at all",
        "a.txt",
        "just text",
        "invalid_patch",
        "text outside a SEARCH/REPLACE block",
    ),
    (
        "invalid UTF-8 edit text",
        "a.txt",
        sr("two\n", "\ud800\n"),
        "invalid_arguments",
        "lone surrogate",
    ),
    (
        "invalid UTF-8 file",
        "latin1.txt",
        sr("caf\n", "x\n"),
        "resource_not_utf8",
        "not valid UTF-8",
    ),
    ("SEARCH missing", "a.txt", sr("three\n", "3\n"), "match_not_found", "three"),
    ("SEARCH twice", "a.txt", sr("one\n", "1\n"), "match_ambiguous", "lines 1"),
    (
        "overlapping edits",
        "a.txt",
        sr("one\ntwo\n", "x\n") + sr("two\n", "y\n"),
        "edit_overlap",
        "overlap",
    ),
    ("empty SEARCH", "a.txt", sr("", "x\n"), "invalid_patch", "empty"),
    ("no change", "a.txt", sr("two\n", "two\n"), "no_change", "change"),
    (
        "permission",
        "private.txt",
        sr("p\n", "q\n"),
        "permission_denied",
        "permission denied: patch is not allowed for `/workspace/private.txt`",
    ),
]


@pytest.fixture
def world(tmp_path):
    return mounted(tmp_path / "r", FILES)


@pytest.mark.parametrize(
    ("case", "path", "edits", "code", "fragment"),
    PATCH_FAILURES,
    ids=[c[0] for c in PATCH_FAILURES],
)
def test_patch_failure_texts(world, case, path, edits, code, fragment) -> None:
    repo, ws, fs = world
    before = state(repo)
    tool = patch_tool(fs, fs, policy=workspace_tool_policy(deny=["/workspace/private.txt"]))
    res = tool(path=path, edits=edits)
    assert not res.ok and res.code == code, f"{res.code}: {res}"
    assert fragment in str(res), str(res)
    assert res.data["code"] == code and res.data["message"] in str(res)
    assert state(repo) == before
    # Stable: the same call gives the same text.
    assert str(tool(path=path, edits=edits)) == str(res)


def test_failure_texts_are_distinct(world) -> None:
    repo, ws, fs = world
    tool = patch_tool(fs, fs, policy=workspace_tool_policy(deny=["/workspace/private.txt"]))
    texts = [str(tool(path=p, edits=e)) for _c, p, e, _code, _f in PATCH_FAILURES]
    assert len(set(texts)) == len(texts)


class CountingWriter(MemoryStorage):
    def __init__(self, files: dict[str, str]) -> None:
        self.opened = 0
        super().__init__(files)
        self.opened = 0

    @contextmanager
    def writer(self) -> Iterator[dict[str, bytes | None]]:
        self.opened += 1
        with super().writer() as staged:
            yield staged


def test_the_writer_opens_only_after_every_edit_succeeded() -> None:
    mem = CountingWriter({"a.txt": "one\ntwo\n"})
    tool = patch_tool(mem, mem)
    res = tool(path="a.txt", edits=sr("one\n", "1\n") + sr("missing\n", "x\n"))
    assert res.code == "match_not_found" and mem.opened == 0
    assert tool(path="a.txt", edits=sr("one\n", "1\n") + sr("two\n", "2\n")).ok
    assert mem.opened == 1 and mem.read_bytes("a.txt") == b"1\n2\n"


def test_no_local_copy_is_made(tmp_path, monkeypatch) -> None:
    scratch, cwd = tmp_path / "tmp", tmp_path / "cwd"
    scratch.mkdir()
    cwd.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.chdir(cwd)
    mem = MemoryStorage({"a.txt": "a\n"})
    assert patch_tool(mem, mem)(path="a.txt", edits=sr("a\n", "b\n")).ok
    assert os.listdir(scratch) == [] and os.listdir(cwd) == []


def test_review_mode_says_the_change_awaits_approval(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n"}, mode="review")
    before = head(repo)
    res = patch_tool(fs, fs)(path="a.txt", edits=sr("a\n", "b\n"))
    assert res.ok and res.data["status"] == "proposed"
    pid = res.data["proposal_id"]
    assert f"Proposal {pid} is on branch gitpatch/{pid} for work and awaits" in str(res)
    assert head(repo) == before and (repo / "a.txt").read_text() == "a\n"


def test_a_rejected_change_is_not_replayed(tmp_path) -> None:
    repo, ws, fs = mounted(tmp_path / "r", {"a.txt": "a\n"}, mode="review")
    tool = patch_tool(fs, fs)
    first = tool(path="a.txt", edits=sr("a\n", "b\n"))
    ws.reject(first.data["proposal_id"], by="Ada", reason="no")
    before = state(repo)
    again = tool(path="a.txt", edits=sr("a\n", "b\n"))
    assert again.code == "proposal_rejected" and "rejected" in str(again)
    assert state(repo) == before


def test_patch_resource_speaks_the_spec_codes(world) -> None:
    repo, ws, fs = world
    tool = patch_resource_tool(fs, fs, policy=workspace_tool_policy(deny=["**/private.txt"]))
    cases = [
        (
            {"path": "a.txt", "edits": [{"old_string": "zzz", "new_string": "x"}]},
            "invalid_patch",
            "match_not_found",
        ),
        (
            {"path": "a.txt", "edits": [{"old_string": "one", "new_string": "x"}]},
            "invalid_patch",
            "match_ambiguous",
        ),
        (
            {"path": "a.txt", "edits": [{"old_string": "two", "new_string": "two"}]},
            "invalid_patch",
            "no_change",
        ),
        (
            {"path": "private.txt", "edits": [{"after_line": 0, "new_string": "x"}]},
            "forbidden",
            "permission_denied",
        ),
        (
            {"path": "../x", "edits": [{"after_line": 0, "new_string": "x"}]},
            "invalid_arguments",
            "path_unsafe",
        ),
        ({"path": "a.txt", "edits": []}, "empty_edits", None),
        (
            {"path": "a.txt", "edits": [{"start_line": 9, "end_line": 9, "new_string": ""}]},
            "invalid_patch",
            None,
        ),
        ({"path": "a.txt", "edits": [{"new_string": "x"}]}, "invalid_patch", None),
        ({"path": "a.txt", "edits": "nope"}, "invalid_arguments", None),
        (
            {"path": "nope.txt", "edits": [{"after_line": 0, "new_string": "x"}]},
            "resource_not_found",
            None,
        ),
        (
            {"path": "latin1.txt", "edits": [{"after_line": 0, "new_string": "x"}]},
            "resource_not_utf8",
            None,
        ),
    ]
    before = state(repo)
    for args, code, reason in cases:
        res = tool(**args)
        assert res.code == code, (args, res.code, str(res))
        assert res.data.get("reason") == reason, (args, res.data)
    assert state(repo) == before


def test_payload_too_large(world) -> None:
    repo, ws, fs = world
    before = state(repo)
    tool = patch_resource_tool(fs, fs, max_file_bytes=20)
    res = tool(path="a.txt", edits=[{"after_line": 0, "new_string": "x" * 30 + "\n"}])
    assert res.code == "payload_too_large" and "over the per-file limit of 20 bytes" in str(res)
    assert state(repo) == before
    assert tool(path="a.txt", edits=[{"after_line": 0, "new_string": "0\n"}]).ok


def test_apply_patch_errors_say_what_to_fix(world) -> None:
    repo, ws, fs = world
    before = state(repo)
    tool = apply_patch_tool(fs, fs)
    for patch, code in [
        ("no patch here", "invalid_patch"),
        ("*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch", "resource_exists"),
        ("*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+1\n*** End Patch", "match_ambiguous"),
        ("*** Begin Patch\n*** Update File: a.txt\n@@\n two\n*** End Patch", "no_change"),
        ("*** Begin Patch\n*** Add File: new.txt\n*** End Patch", "invalid_patch"),
    ]:
        res = tool(patch=patch)
        assert res.code == code, (patch, res.code, str(res))
        assert res.data["hint"]
    assert state(repo) == before


def test_a_workspace_in_review_mode_is_a_storage_too(tmp_path) -> None:
    repo = tmp_path / "r"
    mounted(repo, {"a.txt": "a\n"})
    ws = Workspace.open(repo, mode="review")
    res = apply_patch_tool(ws, ws)(patch="*** Begin Patch\n*** Delete File: a.txt\n*** End Patch")
    assert res.ok and res.data["status"] == "proposed"
    assert git(repo, "ls-tree", "--name-only", f"gitpatch/{res.data['proposal_id']}") == ""


def test_mounted_errors_name_files_as_the_caller_did(world) -> None:
    repo, ws, fs = world
    res = patch_tool(fs, fs)(path="nope.txt", edits=sr("a\n", "b\n"))
    assert str(res).startswith("cannot update /workspace/nope.txt: no such file")
    # Quoted content is never rewritten: the model may copy it.
    res = patch_tool(fs, fs)(path="a.txt", edits=sr("a.txt\n", "b\n"))
    assert "/workspace/a.txt: SEARCH block 1" in str(res) and "'a.txt'" in str(res)
