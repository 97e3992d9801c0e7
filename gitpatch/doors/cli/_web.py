"""``gitpatch web``: the local review page (``gitpatch.doors.web.serve``) from the command line."""

from __future__ import annotations

from pathlib import Path

import click

from gitpatch.doors.cli._common import Env, pass_env

__all__ = ["web"]


@click.command("web")
@click.option(
    "-C",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The repository to review (default: gitpatch's -C, else the current directory).",
)
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Port (0: any free one).")
@click.option("--no-browser", is_flag=True, help="Print the address only; open no browser.")
@pass_env
def web(env: Env, directory: Path | None, port: int, no_browser: bool) -> None:
    """Review proposals in a browser: serve the review page on 127.0.0.1 until Ctrl-C.

    The first line printed is the page's address with its session token; only that address
    (127.0.0.1 or localhost, this port) and that token are accepted.
    """
    from gitpatch.doors.web import serve

    if directory is not None:
        if not directory.is_dir():
            raise click.BadParameter(f"{directory} is not a directory", param_hint="-C")
        env = Env(directory=directory, json=env.json, color=env.color)
    serve(env.directory, port=port, open_browser=not no_browser)
