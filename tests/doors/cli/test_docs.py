"""docs/cli.md is what the commands' --help says today."""

from __future__ import annotations

from pathlib import Path

from gitpatch.doors.cli.docs import render, render_errors
from gitpatch.errors import CODES

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


ERRORS = DOC.with_name("errors.md")


def test_docs_errors_md_is_up_to_date() -> None:
    text = ERRORS.read_text(encoding="utf-8")
    assert text == render_errors(), "docs/errors.md is stale: run `make docs`"


def test_every_error_code_is_documented_once() -> None:
    text = ERRORS.read_text(encoding="utf-8")
    for code in CODES:
        assert text.count(f"| `{code}` |") == 1, code
