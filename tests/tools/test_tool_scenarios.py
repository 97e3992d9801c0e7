"""The round-1 scenario corpus again, through the tools: texts and codes, not only bytes.

Each ``search_replace`` (single-file), ``apply_patch`` and ``patch_resource`` scenario runs
through its tool (``patch``, ``apply_patch``, ``patch_resource``) on two storages: a
``MemoryStorage`` holding ``input/``, and a Workspace on a real repository mounted at
``/workspace``. A success must produce ``expected/`` and the tool's first line (``Applied N
edits to <path>.``, or the apply_patch summary naming every changed path); a failure must carry
the scenario's code as the tool reports it (``patch_resource`` folds match errors into
``invalid_patch``), its message in the text, and leave every file as it was.
"""

from __future__ import annotations

import json
import re
import shutil
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
from gitpatch.tools import ToolResult, spec_code
from tests.test_scenarios import ROOT, read_tree

_SIG = pygit2.Signature("Test Person", "person@example.com", 1767225600, 0)
_SEARCH = re.compile(r"^\s*<{5,9}\s*SEARCH\s*$", re.M)


def _cases() -> list[Path]:
    out = []
    for fmt in ("search_replace", "apply_patch", "patch_resource"):
        for case in sorted((ROOT / fmt).iterdir()):
            if fmt == "search_replace" and not (case / "args.json").exists():
                continue  # the multi-file form has no tool of its own
            out.append(case)
    return out


def _repo(case: Path, work: Path) -> Workspace:
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
        repo.create_commit("refs/heads/work", _SIG, _SIG, "input", index.write_tree(), [])
    return Workspace.open(str(work))


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


def _fragments(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


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


@pytest.mark.parametrize("case", _cases(), ids=lambda d: f"{d.parent.name}/{d.name}")
def test_scenario_through_tool_on_memory(case: Path) -> None:
    before = read_tree(case / "input")
    mem = MemoryStorage(before)
    res, tool, first = _call(case, mem, "")
    after = {k: mem.read_bytes(k) for k in mem.list()}
    _check(case, res, tool, first, "", after, before, workspace=False)


@pytest.mark.parametrize("case", _cases(), ids=lambda d: f"{d.parent.name}/{d.name}")
def test_scenario_through_tool_on_workspace(case: Path, tmp_path: Path) -> None:
    ws = _repo(case, tmp_path / "repo")
    fs = MountedFilesystem({"/workspace": ws})
    before = read_tree(case / "input")
    res, tool, first = _call(case, fs, "/workspace/")
    after = {
        p.relative_to(tmp_path / "repo").as_posix(): p.read_bytes()
        for p in (tmp_path / "repo").rglob("*")
        if p.is_file() and ".git" not in p.relative_to(tmp_path / "repo").parts
    }
    _check(case, res, tool, first, "/workspace/", after, before, workspace=True)
