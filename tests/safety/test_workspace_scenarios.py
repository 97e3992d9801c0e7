"""Every engine scenario again, through a Workspace on a real repository (auto mode).

``tests/scenarios/<format>/NNN_name/input/`` becomes one commit on branch ``work`` (an unborn
branch when there is no input); the scenario's edit is parsed by the same code as the engine
runner (``tests/test_scenarios.py``) and proposed. A success must leave the working tree AND the
new HEAD commit's tree equal to ``expected/``, with ``git status`` clean; an error must carry the
scenario's code and message and leave refs, files and index exactly as they were.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pygit2
import pytest

from gitpatch.errors import GitpatchError
from gitpatch.porcelain.workspace import Workspace
from tests.gitkit import git, status_porcelain
from tests.safety.proofkit import assert_fsck_clean, disk_files
from tests.test_scenarios import _cases, check_error, parse_case, read_tree

BRANCH = "refs/heads/work"

_SIG = pygit2.Signature("Test Person", "person@example.com", 1767225600, 0)


def _repo_from_input(case: Path, work: Path) -> pygit2.Repository:
    """A repository whose one commit holds ``input/`` (none when there is no input)."""
    if (case / "input").is_dir():
        shutil.copytree(case / "input", work)
    else:
        work.mkdir()
    repo = pygit2.init_repository(str(work), initial_head="work")
    repo.config["user.name"] = _SIG.name
    repo.config["user.email"] = _SIG.email
    index = repo.index
    index.add_all()
    index.write()
    if len(index):
        tree = index.write_tree()
        repo.create_commit(BRANCH, _SIG, _SIG, "scenario input", tree, [])
    return repo


def _refs(repo: pygit2.Repository) -> dict[str, str]:
    """Every ref with its target (symbolic ones by name), read in-process for speed."""
    out = {}
    for name in [*repo.references, "HEAD"]:
        ref = repo.lookup_reference(name)
        out[name] = str(ref.target)
    return out


def _head_files(repo: pygit2.Repository) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    if repo.head_is_unborn:
        return out
    stack: list[tuple[str, pygit2.Tree]] = [("", repo.head.peel(pygit2.Commit).tree)]
    while stack:
        prefix, tree = stack.pop()
        for entry in tree:
            if isinstance(entry, pygit2.Tree):
                stack.append((f"{prefix}{entry.name}/", entry))
            else:
                out[f"{prefix}{entry.name}"] = entry.data
    return out


def _params() -> list[object]:
    out: list[object] = []
    for case in _cases():
        out.append(pytest.param(case, id=f"{case.parent.name}/{case.name}"))
    return out


@pytest.mark.parametrize("case", _params())
def test_scenario_through_workspace(case: Path, tmp_path: Path) -> None:
    """The scenario's outcome, now on a real repository with a working tree and index."""
    work = tmp_path / "repo"
    repo = _repo_from_input(case, work)
    before_refs, before_disk = _refs(repo), disk_files(work)
    index_file = work / ".git" / "index"
    before_index = index_file.read_bytes() if index_file.exists() else b""
    error_file = case / "error.json"
    try:
        proposal = parse_case(case)
        ws = Workspace.open(str(work))
        result = ws.propose(proposal)
    except GitpatchError as exc:
        if not error_file.exists():
            raise
        want = json.loads(error_file.read_text("utf-8"))
        # The workspace sees the repository, so it can be more precise than the engine alone
        # (e.g. a path that is a directory, not a missing file); error.json may say so.
        check_error(case, exc, want.get("workspace", want))
        assert _refs(repo) == before_refs, "a failed proposal moved a ref"
        assert disk_files(work) == before_disk, "a failed proposal changed a file"
        now_index = index_file.read_bytes() if index_file.exists() else b""
        assert now_index == before_index, "a failed proposal changed the index"
        return
    assert not error_file.exists(), f"expected {error_file.read_text('utf-8')}, got {result}"
    expected = read_tree(case / "expected")
    assert str(repo.references[BRANCH].target) == result.version
    assert _head_files(repo) == expected, "HEAD's tree differs from expected/"
    assert disk_files(work) == expected, "the working tree differs from expected/"
    assert status_porcelain(work) == "", status_porcelain(work)
    assert_fsck_clean(work)
    # git log --stat names exactly the files the result says the proposal changed.
    stat = git(work, "log", "-1", "--format=%(trailers:key=Gitpatch-Proposal,valueonly)", "--stat")
    assert result.proposal_id in stat
    for changed in result.files:
        assert changed.path in stat or "=>" in stat, (changed.path, stat)
