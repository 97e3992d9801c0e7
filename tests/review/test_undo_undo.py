"""An undo is itself undoable (issue 25): by its own commit id, in auto and review mode, for
checkpoints and for ordinary proposals. Undoing an undo puts back exactly what it took away:
no ``git clean``, ignored and unrecorded files untouched byte for byte; and a refused undo
changes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pytest

from gitpatch import Workspace
from gitpatch.errors import ProposalClosed, ProposalNotFound
from gitpatch.review import CheckpointResult
from tests.doors.cli.clikit import gp, gp_json
from tests.gitkit import git, head, make_repo, repo_state

FILES = {
    "pkg/a.py": "def f():\n    return 1\n",
    "pkg/b.py": "B = 1\n",
    ".gitignore": ".venv/\nbuild/\n",
}
SR = "<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"
#: what a session's worktree holds that no checkpoint records: ignored folders, a stray file
AROUND = {
    ".venv/lib/site.py": b"venv\x00\xff",
    "build/calc.o": b"\x7fELF\r\n",
    "notes.md": b"agent notes\r\n",
}


def _note(repo: Path, commit: str) -> dict[str, object]:
    return json.loads(git(repo, "notes", "--ref=gitpatch", "show", commit))  # type: ignore[no-any-return]


def _tree(where: Path, commit: str = "HEAD") -> str:
    return git(where, "ls-tree", "-r", commit)


def _around(where: Path, *, ignored: bool = True) -> None:
    """The ignored folders (before a checkpoint); else the stray file (after it)."""
    for rel, data in AROUND.items():
        if (rel == "notes.md") == ignored:
            continue
        (where / rel).parent.mkdir(parents=True, exist_ok=True)
        (where / rel).write_bytes(data)


def _untouched(where: Path) -> None:
    for rel, data in AROUND.items():
        assert (where / rel).read_bytes() == data, rel


def _commands_ran(where: Path) -> None:
    """What a formatter and a generator leave: a change, an addition, a deletion."""
    (where / "pkg/a.py").write_text("def f():\n    return 1  # formatted\n")
    (where / "pkg/gen.py").write_text("GEN = 1\n")
    (where / "pkg/b.py").unlink()


def _recorded(where: Path) -> None:
    assert (where / "pkg/a.py").read_text().endswith("# formatted\n")
    assert (where / "pkg/gen.py").read_text() == "GEN = 1\n"
    assert not (where / "pkg/b.py").exists()


def _before(where: Path) -> None:
    assert (where / "pkg/a.py").read_text() == FILES["pkg/a.py"]
    assert not (where / "pkg/gen.py").exists()
    assert (where / "pkg/b.py").read_text() == "B = 1\n"


def _checkpointed(
    tmp_path: Path, mode: Literal["auto", "review"]
) -> tuple[Path, Workspace, Path, CheckpointResult]:
    """Session bot's worktree with ignored folders, a checkpoint of what commands changed,
    then a file no checkpoint records: (repo, the agent's Workspace, worktree, checkpoint)."""
    repo = make_repo(tmp_path / "repo", FILES, branch="main")
    ws = Workspace.open(repo, mode, session="bot")
    where = ws.plumbing.session_worktree().path
    _around(where)
    _commands_ran(where)
    cp = ws.checkpoint("fmt")
    _around(where, ignored=False)
    return repo, ws, where, cp


def test_an_auto_checkpoints_undo_is_undone_and_again(tmp_path: Path) -> None:
    repo, ws, where, cp = _checkpointed(tmp_path, "auto")
    assert {f.path for f in cp.files} == {"pkg/a.py", "pkg/gen.py", "pkg/b.py"}
    recorded_tree = _tree(where)

    undo = ws.undo(cp.proposal_id)
    assert f"undo {undo.version[:12]}" in undo.message
    _before(where)
    _untouched(where)
    assert _note(repo, cp.version)["status"] == "undone"

    redo = ws.undo(undo.version[:12])
    assert redo.status == "undone" and redo.proposal_id == cp.proposal_id
    assert f"the undo {undo.version[:12]} of proposal {cp.proposal_id}" in redo.message
    _recorded(where)
    _untouched(where)
    assert _tree(where) == recorded_tree
    assert git(where, "status", "--porcelain") == "?? notes.md\n"
    assert _note(repo, cp.version)["status"] == "applied"
    assert _note(repo, cp.version)["redone_as"] == redo.version
    assert _note(repo, undo.version)["status"] == "undone"

    # the undo of the undo is undoable too, and the checkpoint is live again meanwhile
    again = ws.undo(redo.version)
    _before(where)
    _untouched(where)
    assert _note(repo, cp.version)["status"] == "undone"
    assert _note(repo, undo.version)["status"] == "applied"
    assert ws.undo(again.version).status == "undone"
    _recorded(where)
    assert ws.undo().proposal_id == cp.proposal_id  # plain undo: the checkpoint, once more
    _before(where)
    _untouched(where)
    assert git(repo, "fsck", "--strict", "--no-progress") == ""


def test_an_ordinary_proposals_undo_is_undoable_and_plain_undo_walks_back(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo", FILES, branch="work")
    ws = Workspace.open(repo)
    one = ws.apply(SR.format(old="    return 1", new="    return 2"), path="pkg/a.py")
    two = ws.apply(SR.format(old="B = 1", new="B = 2"), path="pkg/b.py")
    (repo / "build").mkdir()
    (repo / "build/out.o").write_bytes(b"\x00o")
    first = ws.undo()
    assert first.proposal_id == two.proposal_id
    assert ws.undo(first.version).proposal_id == two.proposal_id
    assert (repo / "pkg/b.py").read_text() == "B = 2\n"
    # plain undo never picks an undo: it walks back to the newest change in effect
    assert ws.undo().proposal_id == two.proposal_id
    assert (repo / "pkg/b.py").read_text() == "B = 1\n"
    assert ws.undo().proposal_id == one.proposal_id
    assert (repo / "pkg/a.py").read_text() == FILES["pkg/a.py"]
    assert (repo / "build/out.o").read_bytes() == b"\x00o"
    assert git(repo, "status", "--porcelain") == ""


def test_undoing_an_approval_merges_undo_puts_back_what_it_brought(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES, branch="main")
    agent = Workspace.open(repo, "review", session="bot")
    pid = agent.apply(
        SR.format(old="    return 1", new="    return 2"), path="pkg/a.py"
    ).proposal_id
    person = Workspace.open(repo, "review")
    (repo / "pkg/b.py").write_text("B = 1\n# the person's commit\n")
    git(repo, "commit", "-qam", "person")
    approved = person.approve(pid, "Reviewer")
    undo = person.undo()
    assert (repo / "pkg/a.py").read_text() == FILES["pkg/a.py"]
    proposal = agent.show(pid)
    assert proposal.info.status == "undone"
    redo = person.undo(undo.version)
    assert (repo / "pkg/a.py").read_text().endswith("return 2\n")
    assert _note(repo, approved.version)["status"] == "approved"
    assert agent.show(pid).info.status == "approved"
    assert git(repo, "status", "--porcelain") == ""
    assert redo.version == head(repo, "main")


def test_a_review_checkpoint_approved_then_undone_and_its_undo_undone(tmp_path: Path) -> None:
    """Review mode: the checkpoint lands on the person's branch; the person's checkout and
    the session's worktree both follow each undo, and neither's other files move."""
    repo, agent, where, cp = _checkpointed(tmp_path, "review")
    person = Workspace.open(repo, "review")
    person.approve(cp.proposal_id, "Reviewer")
    (repo / "mine.txt").write_bytes(b"the person's own\r\n")
    _recorded(repo)

    undo = person.undo(cp.proposal_id)
    _before(repo)
    _before(where)
    _untouched(where)
    redo = person.undo(undo.version)
    _recorded(repo)
    _recorded(where)
    _untouched(where)
    assert (repo / "mine.txt").read_bytes() == b"the person's own\r\n"
    assert agent.show(cp.proposal_id).info.status == "approved"
    assert git(where, "rev-parse", "HEAD").strip() == redo.version
    assert git(repo, "fsck", "--strict", "--no-progress") == ""


def test_nothing_to_undo_and_an_undone_undo_refuse_and_change_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES, branch="work")
    ws = Workspace.open(repo)
    before = repo_state(repo)
    with pytest.raises(ProposalNotFound) as nothing:
        ws.undo()
    assert nothing.value.code == "proposal_not_found" and "nothing to undo" in nothing.value.message
    pid = ws.apply(SR.format(old="    return 1", new="    return 2"), path="pkg/a.py").proposal_id
    undo = ws.undo(pid)
    redo = ws.undo(undo.version)
    before = repo_state(repo)
    with pytest.raises(ProposalClosed) as closed:
        ws.undo(undo.version)
    assert closed.value.code == "proposal_closed"
    assert "already undone" in closed.value.message and redo.version[:12] not in closed.value.hint
    with pytest.raises(ProposalNotFound) as unknown:
        ws.undo("0123456789abcdef")
    assert "undo" in unknown.value.hint
    assert repo_state(repo) == before


def test_the_cli_undoes_an_undo(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES, branch="work")
    Workspace.open(repo).apply(SR.format(old="    return 1", new="    return 2"), path="pkg/a.py")
    undo = gp_json(repo, "undo")
    assert (repo / "pkg/a.py").read_text() == FILES["pkg/a.py"]
    redo = gp(repo, "undo", undo["version"][:12])
    assert redo.returncode == 0, redo.stderr
    assert "so its change is back" in redo.stdout
    assert (repo / "pkg/a.py").read_text().endswith("return 2\n")
    refused = gp(repo, "undo", undo["version"][:12])
    assert refused.returncode != 0 and refused.stderr.startswith("proposal_closed:")
