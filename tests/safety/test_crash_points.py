"""Every operation killed at every crash point it passes: the next open recovers, whole or nothing.

Random kills find what is common; crash points find everything. Each operation (auto edit, also
in a linked worktree, multi-file apply_patch with add/delete/move, review proposal on a
checked-out and on a bare repository, approve by fast-forward and by merge, reject, undo,
session start, approving and rejecting some hunks, a person's amend) first runs once
with ``GITPATCH_CRASH_LOG`` to learn the step boundaries it passes (``safety.recovery.crashpoint``),
then once per boundary in a forked process that ``os._exit``s there (``GITPATCH_CRASH_AT``).
After the next ``Workspace.open``: ``git fsck --strict`` clean, ``git status`` clean and disk
equal to the branch where it is checked out, no lock, temp, journal or owner file left, and the
repository is exactly as before the operation or exactly as after it (refs by tree, HEAD, and
every note's status), with every proposal's note present. Repositories are copied from one
template per operation.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
import pytest

from bench.killtrials import leftovers
from gitpatch.core.model import Proposal, Replace, UpdateFile
from gitpatch.porcelain.workspace import Workspace
from gitpatch.store import Store
from tests.gitkit import git, make_repo, status_porcelain
from tests.safety.proofkit import disk_files, fsck_problems, tree_files

#: a forked kill at every crash point: `make test-fast` leaves these out (`-m "not slow"`).
pytestmark = pytest.mark.slow

FILES = {
    "a.txt": "alpha\nbeta\n",
    "b.txt": "bravo\n",
    "c.txt": "charlie\n",
    "dir/d.txt": "delta\n",
    "r.txt": "review 0\n",
}
MULTI = """*** Begin Patch
*** Update File: a.txt
@@
-alpha
+ALPHA
*** Add File: new/e.txt
+echo
*** Delete File: b.txt
*** Update File: c.txt
*** Move to: moved/c.txt
@@
-charlie
+CHARLIE
*** End Patch
"""
REVIEWER = "Crash Reviewer"


def _edit(path: str, old: str, new: str) -> Proposal:
    return Proposal((UpdateFile(path, (Replace(old, new),)),), "patch_resource", tool="patch")


@dataclass(frozen=True)
class Operation:
    """How to prepare a template, run the operation, and open the repository next time."""

    prepare: Callable[[Path], str]  # returns the id the operation acts on ('' if none)
    run: Callable[[Path, str], Any]
    mode: str = "auto"
    bare: bool = False
    branch: str = "work"
    reopen_runs_it: bool = False  # opening IS the operation (a session starts on open)
    linked: bool = False  # runs in a linked worktree (made afresh each time: it has abs paths)


def _none(_repo: Path) -> str:
    return ""


def _propose_for_review(repo: Path) -> str:
    ws = Workspace.open(repo, mode="review")
    return ws.propose(_edit("r.txt", "review 0\n", "review 1\n")).proposal_id


def _propose_then_move(repo: Path) -> str:
    pid = _propose_for_review(repo)
    Workspace.open(repo).propose(_edit("dir/d.txt", "delta\n", "DELTA\n"))
    return pid


def _two_hunks(repo: Path) -> str:
    """A review proposal with two hunks in one file (lines 1 and 20 of h.txt)."""
    (repo / "h.txt").write_text("".join(f"h {i}\n" for i in range(1, 21)))
    git(repo, "add", "h.txt")
    git(repo, "commit", "-qm", "h.txt")
    edits = (Replace("h 1\n", "H 1\n"), Replace("h 20\n", "H 20\n"))
    proposal = Proposal((UpdateFile("h.txt", edits),), "patch_resource", tool="patch")
    return Workspace.open(repo, mode="review").propose(proposal).proposal_id


def _landed(repo: Path) -> str:
    Workspace.open(repo).propose(_edit("c.txt", "charlie\n", "CHARLIE\n"))
    return ""


OPERATIONS: dict[str, Operation] = {
    "auto edit": Operation(
        _none, lambda r, _i: Workspace.open(r).propose(_edit("a.txt", "beta\n", "BETA\n"))
    ),
    "multi-file apply_patch": Operation(_none, lambda r, _i: Workspace.open(r).apply(MULTI)),
    "review proposal": Operation(
        _none,
        lambda r, _i: Workspace.open(r, mode="review").propose(_edit("b.txt", "bravo", "BRAVO")),
        mode="review",
    ),
    "review proposal (bare)": Operation(
        _none,
        lambda r, _i: Workspace.open(r, mode="review").propose(_edit("b.txt", "bravo", "BRAVO")),
        mode="review",
        bare=True,
    ),
    "approve fast-forward": Operation(
        _propose_for_review,
        lambda r, i: Workspace.open(r, mode="review").approve(i, by=REVIEWER),
        mode="review",
    ),
    "approve merge": Operation(
        _propose_then_move,
        lambda r, i: Workspace.open(r, mode="review").approve(i, by=REVIEWER),
        mode="review",
    ),
    "reject": Operation(
        _propose_for_review,
        lambda r, i: Workspace.open(r, mode="review").reject(i, by=REVIEWER, reason="no"),
        mode="review",
    ),
    "approve hunks": Operation(
        _two_hunks,
        lambda r, i: Workspace.open(r, mode="review").approve(i, by=REVIEWER, hunks="2"),
        mode="review",
    ),
    "reject hunks": Operation(
        _two_hunks,
        lambda r, i: Workspace.open(r, mode="review").reject(i, by=REVIEWER, hunks="1", reason="x"),
        mode="review",
    ),
    "amend": Operation(
        _two_hunks,
        lambda r, i: Workspace.open(r, mode="review").amend(
            i, by=REVIEWER, files={"h.txt": b"x\n"}
        ),
        mode="review",
    ),
    "undo": Operation(_landed, lambda r, _i: Workspace.open(r).undo()),
    "session start": Operation(
        _none, lambda r, _i: Workspace.open(r), branch="main", reopen_runs_it=True
    ),
    "auto edit (linked worktree)": Operation(
        _none,
        lambda r, _i: Workspace.open(r).propose(_edit("a.txt", "beta\n", "BETA\n")),
        linked=True,
    ),
}


def _linked(where: Path) -> Path:
    """A repository and a linked worktree of it on branch ``side``; the worktree's path."""
    main = make_repo(where / "main", FILES)
    git(main, "config", "gc.auto", "0")
    git(main, "worktree", "add", "-q", "-b", "side", str(where / "linked"))
    return where / "linked"


# -- templates and children ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """One prepared repository per operation, with the id its operation acts on."""
    root = tmp_path_factory.mktemp("crash-templates")
    out: dict[str, tuple[Path, str]] = {}
    for n, (name, op) in enumerate(OPERATIONS.items()):
        if op.linked:
            continue
        repo = make_repo(root / f"op{n}", FILES, branch=op.branch)
        git(repo, "config", "gc.auto", "0")
        if op.bare:
            git(root, "clone", "-q", "--bare", str(repo), str(root / f"op{n}.git"))
            repo = root / f"op{n}.git"
        out[name] = (repo, op.prepare(repo))
    return out


def _child(repo: str, name: str, ident: str, env: dict[str, str]) -> None:
    os.environ.update(env)
    try:
        OPERATIONS[name].run(Path(repo), ident)
    except BaseException:
        os._exit(3)
    os._exit(0)


def _run_child(repo: Path, name: str, ident: str, env: dict[str, str]) -> int:
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=_child, args=(str(repo), name, ident, env))
    child.start()
    child.join()
    assert child.exitcode is not None
    return child.exitcode


def _copy(op: Operation, template: Path | None, where: Path) -> Path:
    if op.linked:
        return _linked(where)
    assert template is not None
    shutil.copytree(template, where, symlinks=True)
    return where


# -- what "whole or nothing" means ---------------------------------------------------------------

_PROPOSAL_REF = re.compile(r"^refs/heads/gitpatch/[0-9a-f]{12}$")


def signature(repo: Path) -> dict[str, Any]:
    """The repository's state up to commit times and ids: HEAD, refs by tree, note statuses."""
    store = Store.open(repo)
    git_repo = store.repo
    refs: dict[str, str] = {}
    for name in store.ref_names("refs/"):
        if name == "refs/notes/gitpatch":
            continue
        tip = store.ref_target(name)
        assert tip is not None
        key = "refs/heads/gitpatch/<proposal>" if _PROPOSAL_REF.match(name) else name
        refs[key] = str(git_repo[tip].peel(pygit2.Tree).id)
    notes = sorted(
        (str(git_repo[c].peel(pygit2.Tree).id), str(n.get("status")), str(n.get("tool")))
        for c, n in store.iter_notes()
    )
    return {"HEAD": store.head_branch(), "refs": refs, "notes": notes}


def _notes_missing(repo: Path) -> list[str]:
    store = Store.open(repo)
    out: list[str] = []
    for name in store.ref_names("refs/heads/"):
        tip = store.ref_target(name)
        assert tip is not None
        if _PROPOSAL_REF.match(name) and store.read_note(tip) is None:
            out.append(f"{name} has no note")
        for commit in store.walk(tip):
            if "Gitpatch-Proposal:" in commit.message and store.read_note(commit.id) is None:
                out.append(f"{commit.id} on {name} has no note")
    return out


def _check_recovered(repo: Path, op: Operation, where: str) -> dict[str, Any]:
    """Open as the next call would, then every check of the module doc; the signature."""
    Workspace.open(repo, mode=op.mode)  # type: ignore[arg-type]
    problems = fsck_problems(repo)
    assert not problems, f"git fsck after a kill {where}:\n{problems}"
    if not op.bare:
        assert status_porcelain(repo) == "", f"git status after {where}:\n{status_porcelain(repo)}"
        disk = {k: v for k, v in disk_files(repo).items() if k != ".git"}  # a linked one's
        assert disk == tree_files(repo, "HEAD"), f"disk != HEAD after {where}"
    assert leftovers(repo) == [], f"left behind after {where}: {leftovers(repo)}"
    if op.linked:
        main = repo.parent / "main"
        assert leftovers(main) == [], f"left behind after {where}: {leftovers(main)}"
    assert _notes_missing(repo) == [], f"after {where}: {_notes_missing(repo)}"
    return signature(repo)


def _points(log: Path) -> list[str]:
    """Each crash point the logged run passed, and the two partial commits of each transaction
    (``refs.partial`` and ``refs.partial.last``, simulated at every ``refs.locked``)."""
    seen = log.read_text().split()
    locked = [p for p in seen if p.startswith("refs.locked")]
    partial = [
        p.replace("refs.locked", f"refs.partial{end}") for end in ("", ".last") for p in locked
    ]
    return seen + partial


@pytest.mark.parametrize("name", list(OPERATIONS))
def test_every_crash_point_recovers_whole_or_nothing(
    name: str, templates: dict[str, tuple[Path, str]], tmp_path: Path
) -> None:
    op = OPERATIONS[name]
    template, ident = templates.get(name, (None, ""))
    before = signature(_copy(op, template, tmp_path / "before"))
    log = tmp_path / "points.log"
    done = _copy(op, template, tmp_path / "done")
    assert _run_child(done, name, ident, {"GITPATCH_CRASH_LOG": str(log)}) == 0
    after = _check_recovered(done, op, "no kill")
    assert after != before, f"{name} changed nothing"
    points = _points(log)
    assert {"objects.written", "record.written", "refs.locked", "refs.moved"} <= {
        p.split(":")[0] for p in points
    } or name == "session start"
    outcomes: dict[str, str] = {}
    for n, point in enumerate(points):
        repo = _copy(op, template, tmp_path / f"kill{n}")
        code = _run_child(repo, name, ident, {"GITPATCH_CRASH_AT": point})
        assert code == 137, f"{name} did not reach {point} (exit {code})"
        now = _check_recovered(repo, op, f"{name} at {point}")
        allowed = [after] if op.reopen_runs_it else [before, after]
        assert now in allowed, f"{name} killed at {point} is half done:\n{now}"
        outcomes[point] = "after" if now == after else "before"
        shutil.rmtree(repo.parent / "main" if op.linked else repo)
        shutil.rmtree(repo, ignore_errors=True)
    # A kill before the refs move undoes the operation; one in or after their move finishes it.
    if not op.reopen_runs_it:
        moved = points.index("refs.moved:1")
        want = {
            p: "after" if i >= moved or p.startswith("refs.partial") else "before"
            for i, p in enumerate(points)
        }
        assert outcomes == want
