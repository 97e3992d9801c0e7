"""Setup commands: serve (MCP over stdio), hooks install, schema, init. (The installed hook
scripts run ``python -m gitpatch.doors.hooks``, not this CLI: it starts faster.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Literal

import click

from gitpatch.doors.cli._common import Env, pass_env
from gitpatch.errors import InvalidArguments, RepositoryError

__all__ = ["hooks", "init", "install_hooks", "schema", "serve"]


@click.command("serve")
@click.option(
    "--mode",
    type=click.Choice(["auto", "review"]),
    default=None,
    help="auto: edits land at once; review: each waits for approval (default: config).",
)
@click.option(
    "--session",
    default=None,
    metavar="NAME",
    help="The agent's session (kept in git: a restarted agent resumes it by name; in auto mode "
    "on a protected branch, in its own worktree). Default: the MCP client's name, made unique "
    "per live connection, else 'agent'.",
)
@click.option(
    "--max-file-bytes",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Over stdio: the largest file an edit may write, in bytes (larger results are refused "
    "with payload_too_large). Default: 104857600 (100 MiB, GitHub's per-file limit).",
)
@click.option(
    "--http",
    "listen",
    default=None,
    metavar="HOST:PORT",
    help="Serve the resource service over streamable HTTP at /mcp instead of stdio.",
)
@click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="With --http: the directory holding the spaces.",
)
@click.option(
    "--credentials",
    "creds",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --http: the credentials TOML file.",
)
@click.option(
    "--allowed-host",
    "allowed",
    multiple=True,
    metavar="NAME[:PORT]",
    help="With --http: a Host name clients may use besides the loopback names and the bound "
    "address (repeatable; Host and Origin are checked on every bind).",
)
@click.option(
    "--workers",
    type=int,
    default=None,
    metavar="N",
    help="With --http: serve from N processes (default 1). With more than one, requests are "
    "stateless (no MCP session is kept, so no session limit applies) and per-credential call "
    "limits count per process.",
)
@click.option(
    "--routed",
    is_flag=True,
    default=False,
    help="With --http: this host keeps one shard of the spaces behind a router; serve only "
    "each space's own URL, /s/users/<user>/mcp or /s/teams/<team>/mcp (plain /mcp is 404).",
)
@click.option(
    "--header-timeout",
    type=float,
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="With --http: a connection that has not sent a whole request head within this time "
    "is closed.",
)
@click.option(
    "--max-connections-per-address",
    "per_address",
    type=int,
    default=256,
    show_default=True,
    metavar="N",
    help="With --http: at most N connections per client address (past it the oldest idle one "
    "is closed). Behind a router every client has the router's address: raise it.",
)
@click.option(
    "--push",
    default=None,
    metavar="REMOTE",
    help="With --http: push proposal branches and notes to this git remote (in spaces that "
    "have it) after every change.",
)
@click.option(
    "--allow-run",
    is_flag=True,
    help="Also serve run_command: the agent runs shell commands in its session's worktree "
    "(each checkpointed for review). Not with --http.",
)
@click.option(
    "--cpu-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Without --http: the CPU seconds each tool call may use (default: no limit); a call "
    "past it answers budget_exceeded and changes nothing. With --http each credential's "
    "budget is set in the credentials file.",
)
@click.option(
    "--wall-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Without --http: the wall seconds each tool call may take (default: no limit).",
)
@pass_env
def serve(
    env: Env,
    mode: str | None,
    session: str | None,
    max_file_bytes: int | None,
    allow_run: bool,
    listen: str | None,
    data: Path | None,
    creds: Path | None,
    allowed: tuple[str, ...],
    workers: int | None,
    routed: bool,
    header_timeout: float,
    per_address: int,
    push: str | None,
    cpu_seconds: float | None,
    wall_seconds: float | None,
) -> None:
    """Serve the MCP tools over stdio for the repository (patch, apply_patch, patch_resource,
    read_file, list_proposals, show_proposal, checkpoint; run_command with --allow-run; no
    approve or reject); with --http, the resource service over spaces
    (docs/hosted-service.md)."""
    if listen is not None and (cpu_seconds, wall_seconds) != (None, None):
        raise InvalidArguments(
            "--cpu-seconds and --wall-seconds are for stdio; with --http each credential "
            "has its own budget",
            hint="Set cpu_seconds and wall_seconds in the credential's block of the "
            "credentials file (docs/hosted-service.md), and drop these options.",
        )
    if listen is not None:
        from gitpatch.doors.cli._hosted import run_http

        if allow_run:
            raise InvalidArguments(
                "--allow-run is for a local agent's stdio server, never the hosted service",
                hint="Drop --allow-run, or serve one repository over stdio without --http.",
            )

        run_http(listen, data, creds, push, allowed, workers, routed, header_timeout, per_address)
        return
    env.root()  # refuse a directory that is not a repository before the client connects
    from gitpatch.doors.mcp import serve_stdio

    if session is not None:
        from gitpatch.workspace.sessions import check_session_name

        check_session_name(session)
    serve_stdio(
        str(env.directory),
        mode,
        session,
        max_file_bytes,
        (cpu_seconds, wall_seconds),
        allow_run=allow_run,
    )


def _hooks_dir(directory: Path) -> Path:
    out = subprocess.run(
        ["git", "rev-parse", "--path-format=absolute", "--git-path", "hooks"],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RepositoryError(
            f"not a git repository: {directory}",
            hint="Run it inside a repository, or pass -C DIR.",
            details={"path": str(directory)},
        )
    return Path(out.stdout.strip())


def _plan(where: Path, name: str, script: str, force: bool) -> tuple[str, bool]:
    """What installing hook ``name`` does: (description, chain the existing hook first)."""
    from gitpatch.doors import hooks as shims

    target = where / name
    if not target.exists():
        return "installed", False
    current = target.read_text(encoding="utf-8", errors="replace")
    if current == script:
        return "already installed", False
    if shims.MARKER in current:
        return "updated", False
    if force:
        return "replaced (--force)", False
    chained = where / f"{name}.local"
    if chained.exists():
        raise InvalidArguments(
            f"{target} is not gitpatch's and {chained.name} already exists",
            hint="Merge them by hand, or pass --force to replace the hook. Nothing was changed.",
            details={"hook": str(target)},
        )
    return f"installed (the existing hook now runs first as {chained.name})", True


def install_hooks(
    directory: Path, *, force: bool = False, into_tracked: bool = False, local: bool = False
) -> list[str]:
    """Install the hook shims in the repository's hooks directory (pre-receive only in a bare
    repository); returns what was done.

    Idempotent. A foreign hook is kept as ``NAME.local`` and chained (run first) unless
    ``force``, which replaces it. Every hook is checked before any is written, so a refusal
    changes nothing. A ``core.hooksPath`` folder git tracks is refused unless ``into_tracked``;
    ``local`` installs into the repository's own hooks folder instead (``_hookplace``).
    """
    from gitpatch.doors import hooks as shims
    from gitpatch.doors.cli import _hookplace

    where = _hooks_dir(directory)
    from gitpatch.porcelain.opening import working_root

    root = working_root(directory)
    shared = _hookplace.hooks_path(directory) if local else None
    if local:
        where = _hookplace.local_hooks_dir(directory)
    # A server (bare) needs pre-receive only: it sees the whole push, notes included.
    names = ("pre-receive",) if root is None else shims.HOOKS
    system = shims.git_system_config()
    scripts = {name: shims.hook_script(name, sys.executable, system) for name in names}
    plans = {name: _plan(where, name, script, force) for name, script in scripts.items()}
    if not into_tracked:
        writes = [n for n, (action, _c) in plans.items() if action != "already installed"]
        writes += [f"{n}.local" for n, (_a, chain) in plans.items() if chain]
        _hookplace.refuse_visible(root, where, writes)
    where.mkdir(parents=True, exist_ok=True)
    for name, (action, chain) in plans.items():
        target = where / name
        if action == "already installed":
            continue
        if chain:
            target.rename(where / f"{name}.local")
        target.write_text(scripts[name], encoding="utf-8")
        os.chmod(target, 0o755)
    done = [f"{name}: {action}" for name, (action, _chain) in plans.items()]
    if shared is not None:
        done.append(
            f"core.hooksPath is {shared}, so git runs the hooks there, not these: "
            "add each line below to the top of the hook of that name there (it does "
            "nothing on clones without gitpatch's hooks)"
        )
        done += [f"{name}: {_hookplace.call_line(where / name)}" for name in plans]
    return done


@click.group("hooks")
def hooks() -> None:
    """Git hooks that keep unapproved agent commits off protected branches."""


@hooks.command("install")
@click.option("--force", is_flag=True, help="Replace foreign hooks instead of chaining them.")
@click.option(
    "--into-tracked",
    is_flag=True,
    help="Write into a core.hooksPath folder git tracks (husky) anyway.",
)
@click.option(
    "--local",
    is_flag=True,
    help="Install into the repository's own .git/hooks; print the line that calls each.",
)
@pass_env
def hooks_install(env: Env, force: bool, into_tracked: bool, local: bool) -> None:
    """Install pre-receive, reference-transaction and pre-push (idempotent; chains foreign
    hooks, keeping them as NAME.local; refuses a core.hooksPath folder git tracks)."""
    done = install_hooks(env.directory, force=force, into_tracked=into_tracked, local=local)
    env.emit({"hooks": done}, "\n".join(done))


@click.command("schema")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["mcp", "openai", "anthropic"]),
    default="mcp",
    show_default=True,
    help="The harness the definitions are for.",
)
def schema(fmt: Literal["mcp", "openai", "anthropic"]) -> None:
    """Print the agent tool definitions with their JSON Schemas, ready to paste."""
    from gitpatch.tools import definitions as tooldefs

    click.echo(json.dumps(tooldefs.definitions(fmt), indent=2, ensure_ascii=False))


@click.command("init")
@click.option("--force", is_flag=True, help="Overwrite an existing config file.")
@pass_env
def init(env: Env, force: bool) -> None:
    """Write .gitpatch.toml with the defaults, commented (protected branches, mode, policy)."""
    from gitpatch.workspace import config

    root = env.root()
    if root is None:
        raise RepositoryError(
            "a bare repository has no working tree for .gitpatch.toml",
            hint="Use git config gitpatch.protected on a bare remote.",
        )
    target = root / config.FILENAME
    if target.exists() and not force:
        raise InvalidArguments(
            f"{target} already exists",
            hint="Pass --force to overwrite it with the defaults.",
            details={"file": str(target)},
        )
    target.write_text(config.TEMPLATE, encoding="utf-8")
    env.emit({"written": str(target)}, f"Wrote {target}")
