"""Lexical path safety: every refusal has its code and changes nothing (nothing is read)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.core.paths import normalize
from gitpatch.errors import GitpatchError
from tests.gitkit import git, make_repo


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
    from gitpatch.core.model import DeleteFile, Proposal, UpdateFile
    from gitpatch.core.paths import normalize_proposal

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


def test_a_normalised_proposal_is_trusted_until_its_operations_change() -> None:
    """Normalised once: the engine and the Workspace take a marked proposal as it is; new
    operations (``dataclasses.replace``) are checked again, and the mark is no argument."""
    import dataclasses

    from gitpatch.core.model import DeleteFile, Proposal
    from gitpatch.core.paths import normalize_proposal

    clean = normalize_proposal(Proposal((DeleteFile("./a//b"),), "apply_patch"))
    assert clean.normalized and normalize_proposal(clean, "/elsewhere") is clean
    assert not dataclasses.replace(clean, tool="patch").normalized
    unsafe = dataclasses.replace(clean, operations=(DeleteFile("../etc/passwd"),))
    assert not unsafe.normalized
    with pytest.raises(GitpatchError) as err:
        normalize_proposal(unsafe)
    assert err.value.code == "path_unsafe"
    with pytest.raises(TypeError):
        Proposal((DeleteFile("../x"),), "apply_patch", normalized_ops=())  # type: ignore[call-arg]


def test_a_proposal_of_resolved_keys_is_marked_as_it_is_and_new_names_still_checked() -> None:
    """A tool's keys are the normaliser's own output: ``resolved=True`` marks the proposal
    without normalising its paths again, but a new file's name is still checked."""
    from gitpatch.core.model import AddFile, Proposal, UpdateFile
    from gitpatch.core.paths import normalize_proposal

    proposal = Proposal((UpdateFile("src/a.py", (), move_to="lib/b.py"),), "apply_patch")
    marked = normalize_proposal(proposal, resolved=True)
    assert marked is proposal and marked.normalized
    assert normalize_proposal(marked, "/repo") is marked  # the Workspace's edge trusts it
    with pytest.raises(GitpatchError) as err:
        normalize_proposal(Proposal((AddFile("d/aux.c", "x\n"),), "apply_patch"), resolved=True)
    assert err.value.code == "path_unsafe"
    with pytest.raises(GitpatchError) as err:
        normalize_proposal(Proposal((), "apply_patch"), resolved=True)
    assert err.value.code == "invalid_patch"


def test_an_empty_proposal_is_invalid_patch_everywhere(tmp_path: object) -> None:
    # The engine and the Workspace share the one normaliser, so they cannot disagree again.
    from pathlib import Path

    from gitpatch.core.model import Proposal
    from gitpatch.engine import apply
    from gitpatch.porcelain.workspace import Workspace
    from tests.gitkit import make_repo, state

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


def test_a_tracked_device_name_stays_editable_but_is_never_created(tmp_path: Path) -> None:
    """``aux.c`` is an ordinary file on Linux: editing it works; creating one is refused."""
    repo = make_repo(tmp_path / "r", {"aux.c": "int x = 1;\n"})
    ws = Workspace.open(repo)
    ws.apply("<<<<<<< SEARCH\nint x = 1;\n=======\nint x = 2;\n>>>>>>> REPLACE", path="aux.c")
    assert (repo / "aux.c").read_text() == "int x = 2;\n"
    head = git(repo, "rev-parse", "HEAD")
    for patch in (
        "*** Begin Patch\n*** Add File: src/con.txt\n+x\n*** End Patch",
        "*** Begin Patch\n*** Update File: aux.c\n*** Move to: lib/NUL\n*** End Patch",
    ):
        with pytest.raises(GitpatchError) as err:
            ws.apply(patch)
        assert err.value.code == "path_unsafe"
        assert "device name" in err.value.message and "Windows" in err.value.hint
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == ""
    assert not (repo / "src").exists() and not (repo / "lib").exists()
