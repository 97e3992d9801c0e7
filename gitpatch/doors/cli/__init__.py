"""The ``gitpatch`` command: edits as agents make them, and review for people, like git.

Exit codes: 0 success, 1 refused (stderr starts with the error code, then the message and the
hint), 2 usage (click's own errors). ``GitpatchGroup.invoke`` is the ONE place where errors
become exit codes; commands just raise.

Commands live in ``_edit`` (apply-patch, patch, edit, apply, read), ``_review``
(proposals, show, approve, reject, comment, undo, log), ``_admin`` (serve, hooks, schema, init)
and ``_workbench`` (checkpoint, run, sessions, session start / path / end).
Adding one is a ``@click.command`` taking ``env: Env`` via ``pass_env``, registered with
``main.add_command`` below.
"""

from __future__ import annotations

import difflib
import logging
import os
from pathlib import Path
from typing import Any

import click

from gitpatch import __version__
from gitpatch.doors.cli._admin import hooks, init, schema, serve
from gitpatch.doors.cli._checks import check
from gitpatch.doors.cli._common import Env, wants_color
from gitpatch.doors.cli._edit import apply, apply_patch, edit, patch, read
from gitpatch.doors.cli._hosted import credentials, push
from gitpatch.doors.cli._hunks import amend
from gitpatch.doors.cli._review import (
    approve,
    comment,
    log,
    proposals,
    reject,
    saves,
    show,
    undo,
)
from gitpatch.doors.cli._web import web
from gitpatch.doors.cli._workbench import checkpoint, run_command, session, sessions
from gitpatch.doors.terms import in_terms
from gitpatch.errors import GitpatchError

__all__ = ["EXIT_REFUSED", "EXIT_USAGE", "GitpatchGroup", "main"]

EXIT_REFUSED = 1
EXIT_USAGE = 2

_log = logging.getLogger("gitpatch.doors.cli")


def report_error(exc: GitpatchError, as_json: bool) -> None:
    """An error on stderr: its code first, then the message and the hint (or JSON)."""
    data = exc.to_dict()
    for key in ("message", "hint"):  # in the CLI's own terms (gitpatch.doors.terms)
        if isinstance(data.get(key), str):
            data[key] = in_terms(data[key], "cli")
    if as_json:
        import json

        click.echo(json.dumps({"error": data}, ensure_ascii=False), err=True)
        return
    click.echo(f"{exc.code}: {data['message']}", err=True)
    if data.get("hint"):
        click.echo(f"hint: {data['hint']}", err=True)


#: Words people try for a command, and the command that does it.
_WORDS = {
    "list": "proposals",
    "ls": "proposals",
    "status": "proposals",
    "diff": "show",
    "accept": "approve",
    "merge": "approve",
    "revert": "undo",
    "history": "log",
}


class GitpatchGroup(click.Group):
    """A click group whose commands' errors map to exit codes here and nowhere else."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """An unknown command is a usage error naming the command that does it, if any."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1)
            wanted = _WORDS.get(name.lower()) or (close[0] if close else None)
            if wanted is not None:
                ctx.fail(
                    f"No such command {name!r}. Did you mean {wanted!r}? "
                    f"(see gitpatch {wanted} --help)"
                )
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; ``GitpatchError`` exits 1 (code first on stderr), a bug exits 1
        with ``internal_error`` and no internals (set ``GITPATCH_DEBUG=1`` to see them). A
        person's save the command's lands set aside is said on stderr, whatever the outcome."""
        try:
            return self._run(ctx)
        finally:
            env = ctx.find_object(Env)
            for line in env.set_aside() if env is not None else ():
                click.echo(f"notice: {line}", err=True)

    def _run(self, ctx: click.Context) -> Any:
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
    NO_COLOR). Exit codes: 0 success, 1 refused (the error code first on stderr), 2 usage (an
    unknown command names the one meant: list is proposals).
    """
    where = directory if directory is not None else Path.cwd()
    if directory is not None and not directory.is_dir():
        raise click.BadParameter(f"{directory} is not a directory", param_hint="-C")
    env = Env(directory=where, json=json_output, color=wants_color(json_output))
    if os.environ.get("GIT_DIR"):
        try:
            env = _git_environment(env, os.environ["GIT_DIR"], os.environ.get("GIT_WORK_TREE"))
        except GitpatchError as exc:
            report_error(exc, json_output)
            ctx.exit(1)
    ctx.obj = env


def _git_environment(env: Env, git_dir: str, work_tree: str | None) -> Env:
    """``GIT_DIR`` (and ``GIT_WORK_TREE``) as git reads them, relative to ``-C``'s directory:
    the repository is opened at that git directory. Its working tree must be the one git
    would use (``GIT_WORK_TREE``, else ``core.worktree``, else the current directory);
    where libgit2 would pick another one, ``repository_error`` (reason ``work_tree``)."""
    from gitpatch.errors import RepositoryError
    from gitpatch.porcelain.opening import worktree_setting

    here = env.directory
    gitdir = (here / git_dir).resolve()
    root, configured = worktree_setting(gitdir)
    if work_tree:
        wanted: Path | None = (here / work_tree).resolve()
    elif configured or root is None:
        wanted = root
    else:
        wanted = here.resolve()
    if wanted != root:
        raise RepositoryError(
            f"GIT_DIR={git_dir} names a repository whose working tree is "
            f"{root or 'none (bare)'}, but git would use {wanted} here",
            hint=f"Set it for good with `git --git-dir={gitdir} config core.worktree {wanted}`"
            ", or run gitpatch with -C in the working tree. Nothing was changed.",
            details={"reason": "work_tree", "git_dir": str(gitdir), "work_tree": str(wanted)},
        )
    return Env(directory=gitdir, json=env.json, color=env.color, here=here)


for _command in (
    apply_patch,
    patch,
    edit,
    apply,
    read,
    proposals,
    show,
    approve,
    check,
    reject,
    amend,
    comment,
    undo,
    log,
    saves,
    serve,
    hooks,
    schema,
    init,
    credentials,
    push,
    web,
    checkpoint,
    run_command,
    sessions,
    session,
):
    main.add_command(_command)


def run() -> None:
    """Entry point for ``python -m gitpatch``."""
    main(prog_name="gitpatch")


if __name__ == "__main__":  # pragma: no cover
    run()
