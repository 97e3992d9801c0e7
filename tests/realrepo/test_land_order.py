"""A person's plain ``git commit`` during auto-mode lands records no revert (issue 26, item 1).

``git commit`` without ``-a`` reads HEAD, then the index, and only then takes ``index.lock``.
A land that moved the branch before it wrote the index let such a commit pair the new HEAD
with the old index: a commit reverting the agent's change (about 1 land in 200-250 here).
A land in git's own order (files, the index renamed under the lock, the branch last) leaves
the commit the old HEAD with either index, and its own compare-and-swap on the branch then
fails, or the new HEAD with the new index. One window stays, git's own: a whole land that
falls between the commit's read of the index and its lock. The commit then writes the index
it read back (without the agent's change) before its compare-and-swap on HEAD fails, and the
person's next commit records the revert, as it would after a second git user's commit. It
showed only under load (1-2 in 1,000 lands at load 5-6); ``landrace.check`` counts a revert
recorded by the first commit after one that lost its race for HEAD apart
(``Outcome.git_window``), and everything else must hold.

Real processes (``bench/landrace.py``): the agent lands edits of ``shared.txt`` while the
person loops ``git add person.txt && git commit``. Whatever the interleaving: no commit or
reflog entry removes a line other than one the agent replaced, every land the agent was told
of is on the branch and on disk, no temp file was committed, ``git fsck --strict`` is clean.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import landrace

pytestmark = pytest.mark.slow

LANDS = 250


def test_a_persons_plain_commits_during_lands_record_no_revert(tmp_path: Path) -> None:
    name, kinds, with_editor = landrace.SCENARIOS[3]
    assert kinds == ("staged",) and not with_editor, name
    out = landrace.run(tmp_path, LANDS, kinds, with_editor)
    assert out.problems == []
    assert out.landed and out.person_commits  # both sides got through, not only refusals


def test_only_the_first_commit_after_a_lost_race_is_put_down_to_gits_window() -> None:
    """What ``check`` leaves out of the problems is exactly the revert that git's window
    explains: the person's first commit after one that lost its race for HEAD."""
    lost, made = [5], [3, 7, 9]
    assert landrace._after_a_lost_race("commit 0123abcd person staged 7", lost, made)
    assert not landrace._after_a_lost_race("commit 0123abcd person staged 9", lost, made)
    assert not landrace._after_a_lost_race("commit 0123abcd person staged 3", lost, made)
    assert not landrace._after_a_lost_race("commit 0123abcd race: update shared.txt", lost, made)
    assert not landrace._after_a_lost_race("commit 0123abcd person staged 7", [], made)
