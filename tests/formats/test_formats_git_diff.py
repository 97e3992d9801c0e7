"""Real ``git diff`` and ``diff -u`` output, parsed and applied, rebuilds the tree git diffed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitpatch import engine
from gitpatch.formats import unified_diff
from tests.gitkit import git, write_files

BEFORE = {
    "f.txt": "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n",
    "old.txt": "x\ny\n",
    "gone.txt": "del\nme\n",
    "nonl.txt": "one\ntwo",
    "mv.txt": "same\n",
    "src/deep/m.py": "def f():\n    return 1\n\n\ndef g():\n    return 2\n",
    "crlf.txt": "p\r\nq\r\nr\r\n",
}
AFTER = {
    "f.txt": "a\nB\nc\nd\ne\nf\ng\nh\ni\nJ\nk\n",
    "new dir é/renamed.txt": "x\ny\nz\n",
    "nonl.txt": "one\n2",
    "moved/mv.txt": "same\n",
    "src/deep/m.py": "def f():\n    return 10\n\n\ndef g():\n    return 2\n",
    "added.txt": "new\nfile\n",
    "added-nonl.txt": "tail",
    "crlf.txt": "p\r\nQ\r\nr\r\n",
}


def _apply(diff: str, before: dict[str, str]) -> dict[str, str]:
    """Parse ``diff``, apply it with the engine, return the resulting tree."""
    snapshot = {k: v.encode() for k, v in before.items()}
    tree = dict(snapshot)
    for change in engine.apply(unified_diff.parse(diff), snapshot).changes:
        if change.source:
            tree.pop(change.source)
        if change.content is None:
            tree.pop(change.path)
        else:
            tree[change.path] = change.content
    return {k: v.decode() for k, v in tree.items()}


@pytest.mark.parametrize("options", [["-M"], ["-M", "-U1"], ["-M", "-U8"], ["--no-renames", "-U1"]])
def test_git_diff_of_a_tree_applies_back(git_repo: Path, options: list[str]) -> None:
    write_files(git_repo, BEFORE)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "before")
    for name in BEFORE:
        (git_repo / name).unlink()
    write_files(git_repo, AFTER)
    git(git_repo, "add", "-A")
    diff = git(git_repo, "-c", "core.quotepath=true", "diff", "--cached", *options)
    assert _apply(diff, BEFORE) == AFTER


def test_plain_diff_u_applies_back(tmp_path: Path) -> None:
    old, new = tmp_path / "old.c", tmp_path / "new.c"
    old.write_text("int a;\nint b;\nint c;\nint d;\n")
    new.write_text("int a;\nlong b;\nint c;\nint d;\nint e;\n")
    out = subprocess.run(
        ["diff", "-u", old.name, new.name], cwd=tmp_path, capture_output=True, text=True
    )
    assert out.returncode == 1, out.stderr
    result = _apply(out.stdout, {"new.c": old.read_text()})
    assert result == {"new.c": new.read_text()}
