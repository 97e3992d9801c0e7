"""History kept small: a space is packed and pruned on schedule, each change is one commit
without a note, its real disk use counts against a quota, and versions far back are found
through the kept generation index (issue 20, items 11-12), through the server and the SDK.
"""

from __future__ import annotations

import base64
import contextlib
import random
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from gitpatch.core.model import Proposal, WriteFile
from gitpatch.doors.hosted import Spaces
from gitpatch.doors.hosted.generations import INDEX_FILE, SAVE_EVERY
from gitpatch.doors.hosted.maintenance import Maintenance
from gitpatch.porcelain.workspace import Workspace
from tests.doors.hosted.svckit import (
    Server,
    descendants,
    inserted_lines,
    make_credentials,
    run,
    space_refs,
    text_of,
)
from tests.gitkit import git, loose_objects, wait_until

pytestmark = pytest.mark.slow


def _place(tmp_path: Path, spaces_toml: str) -> tuple[Path, Path, dict[str, str]]:
    tokens = make_credentials(tmp_path / "credentials.toml")
    (tmp_path / "data").mkdir(mode=0o700)
    (tmp_path / "data" / "spaces.toml").write_text(spaces_toml)
    return tmp_path / "data", tmp_path / "credentials.toml", tokens


def _runs_git(server: Server) -> bool:
    """Whether a git process runs below ``server`` (a packing run's)."""
    names = []
    for pid in descendants(server.proc.pid):
        with contextlib.suppress(OSError):
            names.append(Path(f"/proc/{pid}/comm").read_text().strip())
    return "git" in names


def test_a_space_is_packed_on_schedule(tmp_path: Path) -> None:
    data, creds, tokens = _place(tmp_path, "[defaults]\npack_every_changes = 20\n")
    server = Server(data, creds)
    try:
        results = run(server.url, tokens["bob"], inserted_lines(25))
        assert not any(r.is_error for r in results)
        repo = data / "users" / "bob.git"
        # packing runs in the background: wait for it, to its end (its git prune-packed
        # exited: the server's stop does not wait for a run, and a prune-packed left running
        # would delete loose objects under the fsck below)
        wait_until(
            lambda: (
                list((repo / "objects" / "pack").glob("*.pack"))
                and len(loose_objects(repo)) < 40
                and not _runs_git(server)
            ),
            "the space packed",
        )
        read = run(
            server.url, tokens["bob"], lambda c: c.call_tool("read_resource", {"path": "h.md"})
        )
        assert read.structured_content["version"] == 25
    finally:
        server.stop()
    assert len(loose_objects(repo)) < 40
    git(repo, "fsck", "--strict", "--no-progress")
    assert git(repo, "show", "main:h.md").splitlines()[0] == "line 24"


def test_what_a_space_takes_on_disk_counts_against_its_quota(tmp_path: Path) -> None:
    data, creds, tokens = _place(tmp_path, "[defaults]\nmax_disk_bytes = 200000\n")
    server = Server(data, creds)
    big = base64.b64encode(random.Random(3).randbytes(45_000)).decode()  # does not compress
    try:

        async def scenario(client: ClientSession) -> list[Any]:
            out = []
            for n in range(8):
                args = {"path": f"f{n}.md", "content": f"{n}\n{big}"}
                out.append(await client.call_tool("create_resource", args))
            return out

        results = run(server.url, tokens["bob"], scenario)
        refused = [r for r in results if r.is_error]
        assert refused, "the quota never applied"
        assert {r.meta["code"] for r in refused} == {"storage_limit_reached"}
        assert "on disk" in text_of(refused[0])
        before = space_refs(data)
        shrink = run(
            server.url,
            tokens["bob"],
            lambda c: c.call_tool("update_resource", {"path": "f0.md", "content": "small\n"}),
        )
        assert not shrink.is_error, text_of(shrink)  # shrinking is always allowed
        assert space_refs(data) != before
    finally:
        server.stop()


def test_versions_far_back_are_found_through_the_kept_index_after_a_restart(
    tmp_path: Path,
) -> None:
    data, creds, tokens = _place(tmp_path, "")
    server = Server(data, creds)
    try:
        made = run(
            server.url,
            tokens["bob"],
            lambda c: c.call_tool("create_resource", {"path": "still.md", "content": "s\n"}),
        )
        assert not made.is_error, text_of(made)
        assert not any(r.is_error for r in run(server.url, tokens["bob"], inserted_lines(80)))
    finally:
        server.stop()
    repo = data / "users" / "bob.git"
    line = git(repo, "rev-list", "--first-parent", "--reverse", "main").split()
    assert len(line) == 81
    raw = (repo / INDEX_FILE).read_bytes()  # rewritten every SAVE_EVERY commits
    kept = [raw[i : i + 20].hex() for i in range(0, len(raw), 20)]
    assert SAVE_EVERY <= len(kept) <= 81 and kept == line[: len(kept)]

    def scenario(since: int) -> Any:
        async def calls(client: ClientSession) -> list[Any]:
            read = await client.call_tool("read_resource", {"path": "h.md"})
            edit = [{"after_line": 0, "new_string": "again\n"}]
            far = {"path": "still.md", "edits": edit, "expected_version": since}
            stale = {"path": "h.md", "edits": edit, "expected_version": 3}
            return [
                read,
                await client.call_tool("patch_resource", far),
                await client.call_tool("patch_resource", stale),
            ]

        return calls

    since = 1  # still.md is unchanged since version 1, 80 versions back
    for index in (raw, b"\x01" * len(raw)):  # the kept index, then one that is not this line
        (repo / INDEX_FILE).write_bytes(index)
        server = Server(data, creds)
        try:
            read, far, stale = run(server.url, tokens["bob"], scenario(since))
        finally:
            server.stop()
        top = len(git(repo, "rev-list", "--first-parent", "main").split())
        assert read.structured_content["version"] == top - 1
        assert read.structured_content["commit"] == git(repo, "rev-parse", "main~1").strip()
        assert not far.is_error, text_of(far)
        assert far.structured_content["version"] == top
        since = top
        assert stale.meta["code"] == "resource_conflict"
        assert "changed since version 3" in text_of(stale)


def test_each_change_of_an_auto_space_is_one_commit_without_a_note(tmp_path: Path) -> None:
    data, creds, tokens = _place(tmp_path, "")
    repo = data / "users" / "bob.git"
    Spaces(data).get("users/bob").create()
    old = Workspace.open(
        repo, "auto", "refs/heads/main", protected=[]
    )  # a space as the Workspace wrote it
    old.propose(Proposal((WriteFile("old.md", b"old\n", True),), "patch_resource"))
    noted = git(repo, "rev-parse", "main").strip()
    notes_before = git(repo, "rev-parse", "refs/notes/gitpatch").strip()
    line = "a line of about forty bytes, say it so.\n"

    async def scenario(client: ClientSession) -> list[Any]:
        out = [await client.call_tool("create_resource", {"path": "h.md", "content": "0\n"})]
        for _ in range(40):
            edit = [{"after_line": 0, "new_string": line}]
            out.append(await client.call_tool("patch_resource", {"path": "h.md", "edits": edit}))
        out.append(await client.call_tool("read_resource", {"path": "old.md"}))
        return out

    server = Server(data, creds)
    try:
        results = run(server.url, tokens["bob"], scenario)
    finally:
        server.stop()
    assert not any(r.is_error for r in results), [text_of(r) for r in results if r.is_error]
    *changes, read_old = results
    assert read_old.structured_content["content"] == "old\n"
    assert read_old.structured_content["version"] == 42
    assert len({r.structured_content["id"] for r in changes}) == 1  # edits keep the id
    # no note per change: the notes ref is where the Workspace left it, its note still there
    assert git(repo, "rev-parse", "refs/notes/gitpatch").strip() == notes_before
    assert '"status": "applied"' in git(repo, "notes", "--ref=gitpatch", "show", noted)
    # what the note said is in the commit: id and tool trailers, the requester, the base
    log = Workspace.open(repo, "auto", "refs/heads/main", protected=[]).log(limit=100)
    assert [e.tool for e in log] == ["patch_resource"] * 40 + ["create_resource", "propose"]
    newest = changes[-1].structured_content
    assert log[0].commit == newest["commit"]
    message = git(repo, "log", "-1", "--format=%B", "main")
    assert f"Gitpatch-Proposal: {log[0].proposal_id}" in message
    assert "Gitpatch-Tool: patch_resource" in message
    assert "Requested by bob (credential " in message
    # committed as the Workspace commits an agent's change: the agent is the author, and the
    # session trailer names who made it (the shared ``build.commit_changes``)
    assert "Gitpatch-Session: " in message
    assert "gitpatch.invalid" in git(repo, "log", "-1", "--format=%ae", "main")
    assert git(repo, "rev-parse", "main^").strip() == changes[-2].structured_content["commit"]
    # after the service's packing, a 40-byte edit costs its commit, tree and blob delta
    Maintenance(grace="now").pack(Spaces(data).get("users/bob"))
    packs = sum(p.stat().st_size for p in (repo / "objects" / "pack").iterdir())
    assert packs / 41 < 2 * len(line) + 400, packs / 41
    git(repo, "fsck", "--strict", "--no-progress")
