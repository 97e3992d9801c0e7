"""Service commands: ``serve --http`` (started from ``serve``), ``credentials add``, ``push``.

``gitpatch serve --http HOST:PORT --data DIR --credentials FILE`` serves the resource tools
over MCP streamable HTTP at ``/mcp`` (``gitpatch.doors.mcp.serve_http``); ``gitpatch
credentials add`` writes a credential and prints its token once.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from gitpatch.doors.cli._common import Env, pass_env
from gitpatch.errors import InvalidArguments

__all__ = ["credentials", "push", "run_http"]


def run_http(
    listen: str,
    data: Path | None,
    creds: Path | None,
    push: str | None,
    allowed: tuple[str, ...] = (),
    workers: int | None = None,
    routed: bool = False,
    header_timeout: float = 10.0,
    per_address: int = 256,
) -> None:
    """Start the HTTP service (blocks until interrupted); prints the URL once listening.
    ``allowed``: more Host names the service answers to (the loopback names and the bound
    address always are); ``workers``: processes (None: one, which keeps MCP sessions);
    ``routed``: one shard of several (only ``/s/<space>/mcp`` URLs); ``header_timeout`` and
    ``per_address``: see docs/hosted-service.md, Connections."""
    if data is None or creds is None:
        raise InvalidArguments(
            "serve --http needs --data DIR and --credentials FILE",
            hint="Example: gitpatch serve --http 127.0.0.1:8765 --data spaces "
            "--credentials credentials.toml",
        )
    if not creds.is_file():
        raise InvalidArguments(
            f"credentials file {creds} does not exist",
            hint="Create one with: gitpatch credentials add --file FILE --user NAME",
            details={"file": str(creds)},
        )
    from gitpatch.doors.hosted.credentials import require_private
    from gitpatch.doors.hosted.listen import parse_listen
    from gitpatch.doors.mcp import serve_http

    host, port = parse_listen(listen)
    require_private(creds, "credentials file")
    require_private(data, "data directory")
    # every file and directory the service creates (repositories, objects, refs) is its
    # owner's alone from its first byte
    os.umask(0o077)
    from gitpatch.doors.hosted.remote import push_after

    def ready(url: str) -> None:
        click.echo(f"gitpatch service listening on {url}", err=True)
        sys.stderr.flush()

    hook = push_after(push) if push else None
    count = workers if workers is not None else 1
    if count < 1:
        raise InvalidArguments(
            f"--workers {count} is not a number of processes",
            hint="Pass --workers 1 or more (default 1: stateful sessions).",
        )
    if not header_timeout > 0 or per_address < 1:
        raise InvalidArguments(
            f"--header-timeout {header_timeout} and --max-connections-per-address "
            f"{per_address} must be positive",
            hint="Example: --header-timeout 10 --max-connections-per-address 256.",
        )
    serve_http(
        data,
        creds,
        host,
        port,
        on_change=hook,
        ready=ready,
        allowed=allowed,
        workers=count,
        routed=routed,
        header_timeout=header_timeout,
        per_address=per_address,
    )


@click.group("credentials")
def credentials() -> None:
    """Manage the bearer-token credentials of `serve --http`."""


@credentials.command("add")
@click.option(
    "--file",
    "path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The credentials TOML file (created if missing).",
)
@click.option("--user", default=None, help="The user it represents (omit: organization only).")
@click.option("--organization", default=None, help="The organization it belongs to.")
@click.option("--team", "teams", multiple=True, help="A team bound to it (repeatable).")
@click.option("--manage", multiple=True, help="A bound team it may change (repeatable).")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    type=click.Choice(["read", "edit"]),
    help="Scopes (repeatable; default: read and edit).",
)
@pass_env
def add(
    env: Env,
    path: Path,
    user: str | None,
    organization: str | None,
    teams: tuple[str, ...],
    manage: tuple[str, ...],
    scopes: tuple[str, ...],
) -> None:
    """Add a credential and print its bearer token (shown once; only its hash is stored)."""
    from gitpatch.doors.hosted.credentials import add_credential

    token, cred = add_credential(
        path,
        user=user,
        organization=organization,
        teams=teams,
        manage=manage,
        scopes=scopes or ("read", "edit"),
    )
    data = {"token": token, "token_sha256": cred.token_sha256, "file": str(path)}
    env.emit(data, token)
    if not env.json:
        env.echo("(the token is shown once; the file stores only its sha256)", err=True)


@click.command("push")
@click.option("--remote", default="origin", show_default=True, help="The git remote to push to.")
@pass_env
def push(env: Env, remote: str) -> None:
    """Push proposal branches (refs/heads/gitpatch/*) and refs/notes/gitpatch of the
    repository (a space under --data, or any repository) to a git remote, for review there.
    Target branches are never pushed: the remote's pre-receive hook guards them."""
    from gitpatch.doors.hosted.remote import push as push_refs

    sent = push_refs(env.directory, remote)
    text = f"pushed {len(sent)} refs to {remote}" if sent else "nothing to push"
    env.emit({"remote": remote, "refs": sent}, text)
