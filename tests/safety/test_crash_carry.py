"""A land that carries onto a person's uncommitted work, killed at every crash point it passes:
the next open finishes it or leaves it undone, and the person's line is never lost."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gitpatch.core.model import Proposal, Replace, UpdateFile
from gitpatch.porcelain.workspace import Workspace
from tests.gitkit import git, make_repo
from tests.safety.proofkit import propose_in_child

TEXT = "".join(f"line {i}\n" for i in range(1, 11))
MINE = TEXT.replace("line 1\n", "line 1\nPERSON\n")
AFTER = MINE.replace("line 9", "LINE 9")


_EDIT = Proposal(
    (UpdateFile("a.txt", (Replace("line 9", "LINE 9"),)),), "patch_resource", tool="test"
)


def _child(repo: Path, env: dict[str, str]) -> int:
    return propose_in_child(repo, _EDIT, env)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    root = tmp_path_factory.mktemp("carry")
    repo = make_repo(root / "template", {"a.txt": TEXT, "b.txt": "b\n"})
    (repo / "a.txt").write_text(MINE)
    learn = root / "learn"
    shutil.copytree(repo, learn, symlinks=True)
    log = root / "points.log"
    assert _child(learn, {"GITPATCH_CRASH_LOG": str(log)}) == 0
    assert (learn / "a.txt").read_text() == AFTER
    return repo, log.read_text().split()


def test_every_crash_point_of_a_carry_recovers_whole_or_nothing(
    template: tuple[Path, list[str]], tmp_path: Path
) -> None:
    repo, points = template
    assert any(p.startswith("refs.moved") for p in points)
    for point in points:
        where = tmp_path / point.replace(":", "_")
        shutil.copytree(repo, where, symlinks=True)
        base = git(where, "rev-parse", "HEAD").strip()
        assert _child(where, {"GITPATCH_CRASH_AT": point}) == 137, point
        Workspace.open(where)  # recovers
        head = git(where, "rev-parse", "HEAD").strip()
        disk = (where / "a.txt").read_text()
        if head == base:
            assert disk == MINE, f"{point}: undone, yet the disk changed"
        else:
            assert git(where, "show", "HEAD:a.txt") == TEXT.replace("line 9", "LINE 9"), point
            assert disk == AFTER, f"{point}: landed, yet the disk is {disk!r}"
        assert git(where, "status", "--porcelain") == " M a.txt\n", point
        assert not (where / ".git" / "gitpatch" / "journal.json").exists(), point
        git(where, "fsck", "--strict", "--no-progress")
