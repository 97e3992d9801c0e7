"""The project's checks, run on the exact tree that would land (``.gitpatch.toml`` ``[checks]``).

``prove`` is the step an approval passes before anything moves: it takes the commit about to
land (a fast-forward's tip, a merge, a squash, a commit of selected hunks: whatever the caller
built), runs every configured check on its tree, and either returns the passing report or
marks the proposal ``checks_failed`` (its note keeps the check, the exit code and the tail of
the output, so the agent's next call is told) and raises ``checks_failed``. ``run`` is the
same without the verdict, for an agent checking its own work (``Workspace.check``).

Where the checks run: a scratch checkout under ``<common git dir>/gitpatch/checks/``, one per
concurrent run (``scratch-N/tree``), reused and brought to the tree by ``git reset --hard`` and
``git clean -ffdx`` (only what differs is rewritten, and nothing a previous run left stays). Its
git dir is ``scratch-N`` itself (a HEAD, an index and a ``commondir`` pointing at the
repository), so ``git`` works inside it as in any worktree while ``git worktree list``, the
person's checkout, index and HEAD never see it.

Passing results are cached by tree id and the checks' own definition, as files
``<common git dir>/gitpatch/checks/passed/<tree>-<digest>.json``: a tree that passed is never
checked again, whoever asks (the agent's ``check`` before it asks, the approval after). A file
rather than a note: a result says as much about this machine's tools as about the tree, it is
not history to share, and writing it races with nobody's proposals on ``refs/notes/gitpatch``.
Failures are not cached: a person may fix the environment and approve again.

It moves no ref itself: a failure's note goes through the one publisher.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pygit2

from gitpatch.checkout import gitbin
from gitpatch.errors import ChecksFailed, ConcurrentUpdate, RepositoryError
from gitpatch.review import _worktrees as worktrees
from gitpatch.safety.atomic import write_atomic
from gitpatch.safety.owners import flocked
from gitpatch.workspace import Transition, config, publish
from gitpatch.workspace.results import CheckReport, CheckRun, now_iso
from gitpatch.workspace.sessions import short

if TYPE_CHECKING:
    from gitpatch.store import Store
    from gitpatch.workspace import Context

__all__ = [
    "SKIPPED_TRAILER",
    "checks_dir",
    "configured",
    "mark_failed",
    "prepared",
    "prove",
    "run",
    "vouched",
]

#: The trailer an approval that skipped the checks carries, with the person's reason.
SKIPPED_TRAILER = "Gitpatch-Checks-Skipped"
#: Scratch checkouts tried before waiting for the first (runs at once, e.g. two agents).
_SLOTS = 3
#: How much of a check's output is kept: its last lines, at most this many characters.
_TAIL_LINES = 40
_TAIL_CHARS = 3000


#: Trees covered by a batch whose whole result passed (tree -> the batch's tree), while the
#: queue lands that batch's entries one after the other.
_VOUCHED: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "gitpatch_vouched", default=None
)


@contextlib.contextmanager
def vouched(trees: dict[str, str]) -> Iterator[None]:
    """While the block runs, ``prove`` passes these trees (each a step towards the batch's
    tree, which passed) without running anything: the queue's batch mode."""
    token = _VOUCHED.set(trees)
    try:
        yield
    finally:
        _VOUCHED.reset(token)


def configured(ctx: Context) -> tuple[config.Check, ...]:
    """The checks ``.gitpatch.toml`` names: the file at the root of this Workspace's
    working tree, else (a sparse checkout without it, a bare repository) the file as
    committed on the target branch. Never the file of the work being checked: an agent's
    change cannot rewrite the checks its own approval runs."""
    root = ctx.store.workdir
    if root is not None and (Path(root) / config.FILENAME).exists():
        return config.load(root).checks
    head = ctx.store.ref_target(ctx.target)
    text = ctx.store.read(head, config.FILENAME) if head is not None else None
    if text is None:
        return ()
    return config.parse(text, Path(f"{short(ctx.target)}:{config.FILENAME}")).checks


def checks_dir(store: Store) -> Path:
    """Where the scratch checkouts, their locks and the cached results live."""
    return worktrees.common_dir(store) / "gitpatch" / "checks"


def run(
    ctx: Context, commit: pygit2.Oid, checks: Sequence[config.Check] | None = None
) -> CheckReport:
    """The checks on ``commit``'s tree: the cached result when that tree passed them before,
    else each run in turn in a scratch checkout of exactly that tree (stopping at the first
    that fails). Nothing in the repository changes; a pass is cached."""
    store = ctx.store
    wanted = tuple(configured(ctx) if checks is None else checks)
    tree = str(store.tree_of(commit))
    if not wanted:
        return CheckReport(tree=tree, commit=str(commit), passed=True)
    cache = checks_dir(store) / "passed" / f"{tree}-{_digest(wanted)}.json"
    cached = _cached(cache)
    if cached is not None:
        return cached.model_copy(update={"cached": True, "commit": str(commit)})
    runs: list[CheckRun] = []
    with _scratch(store, commit, sum(c.timeout for c in wanted)) as where:
        env = {
            **gitbin.environment(),
            "GITPATCH_CHECK_TREE": tree,
            "GITPATCH_CHECK_COMMIT": str(commit),
        }
        for check in wanted:
            runs.append(_run_one(check, where, env))
            if not runs[-1].passed:
                break
    report = CheckReport(
        tree=tree, commit=str(commit), passed=all(r.passed for r in runs), runs=runs
    )
    if report.passed:
        cache.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(cache, report.model_dump_json().encode(), durable=False)
    return report


def prove(
    ctx: Context,
    tip: pygit2.Oid,
    commit: pygit2.Oid,
    *,
    what: str,
    by: str,
    skip: str | None = None,
) -> CheckReport:
    """The gate before an approval lands ``commit`` (for the proposal or session whose tip is
    ``tip``, described as ``what``): the passing report, or ``checks_failed`` after marking
    ``tip`` so (nothing lands). ``skip``: the person's reason for not running them."""
    if skip is not None:
        return CheckReport(
            tree=str(ctx.store.tree_of(commit)), commit=str(commit), passed=True, skipped=skip
        )
    tree = str(ctx.store.tree_of(commit))
    batch = (_VOUCHED.get() or {}).get(tree)
    if batch is not None:
        return CheckReport(tree=tree, commit=str(commit), passed=True, batch=batch)
    report = run(ctx, commit)
    if report.passed:
        return report
    failed = report.failure()
    assert failed is not None
    mark_failed(ctx, tip, report, by)
    raise ChecksFailed(
        f"{report.summary()}: {what} did not land, and is marked checks_failed; the "
        f"output ends:\n{failed.output}",
        hint="Its agent is told, with the output; let it fix the change and approve again, "
        "or approve with --skip-checks --reason TEXT (recorded in the commit).",
        details={
            "check": failed.name,
            "command": failed.command,
            "exit_code": failed.exit_code,
            "output": failed.output,
            "tree": report.tree,
            "commit": str(commit),
        },
    )


def mark_failed(ctx: Context, tip: pygit2.Oid, report: CheckReport, by: str) -> None:
    """Note on ``tip`` that the checks failed on what would have landed: the status the
    agent is told about, the failing check and its output's tail."""
    failed = report.failure()
    assert failed is not None
    facts: dict[str, Any] = {
        "status": "checks_failed",
        "decided_by": by,
        "decided_at": now_iso(),
        "reason": f"{report.summary()}; its output ends:\n{failed.output}",
        "checks": report.model_dump(mode="json"),
    }
    step = Transition((), {tip: lambda old: {**(old or {}), **facts}}, "gitpatch: checks failed")
    publish(ctx, step)


# -- the scratch checkout ----------------------------------------------------------------------


@contextlib.contextmanager
def _scratch(store: Store, commit: pygit2.Oid, patience: float) -> Iterator[Path]:
    """A scratch checkout holding exactly ``commit``'s tree, held for the block."""
    base = checks_dir(store)
    with contextlib.ExitStack() as held:
        slot = None
        for n in range(_SLOTS):
            try:
                held.enter_context(flocked(base / f"scratch-{n}.lock", wait=0))
            except ConcurrentUpdate:
                continue
            slot = n
            break
        if slot is None:  # all busy: wait for the first, as long as its checks may take
            held.enter_context(flocked(base / "scratch-0.lock", wait=patience + 60))
            slot = 0
        yield prepared(base / f"scratch-{slot}", commit)


def prepared(gitdir: Path, commit: pygit2.Oid) -> Path:
    """``gitdir``'s checkout (made on first use) brought to exactly ``commit``."""
    where = gitdir / "tree"
    if not (gitdir / "commondir").is_file():
        where.mkdir(parents=True, exist_ok=True)
        (gitdir / "HEAD").write_text(f"{commit}\n")
        # the common dir is three levels up: <common>/gitpatch/checks/scratch-N
        (gitdir / "commondir").write_text("../../..\n")
        (where / ".git").write_text(f"gitdir: {gitdir}\n")
    try:
        # the person's sparse checkout is theirs: the scratch one always holds every file
        full = ["-c", "core.sparseCheckout=false"]
        gitbin.run(str(gitdir), str(where), [*full, "reset", "-q", "--hard", str(commit)])
        gitbin.run(str(gitdir), str(where), [*full, "clean", "-ffdxq"])
    except gitbin.GitFailed as exc:
        raise RepositoryError(
            f"cannot check out {commit} in the checks' scratch checkout {where}: {exc.stderr}",
            hint=f"Remove {gitdir} (it is made again) and retry.",
            details={"path": str(where)},
        ) from exc
    return where


def _run_one(check: config.Check, where: Path, env: dict[str, str]) -> CheckRun:
    """Run one check by ``sh -c`` in ``where``; past its timeout its process group is killed."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            ["sh", "-c", check.command],
            cwd=where,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        code: int | None
        try:
            code = proc.wait(timeout=check.timeout)
        except subprocess.TimeoutExpired:
            code = None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # and whatever it left running in the background
        proc.wait()
        output = _tail(out)
    return CheckRun(
        name=check.name,
        command=check.command,
        exit_code=code,
        seconds=round(time.monotonic() - start, 3),
        output=output,
        timed_out=code is None,
    )


def _tail(out: Any) -> str:
    """The last lines of what a check printed (its end says why it failed)."""
    size = out.seek(0, os.SEEK_END)
    out.seek(max(0, size - 4 * _TAIL_CHARS))
    text = out.read().decode("utf-8", "replace")
    lines = text.splitlines()[-_TAIL_LINES:]
    return "\n".join(lines)[-_TAIL_CHARS:]


def _digest(checks: Sequence[config.Check]) -> str:
    """What the cached result depends on besides the tree: the checks themselves."""
    spec = json.dumps([[c.name, c.command, c.timeout] for c in checks])
    return hashlib.sha256(spec.encode()).hexdigest()[:16]


def _cached(path: Path) -> CheckReport | None:
    try:
        return CheckReport.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return None
