"""docs/cli.md is what the commands' --help says today."""

from __future__ import annotations

from pathlib import Path

from gitpatch.doors.cli.docs import render

DOC = Path(__file__).resolve().parents[3] / "docs" / "cli.md"


def test_docs_cli_md_is_up_to_date() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), "docs/cli.md is stale: run `make docs`"


def test_every_visible_command_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    for command in (
        "apply-patch",
        "patch",
        "edit",
        "apply",
        "read",
        "proposals",
        "show",
        "approve",
        "reject",
        "undo",
        "log",
        "serve",
        "hooks install",
        "schema",
        "init",
    ):
        assert f"## `gitpatch {command}`" in text
