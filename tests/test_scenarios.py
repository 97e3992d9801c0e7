"""One runner for every scenario folder under tests/scenarios/<format>/NNN_name/.

A folder holds ``input/`` (the files before; missing = an empty tree), the edit, and either
``expected/`` (the whole tree after; missing = empty) or ``error.json`` (``code``, a ``message``
fragment, optionally a ``hint`` fragment). The edit is, per format:

- search_replace: ``edits.txt`` + ``args.json`` {"path": ...}, or ``patch.txt`` (multi-file form)
- apply_patch: ``patch.txt``
- patch_resource: ``edits.json`` {"path": ..., "edits": [...]}
- unified_diff: ``patch.diff``

The runner copies ``input/`` to a temp dir, parses, applies the proposal to a lazy snapshot of
that dir, writes the changeset there and compares whole trees byte for byte; on an error it
checks the code, the message and that the tree is untouched.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from gitpatch.engine import apply
from gitpatch.errors import GitpatchError
from gitpatch.model import Changeset, Proposal

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
        want = json.loads(error_file.read_text("utf-8"))
        assert exc.code == want["code"], f"{exc.code}: {exc}"
        assert want["message"] in exc.message, exc.message
        assert want.get("hint", "") in (exc.hint or ""), exc.hint
        assert read_tree(work) == before
        return
    assert not error_file.exists(), f"expected {error_file.read_text('utf-8')}, got {changeset}"
    write_changeset(work, changeset)
    assert read_tree(work) == read_tree(case / "expected")


@pytest.mark.parametrize("case", _cases(), ids=lambda d: f"{d.parent.name}/{d.name}")
def test_scenario(case: Path, tmp_path: Path) -> None:
    run_case(case, tmp_path / "tree")


def test_there_are_enough_scenarios() -> None:
    per_format = {fmt: len(list((ROOT / fmt).glob("[0-9]*"))) for fmt in FORMATS}
    assert sum(per_format.values()) >= 100, per_format
    assert all(n >= 15 for n in per_format.values()), per_format
