"""The generated references: ``docs/cli.md`` from the commands' ``--help`` and
``docs/errors.md`` from the error classes of ``gitpatch.errors`` (``make docs`` runs
``python -m gitpatch.doors.cli.docs``).

Tests compare the files with ``render()`` and ``render_errors()``, so neither reference can
drift from the code.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import click

from gitpatch import errors

__all__ = ["render", "render_errors", "write", "write_errors"]

#: Help is wrapped at a fixed width so the output does not depend on the terminal.
WIDTH = 100

_HEADER = """\
# gitpatch command reference

Generated from `gitpatch --help` by `make docs` (`python -m gitpatch.doors.cli.docs`); a test fails
when this file is out of date. Exit codes: 0 success, 1 refused (the error code first on stderr,
then the message and a hint), 2 usage.
"""


def _help(path: list[str]) -> str:
    """What ``gitpatch ... --help`` prints, at a fixed width."""
    from click.testing import CliRunner

    from gitpatch.doors.cli import main

    result = CliRunner().invoke(
        main, [*path[1:], "--help"], prog_name="gitpatch", terminal_width=WIDTH
    )
    return result.stdout.rstrip("\n")


def _sections(command: click.Command, path: list[str]) -> list[str]:
    out = [f"## `{' '.join(path)}`\n\n```\n{_help(path)}\n```\n"]
    if isinstance(command, click.Group):
        ctx = click.Context(command, info_name=path[-1])
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                out.extend(_sections(sub, [*path, name]))
    return out


def render() -> str:
    """The whole reference as markdown."""
    from gitpatch.doors.cli import main

    return "\n".join([_HEADER, *_sections(main, ["gitpatch"])])


def write(target: Path) -> None:
    """Write the command reference to ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(), encoding="utf-8")


_ERRORS_HEADER = """\
# Errors

Generated from `gitpatch/errors.py` by `make docs` (`python -m gitpatch.doors.cli.docs`); a test
fails when this file is out of date. Every refusal has a stable lowercase code (the specs' codes
keep the specs' spelling), a message that says what failed, often a hint that says how to fix the
next call, and machine-readable details (paths, line numbers, versions). A refused call changes
nothing: no file, ref, note or index entry.

{media}

A malformed edit (text or edit object) is `invalid_patch`; arguments that miss or break the tool's
schema are `invalid_arguments`.
"""

#: Where a refusal reaches the caller, and how it looks there (the header's table).
_MEDIA = (
    (
        "Python",
        "a `GitpatchError` subclass with `.code`, `.message`, `.hint`, `.details`; catch a "
        "group below to catch its codes",
    ),
    ("library tools (`gitpatch.tools`)", "a result with `ok` false, `code`, and the text"),
    (
        "CLI",
        "exit status 1, `CODE: message` then `hint: ...` on stderr; with `--json`, "
        '`{"error": {"code", "message", "hint", "details"}}` (usage errors exit 2)',
    ),
    (
        "MCP (stdio and HTTP)",
        "a tool result with `isError: true`, text `CODE: message` and the hint, the code in "
        "`_meta.code`; `invalid_arguments` is JSON-RPC `invalid_params` (-32602), "
        "`internal_error` a JSON-RPC internal error with no internals",
    ),
)


def _classes() -> list[type[errors.GitpatchError]]:
    """Every public error class below the base, in the order ``errors.py`` defines them."""
    found = [getattr(errors, name) for name in errors.__all__]
    classes = [c for c in found if isinstance(c, type) and issubclass(c, errors.GitpatchError)]
    return sorted(
        (c for c in classes if c is not errors.GitpatchError),
        key=lambda c: inspect.getsourcelines(c)[1],
    )


def _summary(cls: type) -> str:
    doc = inspect.getdoc(cls) or ""
    return " ".join(doc.split("\n\n", 1)[0].split()).replace("|", "\\|")


def render_errors() -> str:
    """The error reference as markdown: one table per group of the error tree (a class with
    no code of its own, for ``except`` clauses), a leaf outside any group on its own."""
    classes = _classes()
    groups = [c for c in classes if c.__dict__.get("abstract")]
    media = "\n".join(f"| {where} | {what} |" for where, what in _MEDIA)
    table = "| where | what a refusal looks like |\n| --- | --- |\n" + media
    out = [_ERRORS_HEADER.format(media=table)]
    for top in [c for c in classes if c in groups or not set(c.__bases__) & set(groups)]:
        leaves = [c for c in classes if top in c.__bases__] if top in groups else [top]
        title = f"{top.__name__} (`except errors.{top.__name__}`)" if top in groups else top.code
        out.append(f"## {title}\n\n{_summary(top)}\n\n| code | class | when |\n| --- | --- | --- |")
        out += [f"| `{c.code}` | `{c.__name__}` | {_summary(c)} |" for c in leaves]
        out.append("")
    return "\n".join(out)


def write_errors(target: Path) -> None:
    """Write the error reference to ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_errors(), encoding="utf-8")


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/cli.md"))
    write_errors(Path(sys.argv[2]) if len(sys.argv) > 2 else Path("docs/errors.md"))
