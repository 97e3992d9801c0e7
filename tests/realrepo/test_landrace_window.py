"""landrace's git_window explains only what git's window can do: a landed line undone."""

from __future__ import annotations

from pathlib import Path

from bench import landrace


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
