"""review6: landrace's git_window must explain only what git's window can do, strict xfail."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import landrace


@pytest.mark.xfail(
    strict=True,
    reason="review6: check() counts every line the person's first commit after a lost race "
    "removes as git's window, though a written-back older index can only undo a land "
    "(AGENT k back to agent k); a removed line no land wrote is hidden from the problems",
)
def test_a_removal_no_land_made_is_never_gits_window(tmp_path: Path) -> None:
    repo = landrace.make(tmp_path, 3)
    git = landrace.git
    (repo / "person.txt").write_text("person\nperson 1\n")
    git(repo, "commit", "-qam", "person staged 1")
    (tmp_path / landrace.LOST_RACES).write_text("2\n")  # commit 2 lost its race for HEAD
    shared = (repo / "shared.txt").read_text()
    (repo / "shared.txt").write_text(shared.replace("end\n", ""))  # not a land's line
    git(repo, "commit", "-qam", "person staged 3")
    (tmp_path / "editor.log").write_text("")
    out = landrace.Outcome()
    landrace.check(repo, tmp_path / "editor.log", out)
    assert out.git_window == []
    assert any("removes 'end'" in p for p in out.problems)
