"""The person's own git and editor during auto-mode lands (issue 26, items 1-3).

Real processes on one checkout (``bench/landrace.py``): the agent lands edits of ``shared.txt``
while the person runs ``git commit -a`` in a loop and an editor appends a line to
``shared.txt`` every 10-20 ms. Whatever the timing: no commit or reflog entry removes a line
other than one the agent replaced (no revert of the agent's change is recorded, no line of the
editor's dropped), every line the editor wrote and every change the agent was told landed is
on disk and in the branch, no gitpatch temp file was ever committed, and ``git fsck --strict``
is clean. Lands refused on the way (``concurrent_update``, ``resource_conflict`` when the
person committed the file meanwhile) are fine.

Sized for the test suite (40 + 30 + 20 lands, 30-50 s on a loaded 2-core machine); the plain
``git commit`` loop is ``test_land_order.py``. ``python -m bench.landrace`` runs 1,000 of each
kind for docs/benchmarks.md, with the loops that are not tests because git itself leaves a gap
there: ``git stash`` (its ``reset --hard`` resolves HEAD when it starts, then moves HEAD back
to it against whatever HEAD holds when it ends) and ``git checkout`` (it resolves its target
branch when it starts and reads HEAD later, both without a lock: a commit in between makes it
a switch from the new commit to the old one, on the same branch). A land falling in such a
gap, like any other git command there (``--agent git``), can be undone by them;
docs/benchmarks.md has the rates, gitpatch's and git's own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import landrace

pytestmark = pytest.mark.slow


def test_lands_against_the_persons_commits(tmp_path: Path) -> None:
    _name, kinds, with_editor = landrace.SCENARIOS[0]
    out = landrace.run(tmp_path, 40, kinds, with_editor)
    assert out.problems == []
    assert out.landed and out.person_commits  # both sides got through, not only refusals


def test_lands_against_an_editor_appending_every_10_to_20_ms(tmp_path: Path) -> None:
    _name, kinds, with_editor = landrace.SCENARIOS[1]
    out = landrace.run(tmp_path, 30, kinds, with_editor)
    assert out.problems == []
    assert out.landed and out.editor_lines


def test_lands_against_an_editor_and_the_persons_commits(tmp_path: Path) -> None:
    _name, kinds, with_editor = landrace.SCENARIOS[2]
    out = landrace.run(tmp_path, 20, kinds, with_editor)
    assert out.problems == []
    assert out.editor_lines and out.person_commits
