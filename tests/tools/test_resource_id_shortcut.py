"""review5: ``resource_id``'s shortcut (the id found at the first parent, ``_known``) gives the
id the history walk gives, on a real repository whose first-parent history edits, moves,
deletes and re-creates files, replaces a file by a folder and merges a side branch.

Every (commit, path) is asked in the order an agent's edits ask (oldest first, the cache warm:
the shortcut answers whenever the parent was walked) and again with the cache cleared before
each lookup (the walk alone); the two must be equal everywhere.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest

from gitpatch.store import Store
from gitpatch.tools.storage import base
from tests.gitkit import git, make_repo


def _history(repo: Path, steps: int, seed: int) -> list[str]:
    """Commit ``steps`` random changes on ``work`` (a seeded sequence, not a timing); the
    commits, oldest first."""
    rng = random.Random(seed)
    commits = [git(repo, "rev-parse", "HEAD").strip()]
    for step in range(steps):
        tracked = git(repo, "ls-files").split()
        op = rng.choice(["edit", "edit", "move", "delete", "add", "recreate", "merge", "dir"])
        target = rng.choice(tracked) if tracked else None
        if op == "edit" and target:
            with (repo / target).open("a") as fh:
                fh.write(f"edit {step}\n")
        elif op == "move" and target:
            new = f"moved{step}/{Path(target).name}"
            (repo / new).parent.mkdir(parents=True, exist_ok=True)
            git(repo, "mv", target, new)
        elif op == "delete" and target and len(tracked) > 2:
            git(repo, "rm", "-q", target)
        elif op == "recreate" and target:
            git(repo, "rm", "-q", target)
            git(repo, "commit", "-qm", f"delete {target}")
            commits.append(git(repo, "rev-parse", "HEAD").strip())
            (repo / target).parent.mkdir(parents=True, exist_ok=True)
            (repo / target).write_text(f"created again at {step}\n" * 3)
        elif op == "dir" and target:
            git(repo, "rm", "-q", target)
            (repo / target).mkdir(parents=True)
            (repo / target / "inner.txt").write_text(f"inner {step}\n" * 3)
        elif op == "merge":
            git(repo, "checkout", "-q", "-b", f"side{step}")
            (repo / f"side{step}.txt").write_text(f"side {step}\n" * 4)
            git(repo, "add", "-A")
            git(repo, "commit", "-qm", f"side {step}")
            git(repo, "checkout", "-q", "work")
            (repo / f"main{step}.txt").write_text(f"main {step}\n" * 4)
            git(repo, "add", "-A")
            git(repo, "commit", "-qm", f"main {step}")
            commits.append(git(repo, "rev-parse", "HEAD").strip())
            git(repo, "merge", "-q", "--no-edit", f"side{step}")
            commits.append(git(repo, "rev-parse", "HEAD").strip())
            continue
        else:
            (repo / f"f{step}.txt").write_text(f"new file {step}\n" * 4)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"{op} {step}", "--allow-empty")
        commits.append(git(repo, "rev-parse", "HEAD").strip())
    return commits


def test_the_shortcut_gives_the_walks_id_on_every_commit_and_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {f"f{i}.txt": f"file {i} with enough text to be seen as moved\n" * 4 for i in range(5)}
    repo = make_repo(tmp_path / "r", files)
    commits = _history(repo, 60, seed=5)
    store = Store.open(repo)

    def paths(commit: str) -> list[str]:
        return git(repo, "ls-tree", "-r", "--name-only", commit).split()

    walks: list[object] = []
    real = Store.first_parents

    def counted(self: Store, tip: pygit2.Oid) -> Iterator[pygit2.Commit]:
        walks.append(tip)  # the real walk still runs
        return real(self, tip)

    monkeypatch.setattr(Store, "first_parents", counted)
    base._KNOWN.clear()
    warm = {
        (c, p): base.resource_id(store, pygit2.Oid(hex=c), p) for c in commits for p in paths(c)
    }
    shortcut = len(warm) - len(walks)  # lookups the shortcut (or the head's own entry) answered
    walked = {}
    for c in commits:
        for p in paths(c):
            base._KNOWN.clear()
            walked[(c, p)] = base.resource_id(store, pygit2.Oid(hex=c), p)
    base._KNOWN.clear()
    differ = {k: (warm[k], walked[k]) for k in warm if warm[k] != walked[k]}
    assert differ == {}
    assert len(warm) > 200  # the history is not trivial
    assert shortcut > len(warm) // 2  # and the shortcut answered most of the warm lookups
