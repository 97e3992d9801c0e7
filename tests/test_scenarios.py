"""One runner for every scenario folder under tests/scenarios/<format>/NNN_name/, through the
engine, a Workspace and the tools: the same cases, the same checks of the outcome.

A folder holds ``input/`` (the files before; missing = an empty tree), the edit, and either
``expected/`` (the whole tree after; missing = empty) or ``error.json``. The edit is, per format:

- search_replace: ``edits.txt`` + ``args.json`` {"path": ...}, or ``patch.txt`` (multi-file form)
- apply_patch: ``patch.txt``
- patch_resource: ``edits.json`` {"path": ..., "edits": [...]}
- unified_diff: ``patch.diff``

``error.json`` says what the refusal must carry, all of it checked (``check_error``)::

    {"code": "match_not_found",
     "message_contains": "fragment" or ["fragment", ...],
     "hint_contains": "fragment" or ["fragment", ...],
     "details": {...},                  # a subset of the error's details, compared by value
     "workspace": {...}}                # optional: the same keys, when a Workspace knows better

A folder may also hold ``golden.txt``: the error's code, full message and full hint, compared
verbatim (the errors a retrying model reads most, pinned word for word). After changing an error
text on purpose, regenerate them, and review the diff::

    GITPATCH_GOLDEN=write .venv/bin/pytest tests/test_scenarios.py

(that rewrites every existing ``golden.txt``; to pin one more error, create an empty
``golden.txt`` in its folder first).

Each case runs through four drivers, each compared whole tree by whole tree, byte for byte:

- engine (``test_scenario``): ``input/`` copied to a temp dir, the proposal applied to a lazy
  snapshot of it, the changeset written there; an error leaves the tree untouched.
- Workspace (``test_scenario_through_workspace``): ``input/`` as one commit on branch ``work``
  of a real repository (unborn when there is no input), proposed in auto mode. A success
  leaves the working tree AND the new HEAD's tree equal to ``expected/``, ``git status`` clean;
  an error leaves refs, files and index exactly as they were (``workspace`` in error.json).
- tools (``test_scenario_through_tool_on_memory`` / ``_on_workspace``): every single-file
  search_replace, apply_patch and patch_resource case through its tool (``patch``,
  ``apply_patch``, ``patch_resource``) on a ``MemoryStorage`` and on that Workspace mounted at
  ``/workspace``: the tool's first line on success (``Applied N edits to <path>.``, or the
  apply_patch summary naming every changed path); on failure the code as the tool reports it
  (``patch_resource`` folds match errors into ``invalid_patch``), the message in the text, and
  every file left as it was.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pygit2
import pytest

from gitpatch import (
    MemoryStorage,
    MountedFilesystem,
    Workspace,
    apply_patch_tool,
    patch_resource_tool,
    patch_tool,
)
from gitpatch.core.model import Changeset, Proposal
from gitpatch.engine import apply
from gitpatch.errors import GitpatchError
from gitpatch.tools import ToolResult, spec_code
from tests.gitkit import git, status_porcelain
from tests.safety.proofkit import assert_fsck_clean, disk_files

ROOT = Path(__file__).parent / "scenarios"
FORMATS = ("search_replace", "apply_patch", "patch_resource", "unified_diff")


def _cases() -> list[Path]:
    return sorted(
        d for fmt in FORMATS if (ROOT / fmt).is_dir() for d in (ROOT / fmt).iterdir() if d.is_dir()
    )


class DirSnapshot(Mapping[str, bytes]):
    """Files under a directory, read on demand; iterating is refused, as a real workspace's
    snapshot may be too large to list."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __getitem__(self, path: str) -> bytes:
        target = self.root / path
        if not target.is_file():
            raise KeyError(path)
        return target.read_bytes()

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("the engine must not iterate the snapshot")

    def __len__(self) -> int:
        raise AssertionError("the engine must not measure the snapshot")


def read_tree(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` by its POSIX relative path (empty for a missing dir)."""
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def write_changeset(root: Path, changeset: Changeset) -> None:
    """Write a changeset into ``root`` as the workspace would (minus git)."""
    for change in changeset.changes:
        for path in (change.path, change.source):
            assert path is None or (not path.startswith("/") and ".." not in path.split("/"))
        if change.source:
            (root / change.source).unlink()
        target = root / change.path
        if change.content is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(change.content)


def parse_case(case: Path) -> Proposal:
    """Parse the edit of a scenario with its format's parser."""
    fmt = case.parent.name
    if fmt == "search_replace":
        from gitpatch.formats import search_replace

        if (case / "patch.txt").exists():
            return search_replace.parse((case / "patch.txt").read_text("utf-8"))
        args = json.loads((case / "args.json").read_text("utf-8"))
        return search_replace.parse((case / "edits.txt").read_text("utf-8"), path=args["path"])
    if fmt == "apply_patch":
        from gitpatch.formats import apply_patch

        return apply_patch.parse((case / "patch.txt").read_text("utf-8"))
    if fmt == "patch_resource":
        from gitpatch.formats import patch_resource

        args = json.loads((case / "edits.json").read_text("utf-8"))
        return patch_resource.parse(args["path"], args["edits"])
    from gitpatch.formats import unified_diff

    return unified_diff.parse((case / "patch.diff").read_text("utf-8"))


def run_case(case: Path, work: Path) -> None:
    """Run one scenario in ``work`` (a fresh directory) and assert its outcome."""
    if (case / "input").is_dir():
        shutil.copytree(case / "input", work)
    else:
        work.mkdir()
    before = read_tree(work)
    error_file = case / "error.json"
    try:
        changeset = apply(parse_case(case), DirSnapshot(work))
    except GitpatchError as exc:
        if not error_file.exists():
            raise
        check_error(case, exc, json.loads(error_file.read_text("utf-8")))
        assert read_tree(work) == before
        return
    assert not error_file.exists(), f"expected {error_file.read_text('utf-8')}, got {changeset}"
    write_changeset(work, changeset)
    assert read_tree(work) == read_tree(case / "expected")


def _fragments(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def golden_text(exc: GitpatchError) -> str:
    """An error as ``golden.txt`` holds it: code, message, then the hint verbatim."""
    return f"code: {exc.code}\nmessage: {exc.message}\nhint:\n{exc.hint or ''}\n"


def check_error(case: Path, exc: GitpatchError, want: dict[str, Any]) -> None:
    """Assert that ``exc`` is the refusal ``want`` (an ``error.json``) describes, and that it
    matches the folder's ``golden.txt`` word for word when there is one."""
    assert exc.code == want["code"], f"{exc.code}: {exc}"
    for fragment in _fragments(want["message_contains"]):
        assert fragment in exc.message, (fragment, exc.message)
    for fragment in _fragments(want["hint_contains"]):
        assert fragment in (exc.hint or ""), (fragment, exc.hint)
    for key, value in want["details"].items():
        assert exc.details.get(key) == value, (key, exc.details)
    golden = case / "golden.txt"
    if os.environ.get("GITPATCH_GOLDEN") == "write" and golden.exists():
        golden.write_text(golden_text(exc), "utf-8")
    if golden.exists():
        assert golden_text(exc) == golden.read_text("utf-8")


def _case_id(case: Path) -> str:
    return f"{case.parent.name}/{case.name}"


# -- the engine ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", _cases(), ids=_case_id)
def test_scenario(case: Path, tmp_path: Path) -> None:
    run_case(case, tmp_path / "tree")


# -- a Workspace on a real repository -----------------------------------------------------------

BRANCH = "refs/heads/work"

_SIG = pygit2.Signature("Test Person", "person@example.com", 1767225600, 0)


def scenario_repo(case: Path, work: Path) -> pygit2.Repository:
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


@pytest.mark.parametrize("case", _cases(), ids=_case_id)
def test_scenario_through_workspace(case: Path, tmp_path: Path) -> None:
    """The scenario's outcome, now on a real repository with a working tree and index."""
    work = tmp_path / "repo"
    repo = scenario_repo(case, work)
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


# -- the tools, on a MemoryStorage and on a mounted Workspace ----------------------------------

_SEARCH = re.compile(r"^\s*<{5,9}\s*SEARCH\s*$", re.M)


def _tool_cases() -> list[Path]:
    """The cases a tool takes: all but the multi-file search_replace form and unified diffs."""
    return [
        case
        for case in _cases()
        if case.parent.name in ("apply_patch", "patch_resource")
        or (case.parent.name == "search_replace" and (case / "args.json").exists())
    ]


def _call(case: Path, ns: Any, prefix: str) -> tuple[ToolResult, str, str]:
    """Run the case's tool; return its result, the tool name and the expected first line."""
    fmt = case.parent.name
    if fmt == "search_replace":
        args = json.loads((case / "args.json").read_text("utf-8"))
        edits = (case / "edits.txt").read_text("utf-8")
        count = len(_SEARCH.findall(edits))
        first = f"Applied {count} edit{'' if count == 1 else 's'} to {prefix}{args['path']}."
        return patch_tool(ns, ns)(path=args["path"], edits=edits), "patch", first
    if fmt == "patch_resource":
        args = json.loads((case / "edits.json").read_text("utf-8"))
        n = len(args["edits"]) if isinstance(args["edits"], list) else 0
        first = f"Applied {n} edit{'' if n == 1 else 's'} to {prefix}{args['path']}."
        res = patch_resource_tool(ns, ns)(path=args["path"], edits=args["edits"])
        return res, "patch_resource", first
    patch = (case / "patch.txt").read_text("utf-8")
    return apply_patch_tool(ns, ns)(patch=patch), "apply_patch", "Applied patch to "


def _check(
    case: Path,
    res: ToolResult,
    tool: str,
    first: str,
    prefix: str,
    after: dict[str, bytes],
    before: dict[str, bytes],
    workspace: bool,
) -> None:
    error_file = case / "error.json"
    if error_file.exists():
        want = json.loads(error_file.read_text("utf-8"))
        options = (
            [want.get("workspace", want)] if workspace else [want, want.get("workspace", want)]
        )
        assert not res.ok, str(res)
        assert any(_matches(res, tool, w) for w in options), (res.code, str(res), res.data)
        assert res.data["code"] == res.code
        golden = case / "golden.txt"
        same = "workspace" not in want and spec_code(tool, want["code"]) == want["code"]
        # Golden texts name the engine's paths; a mounted Workspace shows /workspace/ paths.
        if golden.exists() and same and not workspace:
            assert str(res) == _golden_text(golden), str(res)
        assert after == before
        return
    assert res.ok, str(res)
    assert res.code is None
    assert str(res).startswith(first), str(res)
    expected = read_tree(case / "expected")
    assert after == expected
    if tool == "apply_patch":
        changed = {p for p in set(before) | set(expected) if before.get(p) != expected.get(p)}
        for path in changed:
            assert f"{prefix}{path}" in str(res), (path, str(res))
    if tool == "patch_resource":
        assert set(res.data) == {"path", "id", "version"}


def _matches(res: ToolResult, tool: str, want: dict[str, Any]) -> bool:
    """The tool's code, and the error's message, hint and details in its text and data (a
    mounted Workspace's messages name files by their /workspace/ paths)."""
    text = str(res).replace("/workspace/", "")
    details = res.data.get("details", {})
    return (
        res.code == spec_code(tool, want["code"])
        and all(f in text for f in _fragments(want["message_contains"]))
        and all(f in text for f in _fragments(want.get("hint_contains", [])))
        and all(details.get(k) == v for k, v in want.get("details", {}).items())
    )


def _golden_text(golden: Path) -> str:
    """The text a tool shows for a ``golden.txt`` error: the message, then the hint."""
    body = golden.read_text("utf-8")
    message = body.split("\nmessage: ", 1)[1].split("\nhint:\n", 1)[0]
    hint = body.split("\nhint:\n", 1)[1].removesuffix("\n")
    return f"{message}\n{hint}" if hint else message


@pytest.mark.parametrize("case", _tool_cases(), ids=_case_id)
def test_scenario_through_tool_on_memory(case: Path) -> None:
    before = read_tree(case / "input")
    mem = MemoryStorage(before)
    res, tool, first = _call(case, mem, "")
    after = {k: mem.read_bytes(k) for k in mem.list()}
    _check(case, res, tool, first, "", after, before, workspace=False)


@pytest.mark.parametrize("case", _tool_cases(), ids=_case_id)
def test_scenario_through_tool_on_workspace(case: Path, tmp_path: Path) -> None:
    scenario_repo(case, tmp_path / "repo")
    ws = Workspace.open(str(tmp_path / "repo"))
    fs = MountedFilesystem({"/workspace": ws})
    before = read_tree(case / "input")
    res, tool, first = _call(case, fs, "/workspace/")
    after = {
        p.relative_to(tmp_path / "repo").as_posix(): p.read_bytes()
        for p in (tmp_path / "repo").rglob("*")
        if p.is_file() and ".git" not in p.relative_to(tmp_path / "repo").parts
    }
    _check(case, res, tool, first, "/workspace/", after, before, workspace=True)


# -- the corpus itself -------------------------------------------------------------------------


def test_there_are_enough_scenarios() -> None:
    per_format = {fmt: len(list((ROOT / fmt).glob("[0-9]*"))) for fmt in FORMATS}
    assert sum(per_format.values()) >= 100, per_format
    assert all(n >= 15 for n in per_format.values()), per_format


def _error_specs() -> list[tuple[Path, dict[str, Any]]]:
    out = []
    for case in _cases():
        if (case / "error.json").exists():
            want = json.loads((case / "error.json").read_text("utf-8"))
            out.extend(
                [(case, want), *([(case, want["workspace"])] if "workspace" in want else [])]
            )
    return out


def test_every_error_scenario_checks_message_hint_and_details() -> None:
    """No error scenario passes on a file name alone: the message and the hint a retrying model
    reads are checked by real fragments, and the details by value."""
    specs = _error_specs()
    assert len(specs) >= 70
    for case, want in specs:
        assert set(want) <= {"code", "message_contains", "hint_contains", "details", "workspace"}
        message = "".join(_fragments(want["message_contains"]))
        hint = "".join(_fragments(want["hint_contains"]))
        assert len(message) >= 12 and len(hint) >= 20, case
        assert want["details"], case


def test_a_dozen_errors_are_pinned_word_for_word() -> None:
    golden = [c for c in _cases() if (c / "golden.txt").exists()]
    assert len(golden) >= 12
    assert all((c / "error.json").exists() for c in golden)
    assert len({c.parent.name for c in golden}) == len(FORMATS)
