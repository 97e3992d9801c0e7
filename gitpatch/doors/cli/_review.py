"""Review commands for people: proposals, show, approve, reject, undo, log, saves.

``ID`` is a proposal id as printed (the part after ``gitpatch/`` in its branch name) or a
session name. Only people run these: the MCP server offers no approve or reject tool.
"""

from __future__ import annotations

import shlex
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gitpatch.doors.cli._common import Env, pass_env
from gitpatch.doors.cli._hunks import hunk_view
from gitpatch.doors.terms import in_terms
from gitpatch.errors import InvalidArguments

if TYPE_CHECKING:
    from gitpatch.porcelain.workspace import Workspace
    from gitpatch.workspace.results import ProposalDetail, ProposalInfo

__all__ = [
    "age",
    "approve",
    "colour_diff",
    "comment",
    "log",
    "proposals",
    "reject",
    "saves",
    "show",
    "undo",
]

_STATUS_COLOURS = {
    "proposed": "yellow",
    "applied": "cyan",
    "approved": "green",
    "rejected": "red",
    "undone": "magenta",
    "needs_revision": "red",
    "checks_failed": "red",
}


def age(seconds: float) -> str:
    """A short age: ``42s``, ``5m``, ``3h``, ``2d``."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{max(0, int(seconds))}s"


def colour_diff(env: Env, diff: str) -> str:
    """A unified diff, coloured like git's when colour is on."""
    if not env.color:
        return diff
    out = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---", "diff ", "index ")):
            out.append(env.style(line, bold=True))
        elif line.startswith("+"):
            out.append(env.style(line, fg="green"))
        elif line.startswith("-"):
            out.append(env.style(line, fg="red"))
        elif line.startswith("@@"):
            out.append(env.style(line, fg="cyan"))
        else:
            out.append(line)
    return "\n".join(out)


def _person(env: Env, ws: Workspace, by: str | None) -> str:
    if by:
        return by
    sig = ws.plumbing.store.signature()
    return f"{sig.name} <{sig.email}>"


def _stat_line(detail: ProposalDetail) -> str:
    stats = detail.stats
    return (
        f"{stats.get('files', 0)} file(s) changed, +{stats.get('insertions', 0)} "
        f"-{stats.get('deletions', 0)}"
    )


def _row(env: Env, info: ProposalInfo, detail: ProposalDetail | None) -> list[str]:
    plus = f"+{detail.stats.get('insertions', 0)}" if detail else "?"
    minus = f"-{detail.stats.get('deletions', 0)}" if detail else "?"
    files = ", ".join(info.files[:3]) + (
        f" (+{len(info.files) - 3})" if len(info.files) > 3 else ""
    )
    target = info.target.removeprefix("refs/heads/")
    return [info.id, info.status, target, files, f"{plus}/{minus}", age(info.age_seconds)]


def _session_cell(info: ProposalInfo) -> str:
    """``bot``, ``bot (lands 2 beneath)``, ``bot, overlaps`` for the proposals table."""
    cell = info.session or "-"
    if info.lands:
        cell += f" (lands {len(info.lands)} beneath)"
    if info.overlaps:
        cell += ", overlaps"
    return cell


@click.command("proposals")
@click.option("--all", "show_all", is_flag=True, help="Also list closed proposals (newest 50).")
@pass_env
def proposals(env: Env, show_all: bool) -> None:
    """List open proposals and sessions (id, status, target, files, +/- lines, age)."""
    from gitpatch.porcelain.opening import is_open

    ws = env.workspace("review")
    items = [i for i in ws.proposals() if show_all or is_open(ws, i)]
    details: dict[str, ProposalDetail | None] = {}
    for info in items:
        try:
            details[info.id] = ws.show(info.id)
        except Exception:  # a proposal whose diff cannot be built is still listed
            details[info.id] = None
    if env.json:
        env.emit(
            [
                {**i.model_dump(mode="json"), "stats": d.stats if (d := details[i.id]) else {}}
                for i in items
            ],
            "",
        )
        return
    if not items:
        env.echo("No open proposals." + ("" if show_all else " (--all lists closed ones)"))
        return
    header = ["ID", "STATUS", "TARGET", "FILES", "+/-", "AGE"]
    rows = [_row(env, i, details[i.id]) for i in items]
    if any(i.session for i in items):  # the review loop's column: whose stack, what it lands
        header.append("SESSION")
        for row, info in zip(rows, items, strict=True):
            row.append(_session_cell(info))
    widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]
    env.echo(
        env.style("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)), bold=True)
    )
    for row, info in zip(rows, items, strict=True):
        cells = [cell.ljust(w) for cell, w in zip(row, widths, strict=True)]
        cells[1] = env.style(cells[1], fg=_STATUS_COLOURS.get(info.status))
        env.echo("  ".join(cells).rstrip())


@click.command("show")
@click.argument("id")
@click.option("--stat", "stat_only", is_flag=True, help="Only the stats, no diff.")
@pass_env
def show(env: Env, id: str, stat_only: bool) -> None:
    """Show one proposal or session: what it is, its stats and its (coloured) diff."""
    detail = env.workspace("review").show(id)
    info = detail.info
    head = [
        f"{env.style('proposal', fg='yellow')} {info.id}  "
        f"{env.style(info.status, fg=_STATUS_COLOURS.get(info.status))}",
        f"target  {info.target.removeprefix('refs/heads/')}   tool {info.tool or '-'}   "
        f"author {info.author or '-'}   {age(info.age_seconds)} ago",
        f"files   {', '.join(info.files)}",
        _stat_line(detail),
    ]
    head.extend(_loop_lines(info))
    head.extend(_outcome_lines(env, detail))
    text = "\n".join(head)
    if detail.recorded_files:
        text += (
            f"\nalso lands the person's own uncommitted work in {', '.join(detail.recorded_files)}"
        )
    if not stat_only and detail.hunks:
        text += "\n\n" + hunk_view(env, detail, colour_diff)
    elif not stat_only:
        text += "\n\n" + colour_diff(env, detail.diff.rstrip("\n"))
        if detail.recorded:
            text += "\n\n" + colour_diff(env, detail.recorded.rstrip("\n"))
    env.emit(detail, text)


def _outcome_lines(env: Env, detail: ProposalDetail) -> list[str]:
    """What approving an open proposal would do, said before it happens (a merge, not a
    fast-forward, or a conflict with each side's lines)."""
    from gitpatch.review import queries

    ws = env.workspace("review")
    if not queries.is_open(ws.plumbing.context, detail.info):
        return []
    found = queries.outcome(ws.plumbing.context, detail.info)
    colour = {"merge": "yellow", "conflict": "red"}.get(found.kind)
    return [env.style(found.text, fg=colour)] if found.text else []


def _loop_lines(info: ProposalInfo) -> list[str]:
    """The review loop's facts about a proposal: session, stack, verdict, comments, links."""
    lines = []
    if info.session:
        lines.append(f"session {info.session}")
    if info.lands and info.id == info.session:  # a session: its own proposals, all of them
        lines.append(
            f"proposals {', '.join(info.lands)} (bottom first): approving the session lands "
            "them all"
        )
    elif info.lands:
        lines.append(
            f"stacked on open proposals {', '.join(info.lands)}: approving it lands them too"
        )
    if info.decided_by or info.reason:
        verdict = f"{info.status} by {info.decided_by or '?'} at {info.decided_at or '?'}"
        lines.append(verdict + (f": {info.reason}" if info.reason else ""))
    for c in info.comments:
        on = f" on {c.path}:{c.line}" if c.path else ""
        lines.append(f"{c.kind} by {c.by} at {c.at}{on}: {c.text}")
    if info.revises:
        lines.append(f"revises {info.revises}")
    if info.revised_by:
        lines.append(f"revised by {info.revised_by}")
    lines.extend(f"also changed by another session: {flag}" for flag in info.overlaps)
    return lines


@click.command("approve")
@click.argument("ids", nargs=-1, metavar="[ID]...")
@click.option("--by", default=None, help="Who approves (default: git config user.name/email).")
@click.option(
    "--range",
    "rev_range",
    default=None,
    metavar="A..B",
    help="Instead of an ID: approve the agent commits in A..B already applied on a branch.",
)
@click.option(
    "--squash", is_flag=True, help="With a session: land all its proposals as one commit."
)
@click.option(
    "--skip-checks", is_flag=True, help="Land without running the checks (needs --reason)."
)
@click.option("--reason", default=None, help="Why the checks are skipped (kept in the commit).")
@click.option(
    "--batch",
    is_flag=True,
    help="With several IDs: check them together first, splitting on a failure (slow checks).",
)
@click.option(
    "--hunks",
    default=None,
    metavar="1,3|PATH:N",
    help="Land only these hunks (as `gitpatch show ID` numbers them), as one commit; the "
    "rest stays open.",
)
@pass_env
def approve(
    env: Env,
    ids: tuple[str, ...],
    by: str | None,
    rev_range: str | None,
    squash: bool,
    skip_checks: bool,
    reason: str | None,
    batch: bool,
    hunks: str | None,
) -> None:
    """Approve proposals or sessions: merge each into its target (only people approve).

    The project's checks (.gitpatch.toml [checks]) run on the exact result first; nothing
    lands unless they pass. Several IDs queue: each lands on the one before, checked on that
    result. A proposal stacked on other open proposals of its session lands them too (they
    are named before anything moves); a session's name approves all of its proposals."""
    if bool(ids) == (rev_range is not None):
        raise click.UsageError("pass either ID... or --range A..B")
    if skip_checks != (reason is not None):
        raise click.UsageError("--skip-checks and --reason TEXT go together")
    skip = reason if skip_checks else None
    ws = env.workspace("review")
    who = _person(env, ws, by)
    if rev_range is not None:
        _approve_range(env, ws, rev_range, who)
        return
    if len(ids) > 1:
        from gitpatch.doors.cli._checks import approve_queue

        if hunks is not None:
            raise click.UsageError("--hunks takes one ID")
        approve_queue(env, ws, list(ids), who, squash, skip, batch)
        return
    env.status(f"approving {ids[0]} ...")
    result = ws.approve(
        ids[0],
        by=who,
        squash=squash,
        skip_checks=skip,
        hunks=hunks,
        told=lambda line: env.echo(line, err=True),
    )
    env.emit(result, in_terms(result.message, "cli"))


def _approve_range(env: Env, ws: Workspace, rev_range: str, who: str) -> None:
    from gitpatch.workspace import gate

    old_rev, sep, new_rev = rev_range.partition("..")
    if not sep or not new_rev:
        raise InvalidArguments(
            f"--range {rev_range!r} is not A..B", hint="Example: --range main..feature"
        )
    new = ws.plumbing.store.resolve_commit(new_rev)
    old = ws.plumbing.store.resolve_commit(old_rev) if old_rev else None
    commits = [c.id for c in ws.plumbing.store.walk(new, hide=old)]
    done = gate.approve_commits(ws.plumbing.store, commits, who)
    message = f"Approved {len(done)} applied agent commit(s) in {rev_range} by {who}."
    env.emit({"approved": done, "by": who}, message)


@click.command("reject")
@click.argument("id")
@click.option("--reason", required=True, help="Why (the agent reads it).")
@click.option("--by", default=None, help="Who rejects (default: git config user.name/email).")
@click.option(
    "--hunks",
    default=None,
    metavar="2|PATH:N",
    help="Refuse only these hunks (as `gitpatch show ID` numbers them); the rest stays open.",
)
@pass_env
def reject(env: Env, id: str, reason: str, by: str | None, hunks: str | None) -> None:
    """Reject a proposal (its branch is deleted, the reason noted) or, by name, every open
    proposal of a session. Later proposals of its session that change other files are
    re-based without it; those changing the same files are marked needs_revision."""
    ws = env.workspace("review")
    result = ws.reject(id, by=_person(env, ws, by), reason=reason, hunks=hunks)
    env.emit(result, in_terms(result.message, "cli"))


@click.command("comment")
@click.argument("id")
@click.argument("text")
@click.option(
    "--request-changes", is_flag=True, help="Mark it as a request for changes (not a verdict)."
)
@click.option("--by", default=None, help="Who comments (default: git config user.name/email).")
@click.option(
    "--at",
    "at",
    default=None,
    metavar="PATH:LINE",
    help="A line comment: that line of the proposal's version of PATH.",
)
@pass_env
def comment(
    env: Env, id: str, text: str, request_changes: bool, by: str | None, at: str | None
) -> None:
    """Comment on a proposal: the agent reads it in show_proposal, list_proposals and a
    notice at the top of its next tool result."""
    ws = env.workspace("review")
    kind = "request_changes" if request_changes else "comment"
    entry = ws.comment(id, by=_person(env, ws, by), text=text, kind=kind, at=at)
    env.emit({"id": id, **entry}, f"Commented on proposal {id} as {entry['by']}.")


@click.command("undo")
@click.argument("id", required=False)
@pass_env
def undo(env: Env, id: str | None) -> None:
    """Revert the newest gitpatch change (or proposal ID's) with a new commit.

    ID is a proposal id from `gitpatch log`, or an undo's own commit id (what the undo
    printed) to undo that undo; without it, the newest change on the current branch that is
    not an undo is reverted. History is never rewritten."""
    result = env.workspace("review").undo(id)
    env.emit(result, in_terms(result.message, "cli"))


@click.command("log")
@click.option("-n", "limit", type=click.IntRange(min=1), default=20, help="How many entries.")
@pass_env
def log(env: Env, limit: int) -> None:
    """The gitpatch commits on the current branch, newest first."""
    ws = env.workspace("review")
    entries = ws.log(limit)
    now = datetime.now(UTC)
    lines = []
    for e in entries:
        when = datetime.strptime(e.time, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        lines.append(
            f"{env.style(e.commit[:12], fg='yellow')} {e.proposal_id} {e.tool:<14} "
            f"{age((now - when).total_seconds()):>4}  {e.summary}"
        )
    kept = ws.plumbing.saves()
    if kept:  # a person's save a land set aside: said where people look back
        lines.append(f"Saves set aside by a land: {len(kept)} (see gitpatch saves).")
    data = {"log": entries, "saves_set_aside": len(kept)}
    env.emit(data, "\n".join(lines) or "No gitpatch commits on this branch.")


@click.command("saves")
@pass_env
def saves(env: Env) -> None:
    """Your saves a land set aside, oldest first, and how to take one back.

    An editor's save that reached a file while an agent's change landed there, and that could
    not be merged with what the file held then, is kept in .git/gitpatch/saves/ (the file is
    left as it is). Compare the two, copy what you want back, then delete the kept file."""
    kept = env.workspace("review").plumbing.saves()
    now = datetime.now(UTC).timestamp()
    lines = []
    for s in kept:
        where = f" (in {s.worktree})" if s.worktree else ""
        shown = s.path or "a file whose path is not known"
        lines.append(f"{age(now - s.time_ns / 1e9):>4}  {shown}{where}\n      {s.file}")
        if s.path and s.worktree and Path(s.worktree).is_dir():
            target = shlex.quote(str(Path(s.worktree) / s.path))
            lines.append(f"      diff {shlex.quote(str(s.file))} {target}")
    if lines:
        lines.append(
            "To take a save back: copy what you want from the kept file into yours (or cp it "
            "over yours, which replaces all the file holds now, an agent's change in it too), "
            "then delete the kept file."
        )
    data = [
        {"path": s.path, "file": str(s.file), "worktree": s.worktree, "time_ns": s.time_ns}
        for s in kept
    ]
    env.emit(data, "\n".join(lines) or "No saves set aside.")
