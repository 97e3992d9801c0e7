"""The workbench commands: checkpoint, run, sessions, session start / end / path.

A session is named with ``--session NAME``, or found from the current directory when it is
inside the session's own worktree (where an agent's shell runs). ``checkpoint --hook-input``
reads a harness hook's JSON on stdin (Claude Code's PostToolUse: the command from
``tool_input.command``, the directory from ``cwd``) and answers in the hook's JSON.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gitpatch.doors.cli._common import Env, pass_env
from gitpatch.errors import InvalidArguments

if TYPE_CHECKING:
    from gitpatch.porcelain.workspace import Workspace

__all__ = ["checkpoint", "run_command", "session", "sessions"]

_SESSION = click.option(
    "--session",
    default=None,
    metavar="NAME",
    help="The session (default: the one whose worktree the current directory is in).",
)


def _open(env: Env, name: str | None, directory: Path | None = None) -> Workspace:
    from gitpatch.porcelain.opening import open_session

    return open_session(directory or env.directory, name)


def _hook_input(event: str | None) -> tuple[str | None, Path | None]:
    """(command, cwd) from a hook's JSON: ``event`` (Codex's ``notify`` passes it as the last
    argument), else stdin (Claude Code's hooks: ``tool_input.command``, ``cwd``)."""
    text = event if event is not None else sys.stdin.read()
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise InvalidArguments(
            f"the hook input on stdin is not JSON: {exc.msg} at line {exc.lineno}",
            hint="Use --hook-input only as a harness hook's command (it pipes JSON in).",
        ) from exc
    if not isinstance(data, dict):
        raise InvalidArguments(
            "the hook input on stdin is not a JSON object",
            hint="Use --hook-input only as a harness hook's command (it pipes JSON in).",
        )
    tool_input = data.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    cwd = data.get("cwd")
    return (
        command if isinstance(command, str) else None,
        Path(cwd) if isinstance(cwd, str) and cwd else None,
    )


def _checkpoint_text(made: str, message: str) -> str:
    return f"{made}\n{message}" if made else message


@click.command("checkpoint")
@_SESSION
@click.option("--command", "text", default=None, metavar="TEXT", help="The command that ran.")
@click.option(
    "--hook-input",
    is_flag=True,
    help="Read a harness hook's JSON on stdin (Claude Code PostToolUse), or from EVENT "
    "(Codex notify), and answer in JSON.",
)
@click.argument("event", required=False)
@pass_env
def checkpoint(
    env: Env, session: str | None, text: str | None, hook_input: bool, event: str | None
) -> None:
    """Record what changed in the session's worktree outside the edit tools as one proposal
    of the session (nothing changed: no proposal)."""
    directory = None
    if event is not None and not hook_input:
        raise InvalidArguments(
            "an EVENT argument is read only with --hook-input",
            hint="Use --command TEXT to name the command, or --hook-input EVENT in a hook.",
        )
    if hook_input:
        found, directory = _hook_input(event)
        text = text or found
    result = _open(env, session, directory).checkpoint(text)
    if hook_input:
        answer: dict[str, Any] = {
            "hookSpecificOutput": {
                "hookEventName": "PostToolUse",
                "additionalContext": _checkpoint_text(result.made, result.message),
            }
        }
        env.echo(json.dumps(answer, ensure_ascii=False))
        return
    env.emit(result, _checkpoint_text(result.made, result.message))


@click.command(
    "run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
)
@_SESSION
@click.argument("argv", nargs=-1, type=click.UNPROCESSED, required=True)
@click.pass_context
def run_command(ctx: click.Context, session: str | None, argv: tuple[str, ...]) -> None:
    """Run CMD in the session's worktree (its output and exit status pass through), then
    checkpoint what it changed: gitpatch run [--session NAME] -- CMD..."""
    env = ctx.find_object(Env)
    assert env is not None
    ran = _open(env, session).run(list(argv))
    if ran.made:
        click.echo(ran.made, err=True)
    click.echo(ran.checkpoint.message, err=True)
    ctx.exit(ran.exit_code if ran.exit_code is not None else 1)


@click.command("sessions")
@pass_env
def sessions(env: Env) -> None:
    """List sessions: name, mode, target, worktree, open proposals, last activity."""
    items = env.workspace("review").sessions()
    rows = [
        f"{s.name}\t{s.mode}\t{s.target.removeprefix('refs/heads/')}\t{s.worktree or '-'}\t"
        f"{s.open_proposals} open\t{s.last_activity or '-'}"
        for s in items
    ]
    env.emit({"sessions": items}, "\n".join(rows) or "No sessions.")


@click.group("session")
def session() -> None:
    """Start, locate or end one session."""


@session.command("start")
@click.argument("name")
@click.option(
    "--mode",
    type=click.Choice(["auto", "review"]),
    default="review",
    help="review (default): each edit waits for a person; auto: edits land on the session branch.",
)
@pass_env
def start(env: Env, name: str, mode: str) -> None:
    """Make session NAME's worktree and print it with the MCP config to use there."""
    from gitpatch.porcelain.opening import open_session

    ws = open_session(env.directory, name, "auto" if mode == "auto" else "review")
    bench = ws.plumbing.session_worktree()
    config = {
        "mcpServers": {
            "gitpatch": {
                "command": "gitpatch",
                "args": ["-C", str(bench.path), "serve", "--session", name],
            }
        }
    }
    lines = [f"worktree: {bench.path}"]
    if bench.made:
        lines.append(bench.made)
    lines += [
        "Start the agent there, with this MCP config (e.g. .mcp.json):",
        json.dumps(config, indent=2),
        f"Commands: gitpatch run -- CMD (in {shlex.quote(str(bench.path))}), or a hook running "
        "gitpatch checkpoint --hook-input (docs/workbench.md).",
    ]
    env.emit({"worktree": str(bench.path), "made": bench.made, "mcp": config}, "\n".join(lines))


@session.command("path")
@click.argument("name")
@pass_env
def path(env: Env, name: str) -> None:
    """Print session NAME's worktree (made first when it has none)."""
    bench = _open(env, name).plumbing.session_worktree()
    if bench.made:
        click.echo(bench.made, err=True)
    env.emit({"worktree": str(bench.path), "made": bench.made}, str(bench.path))


@session.command("end")
@click.argument("name")
@click.option(
    "--force",
    is_flag=True,
    help="Also remove the files git ignores in the worktree (build output, .venv/).",
)
@pass_env
def end(env: Env, name: str, force: bool) -> None:
    """Remove session NAME's worktree and branch once nothing of it is open.

    Changes no checkpoint recorded refuse it, even with --force; files git ignores there
    refuse it unless --force, which removes them with the worktree and names them."""
    from gitpatch.porcelain.opening import caller_inside, session_in

    if session_in(env.directory) == name:  # whatever its mode: the folder the call is in goes
        where = env.root()
        raise InvalidArguments(
            f"{where} is the worktree of session {name!r}, which ending the session removes",
            hint=f"Run it from your own checkout (cd there, or gitpatch -C DIR session end "
            f"{name} from a folder outside this worktree). Nothing was removed.",
            details={"session": name, "worktree": str(where)},
        )
    caller = caller_inside(env.directory, name)
    if caller is not None:
        here, where = caller
        raise InvalidArguments(
            f"this command runs in {here}, inside the worktree of session {name!r}, which "
            "ending the session removes",
            hint=f"cd to your own checkout first, then run gitpatch session end {name} there. "
            "Nothing was removed.",
            details={"session": name, "worktree": str(where), "cwd": str(here)},
        )
    env.emit({"ended": name}, env.workspace("review").end_session(name, force=force))
