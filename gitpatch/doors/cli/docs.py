"""``docs/cli.md``, generated from the commands' ``--help``: ``python -m gitpatch.doors.cli.docs``.

A test compares the file with ``render()``, so the reference cannot drift from the code.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

__all__ = ["render", "write"]

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
    """Write the reference to ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(), encoding="utf-8")


if __name__ == "__main__":
    write(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/cli.md"))
