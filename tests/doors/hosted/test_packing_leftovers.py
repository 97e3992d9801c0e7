"""What a packing run must not leave or keep (a dying ``git pack-objects``' partial pack, a
failed write's object past the grace period), and the watched files seen at a session's next
request. Real repositories, the real ``git``, a real ``gitpatch serve --http``."""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from gitpatch.core.model import Proposal, WriteFile
from gitpatch.doors.hosted import Spaces
from gitpatch.doors.hosted.maintenance import Maintenance, packs
from gitpatch.doors.hosted.spaces import disk_bytes
from tests.doors.hosted.svckit import Server, run, serving, text_of
from tests.gitkit import git, loose_objects, run_git

SPACE = "users/ada"


def _fill(spaces: Spaces, changes: int) -> None:
    """``changes`` commits of 40 KB files that do not compress away (random hex)."""
    for n in range(changes):
        op = WriteFile(f"f{n}.txt", os.urandom(20_000).hex().encode(), True)
        spaces.get(SPACE).storage.apply(Proposal((op,), "patch_resource"))


def _leftovers(repo: Path) -> list[str]:
    return sorted(p.name for p in (repo / "objects" / "pack").iterdir() if "tmp" in p.name)


def test_a_pack_objects_that_dies_leaves_no_partial_pack(tmp_path: Path, caplog: Any) -> None:
    spaces = Spaces(tmp_path)
    _fill(spaces, 6)
    space = spaces.get(SPACE)
    repo = tmp_path / "users" / "ada.git"
    # git may write at most 16 KB per file: pack-objects dies at its pack (SIGXFSZ, as a
    # kill; with the signal ignored it is the write error of a full disk)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (16_384, hard))
    try:
        Maintenance().pack_new(space)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert "packing users/ada failed" in caplog.text
    assert packs(space) == 0 and len(loose_objects(repo)) >= 6
    Maintenance().pack_new(space)  # the next run succeeds
    assert packs(space) == 1 and loose_objects(repo) == []
    Maintenance().pack(space)  # and even a full git gc
    git(repo, "fsck", "--strict", "--no-progress")
    assert space.disk_used == disk_bytes(repo)
    assert _leftovers(repo) == []
    assert list(repo.glob("gitpatch-packing-*")) == []  # the failed run's own folder too


def test_a_failed_writes_object_older_than_the_grace_is_pruned(tmp_path: Path) -> None:
    spaces = Spaces(tmp_path)
    _fill(spaces, 3)
    space = spaces.get(SPACE)
    repo = tmp_path / "users" / "ada.git"
    made = run_git(repo, "hash-object", "-w", "--stdin", input=b"a lost write's blob\n")
    stray = made.stdout.decode().strip()
    loose = repo / "objects" / stray[:2] / stray[2:]
    two_hours_ago = loose.stat().st_mtime - 2 * 3600
    os.utime(loose, (two_hours_ago, two_hours_ago))  # written two hours ago, never referenced
    keeper = Maintenance()  # the service's grace: one hour
    keeper.pack_new(space)  # a run: what is loose goes into a new pack
    keeper.pack(space)  # a later run, at MAX_PACKS: git gc --prune=1.hour.ago
    git(repo, "fsck", "--strict", "--no-progress")
    gone = run_git(repo, "cat-file", "-e", stray)
    assert gone.returncode != 0, "a two-hour-old unreachable object survived git gc"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Server, dict[str, str]]]:
    with serving(tmp_path) as running:
        yield running


@pytest.mark.slow
def test_one_session_sees_each_files_change_at_its_next_request(
    served: tuple[Server, dict[str, str]],
) -> None:
    """``checked_once`` is one HTTP request, not one MCP session: the SDK runs a session's
    calls under the context of the POST that carried each (not the session's first one), so
    a limits change and a credentials file made readable by others take effect at the
    session's next call."""
    server, tokens = served
    limits = server.data / "spaces.toml"
    creds = server.creds

    async def scenario(c: ClientSession) -> list[Any]:
        out: list[Any] = [
            await c.call_tool("create_resource", {"path": "a.md", "content": "x" * 100})
        ]
        limits.write_text('[space."users/bob"]\nmax_file_bytes = 50\n')
        out.append(await c.call_tool("create_resource", {"path": "b.md", "content": "y" * 100}))
        creds.chmod(0o644)
        try:
            out.append(await c.call_tool("list_resources", {}))
        except Exception as exc:  # the SDK client raises for the HTTP 401
            out.append(exc)
        return out

    first, second, third = run(server.url, tokens["bob"], scenario)
    assert not first.is_error, text_of(first)
    assert second.is_error and text_of(second).startswith("payload_too_large"), text_of(second)
    assert isinstance(third, Exception)  # refused: HTTP 401
