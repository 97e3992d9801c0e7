"""The project's checks and the approval queue on the command line: ``gitpatch check``, and
what ``gitpatch approve ID1 ID2 ...`` prints for a queue of several entries."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from gitpatch.doors.cli._common import Env, pass_env
from gitpatch.doors.terms import in_terms

if TYPE_CHECKING:
    from gitpatch.porcelain.workspace import Workspace
    from gitpatch.workspace.results import CheckReport, Landing

__all__ = ["approve_queue", "check", "report_text"]

#: Exit status of ``gitpatch check`` when a check fails, and of a queue that landed not all.
EXIT_FAILED = 1

_MARKS = {"approved": "green", "checks_failed": "red", "needs_revision": "red", "refused": "red"}


def report_text(env: Env, report: CheckReport) -> str:
    """A check report for people: the summary, then each check with its exit and time, and
    the failing one's output."""
    lines = [report.summary()]
    for run in report.runs:
        state = "timed out" if run.timed_out else f"exit {run.exit_code}"
        colour = "green" if run.passed else "red"
        lines.append(f"  {env.style(run.name, fg=colour)}  {state}  {run.seconds:.2f} s")
    failed = report.failure()
    if failed is not None and failed.output:
        lines.append(f"output of {failed.name!r} (its end):")
        lines.extend(f"  {line}" for line in failed.output.splitlines())
    return "\n".join(lines)


@click.command("check")
@click.option(
    "--session",
    default=None,
    help="Check this review-mode session's open proposals (its stack's top) instead of "
    "the checked-out branch.",
)
@pass_env
def check(env: Env, session: str | None) -> None:
    """Run the project's checks (.gitpatch.toml [checks]) on the work as committed.

    The checks run in a scratch checkout of exactly that tree, never in yours; a tree that
    passed before is not checked again, and approving it later runs nothing. Exits 1 when a
    check fails."""
    extra: dict[str, Any] = {"session": session} if session else {}
    ws = env.workspace("review" if session else None, **extra)
    env.status("running the checks ...")
    report = ws.check()
    env.emit(report, report_text(env, report))
    if not report.passed:
        raise click.exceptions.Exit(EXIT_FAILED)


def approve_queue(
    env: Env,
    ws: Workspace,
    ids: list[str],
    who: str,
    squash: bool,
    skip: str | None,
    batch: bool = False,
) -> None:
    """Approve ``ids`` as one queue: each lands on the one before, checked on that result;
    one line per entry as it is done. Exits 1 when not every entry landed."""

    def heard(done: Landing) -> None:
        if not env.json:
            mark = env.style(done.status, fg=_MARKS.get(done.status))
            env.echo(f"{done.id}: {mark}: {in_terms(done.message, 'cli')}")

    landings = ws.approve(ids, who, squash=squash, skip_checks=skip, batch=batch, progress=heard)
    landed = sum(1 for d in landings if d.status == "approved")
    if env.json:
        env.emit(landings, "")
    else:
        env.echo(f"Queue done: {landed} of {len(landings)} landed.")
    if landed != len(landings):
        raise click.exceptions.Exit(EXIT_FAILED)
