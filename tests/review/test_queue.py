"""The approval queue, with the real git binary and real processes.

Three queued sessions land in order, the checks run on each result; a later entry that no
longer merges is marked needs_revision with both sides' lines and its agent is told; one that
fails the checks on the result is skipped; approvals from several processes at once each land
on the one before, checked on that result; ``gitpatch approve A B C`` and ``gitpatch check``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gitpatch.porcelain.workspace import Workspace
from tests.gitkit import edit, git, git_env, head
from tests.review.checkskit import checked, checked_repo

MAIN = "refs/heads/main"


def _trees_of_main(repo: Path, count: int) -> list[str]:
    """The trees of main's last ``count`` first-parent commits, oldest first."""
    commits = git(repo, "rev-list", "--first-parent", f"-{count}", "main").split()
    return [git(repo, "rev-parse", f"{c}^{{tree}}").strip() for c in reversed(commits)]


def _gitpatch(repo: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "gitpatch", "-C", str(repo), *args],
        env=git_env(repo),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_three_queued_sessions_land_in_order_each_checked_on_its_result(tmp_path: Path) -> None:
    repo, log = checked_repo(tmp_path / "repo")
    ids: dict[str, str] = {}
    for name, old, new in (
        ("x", "one\n", "ONE\n"),
        ("y", "three\n", "THREE\n"),
        ("z", "five\n", "FIVE\n"),
    ):
        made = Workspace.open(repo, mode="review", session=name)
        ids[name] = made.propose(edit("c.txt", old, new)).proposal_id
    person = Workspace.open(repo, mode="review")
    heard: list[str] = []
    done = person.approve(["x", "y", "z"], "Pat", progress=lambda d: heard.append(d.id))
    assert [d.status for d in done] == ["approved"] * 3 and heard == ["x", "y", "z"]
    assert git(repo, "show", "main:c.txt") == "ONE\ntwo\nTHREE\nfour\nFIVE\n"
    # each landed on the one before (x fast-forwards, y and z merge onto it) ...
    subjects = git(repo, "log", "--first-parent", "-3", "--format=%s", "main").splitlines()
    assert subjects[:2] == [f"Merge proposal {ids[n]} into main" for n in ("z", "y")]
    # ... and the checks ran on exactly each result main then pointed at
    assert checked(log) == _trees_of_main(repo, 3)
    assert git(repo, "status", "--porcelain") == ""
    assert not (repo / ".git" / "gitpatch" / "queue.json").exists()


def test_a_later_entry_that_no_longer_merges_is_marked_with_both_sides(tmp_path: Path) -> None:
    repo, _log = checked_repo(tmp_path / "repo")
    Workspace.open(repo, mode="review", session="p").propose(edit("c.txt", "two\n", "TWO\n"))
    q = Workspace.open(repo, mode="review", session="q")
    late = q.propose(edit("c.txt", "two\n", "deux\n"))
    person = Workspace.open(repo, mode="review")
    first, second = person.approve(["p", "q"], "Pat")
    assert first.status == "approved"
    landed = head(repo, MAIN)
    assert second.status == "needs_revision" and second.code == "merge_conflict"
    (clash,) = second.conflicts
    assert clash["path"] == "c.txt"
    assert (clash["main"], clash["session"]) == ("line 2", "line 2")
    assert (clash["main_text"], clash["session_text"]) == ("TWO", "deux")
    assert "c.txt: main changed line 2, session changed line 2" in second.message
    # nothing of it landed; its ref is kept for show, not open any more
    assert head(repo, MAIN) == landed
    assert git(repo, "for-each-ref", f"refs/heads/gitpatch/{late.proposal_id}") == ""
    assert git(repo, "rev-parse", f"refs/gitpatch/revise/{late.proposal_id}").strip()
    # its agent is told, with the lines, and show_proposal has both sides
    told = q.plumbing.notices()
    assert len(told) == 1 and "needs revision" in told[0] and "no longer merges" in told[0]
    info = q.show(late.proposal_id).info
    assert info.status == "needs_revision" and info.conflicts[0]["session_text"] == "deux"


def test_an_entry_failing_the_checks_on_the_result_is_skipped(tmp_path: Path) -> None:
    repo, log = checked_repo(tmp_path / "repo")
    Workspace.open(repo, mode="review", session="a").propose(edit("a.txt", "1\n", "5\n"))
    Workspace.open(repo, mode="review", session="b").propose(edit("b.txt", "1\n", "6\n"))
    Workspace.open(repo, mode="review", session="c").propose(edit("c.txt", "one\n", "1\n"))
    done = Workspace.open(repo, mode="review").approve(["a", "b", "c"], "Pat")
    assert [d.status for d in done] == ["approved", "checks_failed", "approved"]
    assert done[1].checks["output"] == "sum is 11"
    assert git(repo, "show", "main:b.txt") == "1\n"  # b never landed
    assert git(repo, "show", "main:c.txt").startswith("1\n")  # c landed on a's result
    assert checked(log) == _trees_of_main(repo, 2)


def test_approvals_from_several_processes_each_land_on_the_one_before(tmp_path: Path) -> None:
    repo, log = checked_repo(tmp_path / "repo")
    lines = ("one\n", "three\n", "five\n")
    names = ("p1", "p2", "p3")
    for name, old in zip(names, lines, strict=True):
        Workspace.open(repo, mode="review", session=name).propose(edit("c.txt", old, "X\n"))
    procs = [_gitpatch(repo, "approve", name, "--by", "Pat") for name in names]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    assert git(repo, "show", "main:c.txt") == "X\ntwo\nX\nfour\nX\n"
    # whatever order they took their turns in, each result was checked before main moved to it
    assert checked(log) == _trees_of_main(repo, 3)
    assert git(repo, "status", "--porcelain") == ""
    fsck = git(repo, "fsck", "--strict", "--no-dangling", "--no-progress")
    assert "error" not in fsck


def test_the_cli_queue_and_check(tmp_path: Path) -> None:
    repo, log = checked_repo(tmp_path / "repo")
    Workspace.open(repo, mode="review", session="a").propose(edit("a.txt", "1\n", "5\n"))
    Workspace.open(repo, mode="review", session="b").propose(edit("b.txt", "1\n", "6\n"))
    proc = _gitpatch(repo, "check", "--session", "b")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert out.startswith("checks passed on tree")
    proc = _gitpatch(repo, "--json", "approve", "a", "b", "--by", "Pat")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err  # not every entry landed
    statuses = [entry["status"] for entry in json.loads(out)]
    assert statuses == ["approved", "checks_failed"]
    proc = _gitpatch(repo, "check")  # main as it is now passes
    proc.communicate(timeout=120)
    assert proc.returncode == 0
    proc = _gitpatch(repo, "approve", "b", "--skip-checks")
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and "--reason" in err  # a usage error, nothing done
    assert git(repo, "show", "main:b.txt") == "1\n"
    assert len(checked(log)) == 2


def test_a_passing_batch_is_checked_once_for_all_its_entries(tmp_path: Path) -> None:
    repo, log = checked_repo(tmp_path / "repo")
    for name, old in (("x", "one\n"), ("y", "three\n"), ("z", "five\n")):
        Workspace.open(repo, mode="review", session=name).propose(edit("c.txt", old, "X\n"))
    done = Workspace.open(repo, mode="review").approve(["x", "y", "z"], "Pat", batch=True)
    assert [d.status for d in done] == ["approved"] * 3
    assert "Checks passed on the batch" in done[0].message
    assert checked(log) == _trees_of_main(repo, 1)  # one run, on the whole batch's result
    assert git(repo, "show", "main:c.txt") == "X\ntwo\nX\nfour\nX\n"


def test_a_failing_batch_is_split_until_the_culprit_is_alone(tmp_path: Path) -> None:
    repo, log = checked_repo(tmp_path / "repo")
    changes = {"a": ("a.txt", "1\n", "5\n"), "b": ("c.txt", "one\n", "1\n")}
    changes |= {"c": ("b.txt", "1\n", "6\n"), "d": ("c.txt", "five\n", "5\n")}
    for name, (path, old, new) in changes.items():
        Workspace.open(repo, mode="review", session=name).propose(edit(path, old, new))
    person = Workspace.open(repo, mode="review")
    done = person.approve(list(changes), "Pat", batch=True)
    # a + c together break the sum: c alone is marked, everything else lands
    assert [d.status for d in done] == ["approved", "approved", "checks_failed", "approved"]
    assert done[2].checks["output"] == "sum is 11"
    assert git(repo, "show", "main:b.txt") == "1\n"
    # the passing runs: the first half as a batch, then d alone on its result
    assert checked(log) == _trees_of_main(repo, 2)
