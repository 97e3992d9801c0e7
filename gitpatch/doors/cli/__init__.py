"""The ``gitpatch`` command: edits as agents make them, and review for people, like git.

Exit codes: 0 success, 1 refused (stderr starts with the error code, then the message and the
hint), 2 usage (click's own errors). ``GitpatchGroup.invoke`` is the ONE place where errors
become exit codes; commands just raise.

Commands live in ``_edit`` (apply-patch, patch, edit, apply, read), ``_review``
(proposals, show, approve, reject, comment, undo, log) and ``_admin`` (serve, hooks, schema, init).
Adding one is a ``@click.command`` taking ``env: Env`` via ``pass_env``, registered with
``main.add_command`` below.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import click

from gitpatch import __version__
from gitpatch.doors.cli._admin import hooks, init, schema, serve
from gitpatch.doors.cli._common import Env, wants_color
from gitpatch.doors.cli._edit import apply, apply_patch, edit, patch, read
from gitpatch.doors.cli._hosted import credentials, push
from gitpatch.doors.cli._review import approve, comment, log, proposals, reject, show, undo
from gitpatch.doors.cli._web import web
from gitpatch.errors import GitpatchError

__all__ = ["EXIT_REFUSED", "EXIT_USAGE", "GitpatchGroup", "main"]

EXIT_REFUSED = 1
EXIT_USAGE = 2

_log = logging.getLogger("gitpatch.doors.cli")


def report_error(exc: GitpatchError, as_json: bool) -> None:
    """An error on stderr: its code first, then the message and the hint (or JSON)."""
    if as_json:
        import json

        click.echo(json.dumps({"error": exc.to_dict()}, ensure_ascii=False), err=True)
        return
    click.echo(f"{exc.code}: {exc.message}", err=True)
    if exc.hint:
        click.echo(f"hint: {exc.hint}", err=True)


class GitpatchGroup(click.Group):
    """A click group whose commands' errors map to exit codes here and nowhere else."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; ``GitpatchError`` exits 1 (code first on stderr), a bug exits 1
        with ``internal_error`` and no internals (set ``GITPATCH_DEBUG=1`` to see them)."""
        try:
            return super().invoke(ctx)
        except GitpatchError as exc:
            env = ctx.find_object(Env)
            report_error(exc, bool(env and env.json))
            ctx.exit(EXIT_REFUSED)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except (KeyboardInterrupt, BrokenPipeError):
            raise
        except Exception as exc:
            if os.environ.get("GITPATCH_DEBUG"):
                raise
            _log.debug("unexpected error", exc_info=exc)
            env = ctx.find_object(Env)
            from gitpatch.errors import InternalError

            report_error(
                InternalError(
                    "an unexpected error occurred; nothing was changed unless the output "
                    "above says so",
                    hint="Run again with GITPATCH_DEBUG=1 to see the traceback, and report it.",
                ),
                bool(env and env.json),
            )
            ctx.exit(EXIT_REFUSED)


@click.group(
    cls=GitpatchGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "-C",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run as if gitpatch was started in DIR (like git -C).",
)
@click.option("--json", "json_output", is_flag=True, help="Machine-readable JSON output.")
@click.version_option(__version__, "--version", prog_name="gitpatch")
@click.pass_context
def main(ctx: click.Context, directory: Path | None, json_output: bool) -> None:
    """gitpatch: transactional, reviewable edits for coding agents, in plain git.

    Agents edit through `gitpatch serve` (MCP) or the edit commands; people review with
    proposals, show, approve and reject. Colour only on a terminal (never with --json or
    NO_COLOR). Exit codes: 0 success, 1 refused (the error code first on stderr), 2 usage.
    """
    where = directory if directory is not None else Path.cwd()
    if directory is not None and not directory.is_dir():
        raise click.BadParameter(f"{directory} is not a directory", param_hint="-C")
    ctx.obj = Env(directory=where, json=json_output, color=wants_color(json_output))


for _command in (
    apply_patch,
    patch,
    edit,
    apply,
    read,
    proposals,
    show,
    approve,
    reject,
    comment,
    undo,
    log,
    serve,
    hooks,
    schema,
    init,
    credentials,
    push,
    web,
):
    main.add_command(_command)


def run() -> None:
    """Entry point for ``python -m gitpatch``."""
    main(prog_name="gitpatch")


if __name__ == "__main__":  # pragma: no cover
    run()
