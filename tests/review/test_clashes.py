"""Clashes to the line: changed line ranges, two sessions' open work meeting (or not), a
target that changed the same lines since a proposal's base, and ``gitpatch show`` saying
whether approving fast-forwards, merges or conflicts before it happens."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gitpatch.porcelain.workspace import Workspace
from gitpatch.review import clashes
from tests.gitkit import commit_on, edit, git, git_env
from tests.review.checkskit import checked_repo

BASE = b"one\ntwo\nthree\nfour\nfive\n"


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        (b"one\nTWO\nthree\nfour\nfive\n", [clashes.Span(2, 2)]),
        (b"one\ntwo\nthree\nfour\nfive\nsix\n", [clashes.Span(5, 5)]),  # added after line 5
        (b"zero\none\ntwo\nthree\nfour\nfive\n", [clashes.Span(1, 1)]),  # added at the top
        (b"one\nfour\nfive\n", [clashes.Span(2, 3)]),  # two lines deleted
        (b"ONE\ntwo\nthree\nfour\nFIVE\n", [clashes.Span(1, 1), clashes.Span(5, 5)]),
        (None, [clashes.Span(1, 5)]),  # the file deleted
    ],
)
def test_ranges_are_lines_of_the_base(new: bytes | None, expected: list[clashes.Span]) -> None:
    assert clashes.ranges(BASE, new) == expected


def test_spans_meet_when_they_overlap_or_touch() -> None:
    assert clashes.Span(2, 3).meets(clashes.Span(3, 4)) and clashes.Span(2, 2).meets(
        clashes.Span(3, 3)
    )
    assert not clashes.Span(1, 1).meets(clashes.Span(3, 3))
    assert (str(clashes.Span(2, 2)), str(clashes.Span(2, 4))) == ("line 2", "lines 2-4")


def test_two_sessions_far_apart_do_not_clash_and_near_ones_do(tmp_path: Path) -> None:
    repo, _log = checked_repo(tmp_path / "repo")
    ann = Workspace.open(repo, mode="review", session="ann")
    first = ann.propose(edit("c.txt", "one\n", "1\n")).proposal_id
    ben = Workspace.open(repo, mode="review", session="ben")
    ben.propose(edit("c.txt", "five\n", "5\n"))
    assert ann.plumbing.overlaps() == [] and ben.plumbing.overlaps() == []
    ben.propose(edit("c.txt", "two\n", "2\n"))
    assert ben.plumbing.overlaps() == [
        f"Another session also changes c.txt near your line 2: session ann (proposal {first}) "
        "changes line 1"
    ]
    assert ann.plumbing.overlaps(session="ben") == ben.plumbing.overlaps()


def test_lines_changed_on_the_target_since_the_base_are_named(tmp_path: Path) -> None:
    repo, _log = checked_repo(tmp_path / "repo")
    ann = Workspace.open(repo, mode="review", session="ann")
    proposed = ann.propose(edit("c.txt", "three\n", "3\n"))
    assert ann.plumbing.overlaps() == []
    commit_on(repo, {"c.txt": "one\ntwo\nTHREE\nfour\nfive\n"}, "a person's change")
    assert ann.plumbing.overlaps() == [
        f"main changed c.txt line 3 since your base {proposed.base[:12]}, where you change "
        "line 3: approving yours needs a merge and may conflict"
    ]


def _show(repo: Path, pid: str) -> str:
    args = [sys.executable, "-m", "gitpatch", "-C", str(repo), "show", "--stat", pid]
    done = subprocess.run(args, env=git_env(repo), capture_output=True, text=True, check=True)
    return done.stdout


def test_show_says_what_approving_would_do_before_it_happens(tmp_path: Path) -> None:
    repo, _log = checked_repo(tmp_path / "repo")
    ann = Workspace.open(repo, mode="review", session="ann")
    apart = ann.propose(edit("c.txt", "one\n", "1\n")).proposal_id
    assert "approving fast-forwards main" in _show(repo, apart)
    commit_on(repo, {"a.txt": "2\n"}, "a person's change elsewhere")
    assert "main moved on since its base: approving makes a merge commit on main" in _show(
        repo, apart
    )
    commit_on(repo, {"c.txt": "uno\ntwo\nthree\nfour\nfive\n"}, "the same line")
    shown = _show(repo, apart)
    assert "merging into main conflicts: c.txt: main changed line 1, proposal changed line 1" in (
        shown
    )
    assert git(repo, "status", "--porcelain") == ""
