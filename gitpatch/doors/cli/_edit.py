"""Edit commands, as agents make them: apply-patch, patch, edit, apply, and read.

Each edit command takes ``--review`` (propose on ``gitpatch/<id>`` only) and ``--dry-run``
(print the diff the edit would make and change nothing: no commit, ref, note or file).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from gitpatch.core.spliced import as_bytes
from gitpatch.doors.cli._common import Env, pass_env, read_input
from gitpatch.doors.terms import in_terms
from gitpatch.errors import InvalidArguments

if TYPE_CHECKING:
    from gitpatch.core.model import Proposal
    from gitpatch.porcelain.workspace import Workspace
    from gitpatch.workspace.results import ProposalResult

__all__ = ["apply", "apply_patch", "edit", "patch", "read"]

#: The tool name each detected language is recorded under (as ``Workspace.apply`` does).
_TOOL_OF = {"apply_patch": "apply_patch", "unified_diff": "apply_diff", "search_replace": "patch"}


def _options(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--review`` and ``--dry-run``, shared by every edit command."""
    func = click.option(
        "--dry-run", is_flag=True, help="Print the diff the edit would make; change nothing."
    )(func)
    return click.option(
        "--review", is_flag=True, help="Only propose: the change waits on gitpatch/<id>."
    )(func)


def _parse(fmt: str, text: str, path: str | None = None) -> Proposal:
    from gitpatch.formats import apply_patch as ap
    from gitpatch.formats import search_replace, unified_diff

    parsers: dict[str, Callable[[], Proposal]] = {
        "apply_patch": lambda: ap.parse(text),
        "search_replace": lambda: search_replace.parse(text, path),
        "unified_diff": lambda: unified_diff.parse(text),
    }
    return parsers[fmt]()


def _run(env: Env, proposal: Proposal, review: bool, dry_run: bool, **kw: Any) -> None:
    """Land (or propose, or only diff) one proposal and print its result."""
    ws = env.workspace("review" if review else None)
    if dry_run:
        _dry_run(env, ws, proposal)
        return
    result = ws.propose(proposal, **kw)
    _print_result(env, result)


def _print_result(env: Env, result: ProposalResult) -> None:
    text = in_terms(result.message, "cli")  # the library's Python words as commands
    if not env.json:
        text += f"\n{env.style('version', fg='yellow')} {result.version}"
        if result.mode == "review":
            text += f"\nReview: gitpatch show {result.proposal_id}"
    env.emit(result, text)


def _dry_run(env: Env, ws: Workspace, proposal: Proposal) -> None:
    """The unified diff ``proposal`` would make to what is on disk (or on the branch)."""
    found = ws.plumbing.preview(proposal)
    snapshot, changeset = found.before, found.changeset
    chunks: list[str] = []
    for change in changeset.changes:
        before = snapshot.get(change.source or change.path, b"")
        after = as_bytes(change.content or b"")
        old = f"a/{change.source or change.path}" if before or change.source else "/dev/null"
        new = f"b/{change.path}" if change.content is not None else "/dev/null"
        lines = difflib.unified_diff(
            before.decode("utf-8", "replace").splitlines(keepends=True),
            after.decode("utf-8", "replace").splitlines(keepends=True),
            old,
            new,
        )
        chunks.append("".join(line if line.endswith("\n") else line + "\n" for line in lines))
    diff = "".join(chunks)
    env.emit({"dry_run": True, "diff": diff}, diff.rstrip("\n") or "(no change)")


@click.command("apply-patch")
@click.argument("file", required=False)
@_options
@pass_env
def apply_patch(env: Env, file: str | None, review: bool, dry_run: bool) -> None:
    """Apply a '*** Begin Patch' patch (FILE, or - / stdin): many files, all or none."""
    proposal = _parse("apply_patch", read_input(file, "patch"))
    _run(env, dataclasses.replace(proposal, tool="apply_patch"), review, dry_run)


@click.command("patch")
@click.argument("path")
@click.argument("file", required=False)
@_options
@pass_env
def patch(env: Env, path: str, file: str | None, review: bool, dry_run: bool) -> None:
    """Apply SEARCH/REPLACE blocks (FILE, or - / stdin) to the file PATH."""
    text = read_input(file, "SEARCH/REPLACE blocks")
    proposal = _parse("search_replace", text, env.repo_path(path))
    _run(env, dataclasses.replace(proposal, tool="patch"), review, dry_run)


@click.command("edit")
@click.argument("path")
@click.option(
    "--edits",
    "edits_arg",
    required=True,
    metavar="JSON|@FILE",
    help='patch_resource edits: a JSON array such as \'[{"old_string": "a", '
    '"new_string": "b"}]\', or @file holding it.',
)
@click.option(
    "--expected-version", default=None, help="The version you read; a change since is a conflict."
)
@_options
@pass_env
def edit(
    env: Env,
    path: str,
    edits_arg: str,
    expected_version: str | None,
    review: bool,
    dry_run: bool,
) -> None:
    """Apply patch_resource edit objects to the file PATH."""
    from gitpatch.formats import patch_resource as edit_objects

    raw = read_input(edits_arg, "edits") if edits_arg.startswith("@") else edits_arg
    try:
        edits = json.loads(raw)
    except ValueError as exc:
        raise InvalidArguments(
            f"--edits is not valid JSON: {exc}",
            hint='Pass a JSON array, e.g. --edits \'[{"old_string": "a", "new_string": "b"}]\'.',
        ) from exc
    proposal = edit_objects.parse(env.repo_path(path), edits)
    proposal = dataclasses.replace(proposal, tool="patch_resource")
    _run(env, proposal, review, dry_run, expected_version=expected_version)


@click.command("apply")
@click.argument("files", nargs=-1)
@_options
@pass_env
def apply(env: Env, files: tuple[str, ...], review: bool, dry_run: bool) -> None:
    """Apply patches in any format (detected): unified diffs (git diff, diff -u),
    '*** Begin Patch' patches, or SEARCH/REPLACE blocks with path lines.

    Several FILES are applied in order, one proposal each, with progress on a terminal;
    the first refusal stops (the ones before it stay applied).
    """
    sources = list(files) or ["-"]
    texts = [(source, read_input(source, "patch")) for source in sources]
    from gitpatch.formats import detect

    with env.progress(texts, "applying") as items:
        for _source, text in items:
            fmt = detect(text)
            proposal = dataclasses.replace(_parse(fmt, text), tool=_TOOL_OF[fmt])
            _run(env, proposal, review, dry_run)


@click.command("read")
@click.argument("path")
@click.option("--offset", type=click.IntRange(min=1), default=None, help="First line (1-based).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="How many lines.")
@pass_env
def read(env: Env, path: str, offset: int | None, limit: int | None) -> None:
    """Print a file with line numbers, and its version (pass it as --expected-version)."""
    result = env.workspace().read(env.repo_path(path))
    lines = result.content.splitlines()
    start = (offset or 1) - 1
    shown = lines[start : start + limit if limit else None]
    numbered = [
        f"{env.style(str(n).rjust(6), fg='cyan')}\t{line}"
        for n, line in enumerate(shown, start=start + 1)
    ]
    footer = f"{env.style('version', fg='yellow')} {result.version}  ({len(lines)} lines)"
    payload = {
        "path": result.path,
        "version": result.version,
        "offset": start + 1,
        "total_lines": len(lines),
        "lines": shown,
    }
    env.emit(payload, "\n".join([*numbered, footer]))
