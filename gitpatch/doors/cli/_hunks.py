"""Review at the grain of hunks: ``show``'s numbered hunks and ``amend``, a person's own edit.

Hunks are named ``N`` (their number across the proposal) or ``PATH:N`` (the N-th of that
file), as ``gitpatch show ID`` prints them; ``approve``/``reject --hunks`` take either.
``amend`` opens the proposal's files in ``$EDITOR`` in a scratch folder of their own (never the
person's checkout), or applies a unified diff given with ``--patch``.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gitpatch.doors.cli._common import Env, pass_env, read_input
from gitpatch.doors.terms import in_terms
from gitpatch.errors import InvalidArguments

if TYPE_CHECKING:
    from gitpatch.porcelain.workspace import Workspace
    from gitpatch.workspace.results import HunkInfo, ProposalDetail

__all__ = ["amend", "hunk_view"]

_VERDICT_COLOURS = {"open": "yellow", "approved": "green", "rejected": "red"}


def hunk_view(env: Env, detail: ProposalDetail, colour: object) -> str:
    """The proposal's hunks, each under a line naming it (``[2] a.py:2 open``), its verdict
    and reason when decided; ``colour`` colours the diff lines (``colour_diff``)."""
    out: list[str] = []
    path = None
    for hunk in detail.hunks:
        if hunk.path != path and hunk.kind == "change":
            out.append(env.style(f"--- a/{hunk.old_path or hunk.path}", bold=True))
            out.append(env.style(f"+++ b/{hunk.path}", bold=True))
        path = hunk.path
        out.append(_title(env, hunk))
        body = "\n".join(([hunk.header] if hunk.header else []) + hunk.lines)
        out.append(colour(env, body))  # type: ignore[operator]
    return "\n".join(out)


def _title(env: Env, hunk: HunkInfo) -> str:
    what = "" if hunk.kind == "change" else f" (whole file: {hunk.kind})"
    line = f"[{hunk.number}] {hunk.id}{what} "
    line += env.style(hunk.verdict, fg=_VERDICT_COLOURS.get(hunk.verdict, "red"))
    if hunk.verdict != "open" and hunk.by:
        line += f" by {hunk.by}" + (f" at {hunk.at}" if hunk.at else "")
    if hunk.reason:
        line += f": {hunk.reason}"
    return env.style("#", fg="cyan") + " " + line


@click.command("amend")
@click.argument("id")
@click.option(
    "--patch",
    "patch_file",
    default=None,
    metavar="FILE",
    help="A unified diff against the proposal's version (- for stdin) instead of $EDITOR.",
)
@click.option("--by", default=None, help="Who edits (default: git config user.name/email).")
@pass_env
def amend(env: Env, id: str, patch_file: str | None, by: str | None) -> None:
    """Edit a proposal before approving it: its files open in $EDITOR (in a scratch folder,
    never your checkout), or a diff from --patch applies; the result is a new version of the
    same proposal, and the agent is told which lines you changed."""
    ws = env.workspace("review")
    who = by or _person(ws)
    if patch_file is not None:
        result = ws.amend(id, by=who, patch=read_input(patch_file, "diff"))
    else:
        result = ws.amend(id, by=who, files=_edited(ws, id))
    env.emit(result, in_terms(result.message, "cli"))


def _person(ws: Workspace) -> str:
    sig = ws.plumbing.store.signature()
    return f"{sig.name} <{sig.email}>"


def _edited(ws: Workspace, id: str) -> dict[str, bytes | None]:
    """The proposal's files after the person's editor ran on copies of them."""
    files = ws.plumbing.proposal_files(id)
    if not files:
        raise InvalidArguments(
            f"proposal {id} adds or changes no file to edit (it only deletes)",
            hint="Approve or reject it, or pass --patch.",
        )
    with tempfile.TemporaryDirectory(prefix="gitpatch-amend-") as scratch:
        root = Path(scratch)
        for path, data in files.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(data)
        editor = _editor(ws)
        # as git runs its editor: through the shell, with the files as arguments
        paths = [str(root / path) for path in files]
        done = subprocess.run(["sh", "-c", f'{editor} "$@"', editor, *paths], check=False)
        if done.returncode != 0:
            raise InvalidArguments(
                f"the editor ({editor}) exited with status {done.returncode}; nothing changed",
                hint="Save and quit the editor normally, or pass --patch FILE.",
            )
        return {
            path: (root / path).read_bytes() if (root / path).exists() else None for path in files
        }


def _editor(ws: Workspace) -> str:
    for name in ("GIT_EDITOR", "VISUAL", "EDITOR"):
        if os.environ.get(name):
            return os.environ[name]
    return ws.plumbing.store.config_get("core.editor") or shlex.quote("vi")
