"""One runner for every scenario folder under tests/scenarios/<format>/NNN_name/.

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

The runner copies ``input/`` to a temp dir, parses, applies the proposal to a lazy snapshot of
that dir, writes the changeset there and compares whole trees byte for byte; on an error it
checks it as above and that the tree is untouched.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from gitpatch.core.model import Changeset, Proposal
from gitpatch.engine import apply
from gitpatch.errors import GitpatchError

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


@pytest.mark.parametrize("case", _cases(), ids=lambda d: f"{d.parent.name}/{d.name}")
def test_scenario(case: Path, tmp_path: Path) -> None:
    run_case(case, tmp_path / "tree")


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
