"""Lexical path safety: every refusal has its code and changes nothing (nothing is read)."""

from __future__ import annotations

import pytest

from gitpatch.errors import GitpatchError
from gitpatch.paths import normalize


@pytest.mark.parametrize(
    ("raw", "root", "expected"),
    [
        ("a.txt", None, "a.txt"),
        ("./src//x.py", None, "src/x.py"),
        ("src/../lib/y.py", None, "lib/y.py"),
        ("/workspace/a/b.txt", "/workspace", "a/b.txt"),
        ("/repo/dir/f", "/repo/", "dir/f"),
        ("  spaced.txt ", None, "spaced.txt"),
        (".github/workflows/ci.yml", None, ".github/workflows/ci.yml"),
    ],
)
def test_normalize(raw: str, root: str | None, expected: str) -> None:
    assert normalize(raw, root) == expected


@pytest.mark.parametrize(
    ("raw", "root", "code"),
    [
        ("", None, "invalid_arguments"),
        ("   ", None, "invalid_arguments"),
        (".", None, "invalid_arguments"),
        ("a\x00b", None, "path_unsafe"),
        ("../etc/passwd", None, "path_unsafe"),
        ("a/../../b", None, "path_unsafe"),
        (".git/config", None, "path_unsafe"),
        ("sub/.GIT/hooks/pre-commit", None, "path_unsafe"),
        ("/etc/passwd", None, "path_unsafe"),
        ("/etc/passwd", "/workspace", "path_unsafe"),
        ("/workspacex/a", "/workspace", "path_unsafe"),
    ],
)
def test_refusals(raw: str, root: str | None, code: str) -> None:
    with pytest.raises(GitpatchError) as err:
        normalize(raw, root)
    assert err.value.code == code
    assert err.value.hint


def test_normalize_proposal_cleans_every_path_and_destination() -> None:
    from gitpatch.model import DeleteFile, Proposal, UpdateFile
    from gitpatch.paths import normalize_proposal

    proposal = Proposal(
        (UpdateFile("/repo/src//a.py", (), move_to="./lib/../b.py"), DeleteFile("c/./d")),
        "apply_patch",
    )
    clean = normalize_proposal(proposal, "/repo")
    assert [op.path for op in clean.operations] == ["src/a.py", "c/d"]
    first = clean.operations[0]
    assert isinstance(first, UpdateFile) and first.move_to == "b.py"
    with pytest.raises(GitpatchError) as err:
        normalize_proposal(Proposal((DeleteFile("x/../../etc"),), "apply_patch"))
    assert err.value.code == "path_unsafe"


def test_an_empty_proposal_is_invalid_patch_everywhere(tmp_path: object) -> None:
    # The engine and the Workspace share the one normaliser, so they cannot disagree again.
    from pathlib import Path

    from gitpatch.engine import apply
    from gitpatch.model import Proposal
    from gitpatch.workspace import Workspace
    from tests.gitkit import make_repo
    from tests.unit.workspace_kit import state

    empty = Proposal((), "apply_patch")
    with pytest.raises(GitpatchError) as err:
        apply(empty, {})
    assert err.value.code == "invalid_patch"
    root = make_repo(Path(str(tmp_path)) / "r", {"a.txt": "a\n"})
    before = state(root)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(root).propose(empty)
    assert err.value.code == "invalid_patch" and "no file operations" in err.value.message
    assert state(root) == before
