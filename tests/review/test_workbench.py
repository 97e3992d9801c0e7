"""A session's workbench: its worktree in review mode (made lazily, kept at the stack's top),
checkpoints of what commands changed there, and ending sessions (issue 25)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import DirtyWorktree, InvalidArguments, ProposalNotFound
from tests.gitkit import git, git_commit_holding_index, head, let_go, make_repo, repo_state

FILES = {
    "pkg/a.py": "def f():\n    return 1\n",
    "pkg/b.py": "B = 1\n",
    "pkg/old.py": "OLD = 1\n",
    "run.sh": "echo run\n",
    ".gitignore": ".venv/\nbuild/\n",
}
SR = "<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"


def _agent(repo: Path, session: str = "bot") -> Workspace:
    return Workspace.open(repo, "review", session=session)


def _person(repo: Path) -> Workspace:
    return Workspace.open(repo, "review")


def _edit(ws: Workspace, old: str, new: str, path: str = "pkg/a.py") -> str:
    return ws.apply(SR.format(old=old, new=new), path=path).proposal_id


def test_an_edit_only_session_makes_no_worktree_and_names_none(repo: Path) -> None:
    ws = _agent(repo)
    result = ws.apply(SR.format(old="    return 1", new="    return 2"), path="pkg/a.py")
    assert result.worktree == ""
    assert "run your tests" not in result.message
    assert not (repo / ".git" / "gitpatch" / "worktrees" / "bot").exists()
    assert ws.sessions()[0].worktree == ""


def test_the_worktree_is_made_lazily_and_shows_the_stack_top(repo: Path) -> None:
    ws = _agent(repo)
    _edit(ws, "    return 1", "    return 2")
    bench = ws.plumbing.session_worktree()
    assert "Made the session's worktree" in bench.made and " s;" in bench.made
    assert (bench.path / "pkg/a.py").read_text() == "def f():\n    return 2\n"
    assert ws.plumbing.session_worktree().made == ""
    # the next edit shows there at once, and its result names the worktree
    result = ws.apply(SR.format(old="B = 1", new="B = 2"), path="pkg/b.py")
    assert result.worktree == str(bench.path)
    assert (bench.path / "pkg/b.py").read_text() == "B = 2\n"
    assert git(bench.path, "status", "--porcelain") == ""
    # the person's checkout never moved
    assert (repo / "pkg/a.py").read_text() == FILES["pkg/a.py"]


def test_a_checkpoint_records_every_kind_of_change_and_lists_what_it_leaves_out(
    repo: Path,
) -> None:
    git(repo, "config", "gitpatch.checkpointMaxBytes", "1000")
    ws = _agent(repo)
    where = ws.plumbing.session_worktree().path
    (where / "pkg/a.py").write_text("def f():\n    return 10\n")  # modified
    (where / "pkg/new.py").write_text("NEW = 1\n")  # added
    (where / "pkg/b.py").unlink()  # deleted
    os.rename(where / "pkg/old.py", where / "pkg/renamed.py")  # renamed
    os.chmod(where / "run.sh", os.stat(where / "run.sh").st_mode | stat.S_IXUSR)  # mode
    (where / ".venv").mkdir()
    (where / ".venv/lib.py").write_text("ignored\n")
    (where / "big.bin").write_bytes(b"x" * 2000)
    nested = where / "vendor"
    nested.mkdir()
    git(nested, "init", "-q")
    result = ws.checkpoint("ruff format .")
    assert result.recorded and result.status == "proposed"
    actions = {f.path: f.action for f in result.files}
    assert actions == {
        "pkg/a.py": "update",
        "pkg/new.py": "add",
        "pkg/b.py": "delete",
        "pkg/old.py": "delete",
        "pkg/renamed.py": "add",
        "run.sh": "update",
    }
    assert set(result.left_out) == {
        ".venv/ (ignored)",
        "big.bin (over 1000 bytes: 2000)",
        "vendor/ (a repository of its own)",
    }
    assert "big.bin" in result.message and ".venv/" in result.message
    commit = result.version
    assert "Gitpatch-Command: ruff format ." in git(repo, "log", "-1", "--format=%B", commit)
    assert "gitpatch session bot" in git(repo, "log", "-1", "--format=%an", commit)
    assert git(repo, "ls-tree", commit, "run.sh").startswith("100755")
    assert git(repo, "diff", "-M", "--name-status", f"{commit}^", commit).count("R100") == 1
    # the worktree now shows the checkpoint as its HEAD, with nothing left unrecorded but
    # what was left out
    assert head(where) == commit
    assert git(where, "status", "--porcelain").splitlines() == ["?? big.bin", "?? vendor/"]
    shown = _person(repo).show(result.proposal_id)
    assert "pkg/new.py" in shown.info.files


def test_nothing_changed_makes_no_proposal(repo: Path) -> None:
    ws = _agent(repo)
    where = ws.plumbing.session_worktree().path
    (where / "build").mkdir()
    (where / "build/out.o").write_bytes(b"\0")
    before = git(repo, "for-each-ref")
    result = ws.checkpoint("make")
    assert not result.recorded and result.proposal_id == ""
    assert "no proposal was made" in result.message and "build/ (ignored)" in result.message
    assert git(repo, "for-each-ref") == before
    # a file touched without a change of content is no change either
    os.utime(where / "pkg/a.py", (1, 1))
    assert not ws.checkpoint().recorded


def test_rejecting_a_checkpoint_restores_exactly_what_it_recorded(repo: Path) -> None:
    ws = _agent(repo)
    _edit(ws, "    return 1", "    return 2")
    where = ws.plumbing.session_worktree().path
    (where / "pkg/b.py").write_text("B = 'formatted'\n")
    (where / "pkg/gen.py").write_text("GEN = 1\n")
    (where / "pkg/old.py").unlink()
    cp = ws.checkpoint("black .")
    # after it: an ignored folder, and an untracked file no checkpoint recorded
    (where / ".venv").mkdir()
    (where / ".venv/site.py").write_bytes(b"venv\x00bytes")
    (where / "notes.txt").write_bytes(b"the agent's scratch\r\n")
    _person(repo).reject(cp.proposal_id, "Reviewer", "no reformatting, please")
    assert (where / "pkg/b.py").read_text() == "B = 1\n"
    assert not (where / "pkg/gen.py").exists()
    assert (where / "pkg/old.py").read_text() == "OLD = 1\n"
    assert (where / "pkg/a.py").read_text() == "def f():\n    return 2\n"  # the edit stays
    assert (where / ".venv/site.py").read_bytes() == b"venv\x00bytes"
    assert (where / "notes.txt").read_bytes() == b"the agent's scratch\r\n"
    # the agent's next result tells it, with the reason
    notices = _agent(repo).plumbing.notices()
    assert any(cp.proposal_id in n and "no reformatting, please" in n for n in notices)


def test_an_edit_checkpoints_unrecorded_changes_first(repo: Path) -> None:
    ws = _agent(repo)
    where = ws.plumbing.session_worktree().path
    (where / "pkg/a.py").write_text("def f():\n    return 1  # formatted\n")
    result = ws.apply(SR.format(old="B = 1", new="B = 3"), path="pkg/b.py")
    assert "checkpointed first" in result.message
    entries = [p for p in _person(repo).proposals() if p.status == "proposed"]
    assert len(entries) == 2
    assert (where / "pkg/a.py").read_text().endswith("# formatted\n")
    assert (where / "pkg/b.py").read_text() == "B = 3\n"
    assert git(where, "status", "--porcelain") == ""


def test_approval_rebases_the_worktree_on_the_target(repo: Path) -> None:
    ws = _agent(repo)
    where = ws.plumbing.session_worktree().path
    (where / "pkg/gen.py").write_text("GEN = 2\n")
    cp = ws.checkpoint("codegen")
    _edit(ws, "    return 1", "    return 5")
    _person(repo).approve("bot", "Reviewer")
    assert head(where) == head(repo, "work")
    assert (repo / "pkg/gen.py").read_text() == "GEN = 2\n"  # the accepted checkpoint landed
    assert git(where, "status", "--porcelain") == ""
    assert cp.proposal_id not in [p.id for p in _person(repo).proposals() if p.status == "proposed"]


def test_the_persons_uncommitted_work_is_never_read_into_a_checkpoint(repo: Path) -> None:
    (repo / "pkg/a.py").write_text("def f():\n    return 'person'\n")
    (repo / "mine.txt").write_text("person's file\n")
    ws = _agent(repo)
    where = ws.plumbing.session_worktree().path
    (where / "pkg/b.py").write_text("B = 9\n")
    result = ws.checkpoint()
    assert [f.path for f in result.files] == ["pkg/b.py"]
    assert (where / "pkg/a.py").read_text() == FILES["pkg/a.py"]
    assert not (where / "mine.txt").exists()


def test_a_worktree_in_the_way_of_a_rejection_refuses_to_move_and_loses_nothing(
    repo: Path,
) -> None:
    ws = _agent(repo)
    where = ws.plumbing.session_worktree().path
    (where / "pkg/b.py").write_text("B = 2\n")
    cp = ws.checkpoint()
    (where / "pkg/b.py").write_text("B = 3  # not recorded\n")
    _person(repo).reject(cp.proposal_id, "Reviewer", "no")  # the verdict stands
    assert (where / "pkg/b.py").read_text() == "B = 3  # not recorded\n"
    with pytest.raises(DirtyWorktree):
        _agent(repo).checkpoint()
    assert (where / "pkg/b.py").read_text() == "B = 3  # not recorded\n"


def test_auto_mode_checkpoints_on_the_session_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES, branch="main")
    ws = Workspace.open(repo, "auto", session="bot")
    where = ws.plumbing.session_worktree().path
    assert where != repo
    (where / "pkg/gen.py").write_text("GEN = 3\n")
    result = ws.checkpoint("gen")
    assert result.status == "applied"
    assert head(repo, "gitpatch/session/bot") == result.version
    assert git(where, "status", "--porcelain") == ""
    assert ws.undo(result.proposal_id).status == "undone"
    assert not (where / "pkg/gen.py").exists()


def test_errors_change_nothing(repo: Path) -> None:
    before = repo_state(repo)
    with pytest.raises(InvalidArguments) as caught:
        Workspace.open(repo, "review").checkpoint()
    assert caught.value.code == "invalid_arguments"
    with pytest.raises(InvalidArguments):
        _agent(repo).checkpoint("a\0b")
    git(repo, "config", "gitpatch.checkpointMaxBytes", "lots")
    with pytest.raises(InvalidArguments, match="checkpointMaxBytes"):
        _agent(repo).checkpoint()
    git(repo, "config", "--unset", "gitpatch.checkpointMaxBytes")
    with pytest.raises(ProposalNotFound):
        _person(repo).end_session("nobody")
    assert repo_state(repo) == before


def test_ending_a_session(repo: Path) -> None:
    ws = _agent(repo)
    where = ws.plumbing.session_worktree().path
    (where / "pkg/gen.py").write_text("GEN = 4\n")
    cp = ws.checkpoint()
    before = repo_state(repo)
    with pytest.raises(InvalidArguments, match="open proposals"):
        _person(repo).end_session("bot")
    _person(repo).approve(cp.proposal_id, "Reviewer")
    (where / "pkg/late.py").write_text("LATE = 1\n")
    (where / "build").mkdir()
    (where / "build/x.o").write_bytes(b"o")
    held = repo_state(where)
    for force in (False, True):  # never discarded, not even with force
        with pytest.raises(DirtyWorktree, match="no checkpoint recorded: pkg/late.py") as err:
            _person(repo).end_session("bot", force=force)
        assert "Checkpoint them" in err.value.hint and "--force never" in err.value.hint
        assert repo_state(where) == held
    (where / "pkg/late.py").unlink()
    held = repo_state(where)
    with pytest.raises(DirtyWorktree, match="files git ignores") as ignored:
        _person(repo).end_session("bot")
    assert ignored.value.details["ignored"] == ["build/"] and "--force" in ignored.value.hint
    assert repo_state(where) == held and (where / "build/x.o").read_bytes() == b"o"
    said = _person(repo).end_session("bot", force=True)
    assert "removed its worktree" in said and "as --force asked: build/" in said
    assert not where.exists()
    assert "bot" not in git(repo, "worktree", "list")
    assert _person(repo).sessions() == []
    assert before["refs"] != repo_state(repo)["refs"]  # the approval moved work


def test_ending_an_auto_session_deletes_its_branch_once_approved(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES, branch="main")
    ws = Workspace.open(repo, "auto", session="bot")
    ws.apply(SR.format(old="    return 1", new="    return 7"), path="pkg/a.py")
    where = ws.plumbing.session_worktree().path
    person = Workspace.open(repo, "review")
    with pytest.raises(InvalidArguments, match="commit"):
        person.end_session("bot")
    person.approve("bot", "Reviewer")
    said = person.end_session("bot")
    assert "deleted gitpatch/session/bot" in said
    assert not where.exists()
    assert git(repo, "branch", "--list", "gitpatch/session/bot") == ""
    assert (repo / "pkg/a.py").read_text().endswith("return 7\n")


def test_absolute_paths_in_the_worktree_name_the_same_files(repo: Path) -> None:
    ws = _agent(repo)
    where = ws.plumbing.session_worktree().path
    result = ws.apply(SR.format(old="B = 1", new="B = 4"), path=str(where / "pkg/b.py"))
    assert [f.path for f in result.files] == ["pkg/b.py"]
    assert (where / "pkg/b.py").read_text() == "B = 4\n"
    assert ws.read(str(where / "pkg/b.py")).content == "B = 4\n"


def test_a_change_arriving_while_the_session_ends_puts_the_worktree_back(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command still running in the worktree writes between the check and the removal."""
    from gitpatch.review import _sessions

    where = _agent(repo).plumbing.session_worktree().path

    def late_write(point: str) -> None:
        if point == "session.set_aside":
            (aside,) = [p for p in where.parent.iterdir() if p.name.startswith(".ending-")]
            (aside / "late.py").write_text("LATE = 1\n")

    monkeypatch.setattr(_sessions, "crashpoint", late_write)
    with pytest.raises(DirtyWorktree, match="late.py"):
        _person(repo).end_session("bot", force=True)
    assert (where / "late.py").read_text() == "LATE = 1\n"
    assert [s.worktree for s in _person(repo).sessions()] == [str(where)]


def test_a_set_aside_worktree_with_an_unrecorded_change_is_put_back_not_swept(
    repo: Path,
) -> None:
    where = _agent(repo).plumbing.session_worktree().path
    aside = where.with_name(f".ending-{where.name}-1")
    where.rename(aside)  # as an end killed after setting it aside leaves it
    (aside / "pkg/late.py").write_text("LATE = 1\n")
    assert [s.worktree for s in _person(repo).sessions()] == [str(where)]
    assert (where / "pkg/late.py").read_text() == "LATE = 1\n" and not aside.exists()
    (where / "pkg/late.py").unlink()
    where.rename(aside)
    assert _person(repo).sessions() == []  # nothing unrecorded: it is swept
    assert not aside.exists() and not where.exists()


# -- auto mode on a protected branch: the worktree made when first needed -----------------------


def _auto(tmp_path: Path) -> tuple[Path, Workspace]:
    """A repository on protected main and session bot's first edit (no worktree yet)."""
    repo = make_repo(tmp_path / "repo", FILES, branch="main")
    ws = Workspace.open(repo, "auto", session="bot")
    done = ws.apply(SR.format(old="    return 1", new="    return 2"), path="pkg/a.py")
    assert done.worktree == "" and "run your tests" not in done.message
    assert ws.plumbing.worktree is None and not (repo / ".git/gitpatch/worktrees/bot").exists()
    return repo, ws


def test_an_auto_checkpoint_makes_the_worktree_and_says_so(tmp_path: Path) -> None:
    repo, ws = _auto(tmp_path)
    result = ws.checkpoint("make")
    where = repo / ".git/gitpatch/worktrees/bot"
    assert not result.recorded and result.worktree == str(where)
    assert result.made.startswith(f"Made the session's worktree at {where} (")
    assert "files checked out in" in result.made
    assert (where / "pkg/a.py").read_text() == "def f():\n    return 2\n"
    assert ws.checkpoint().made == ""  # made once
    # from now on the edits land there, and their results name it
    later = ws.apply(SR.format(old="B = 1", new="B = 2"), path="pkg/b.py")
    assert later.worktree == str(where) and f"{where}: run your tests there" in later.message
    assert (where / "pkg/b.py").read_text() == "B = 2\n"
    assert git(where, "status", "--porcelain") == ""
    assert (repo / "pkg/a.py").read_text() == FILES["pkg/a.py"]


def test_an_auto_run_makes_the_worktree_then_checkpoints_there(tmp_path: Path) -> None:
    repo, ws = _auto(tmp_path)
    ran = ws.run(["sh", "-c", "cat pkg/a.py > pkg/copy.py"])
    assert ran.exit_code == 0 and ran.made.startswith("Made the session's worktree at ")
    assert ran.checkpoint.recorded and [f.path for f in ran.checkpoint.files] == ["pkg/copy.py"]
    shown = git(repo, "show", "gitpatch/session/bot:pkg/copy.py")
    assert shown == "def f():\n    return 2\n"


def test_a_worktree_made_by_another_process_is_worked_in_from_the_next_call(
    tmp_path: Path,
) -> None:
    repo, ws = _auto(tmp_path)
    other = Workspace.open(repo, "auto", session="bot")  # gitpatch session path, elsewhere
    where = other.plumbing.session_worktree().path
    result = ws.apply(SR.format(old="B = 1", new="B = 2"), path="pkg/b.py")
    assert result.worktree == str(where)
    assert (where / "pkg/b.py").read_text() == "B = 2\n"
    assert git(where, "status", "--porcelain") == ""


def test_an_edit_of_a_lazy_session_refuses_to_land_beside_a_worktree_made_meanwhile(
    tmp_path: Path,
) -> None:
    from gitpatch.review import checkpoints, workbench

    repo, ws = _auto(tmp_path)
    lazy = ws.plumbing.context
    Workspace.open(repo, "auto", session="bot").plumbing.session_worktree()
    before = repo_state(repo)
    with pytest.raises(workbench.MadeMeanwhile):
        checkpoints.around_edit(lazy, lambda: pytest.fail("landed beside the worktree"))
    assert repo_state(repo) == before


def test_a_checkpoint_waits_for_a_git_command_that_holds_the_worktrees_index(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A killed agent's ``git add`` runs on after it: the next checkpoint waits for its
    ``index.lock`` as a land does, instead of failing on git's "File exists"."""
    from gitpatch.checkout import preflight

    ws = _agent(repo)
    where = ws.plumbing.session_worktree().path
    (where / "pkg/a.py").write_text("def f():\n    return 7\n")
    proc = git_commit_holding_index(where, tmp_path / "editor-fifo")
    real_sleep = time.sleep

    def waited(seconds: float) -> None:  # the checkpoint is waiting: now git finishes
        if proc.returncode is None:
            let_go(tmp_path / "editor-fifo", proc)
        real_sleep(seconds)

    monkeypatch.setattr(preflight.time, "sleep", waited)
    try:
        result = ws.checkpoint("pytest")
        assert proc.returncode is not None, "the checkpoint never waited"
    finally:
        if proc.returncode is None:  # a failing checkpoint leaves no git or editor behind
            let_go(tmp_path / "editor-fifo", proc)
    assert result.recorded and [f.path for f in result.files] == ["pkg/a.py"]
    shown = git(repo, "show", f"gitpatch/{result.proposal_id}:pkg/a.py")
    assert shown == "def f():\n    return 7\n"


def test_a_checkpoint_refuses_while_a_git_command_keeps_the_worktrees_index(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitpatch.checkout import preflight
    from gitpatch.errors import ConcurrentUpdate

    ws = _agent(repo)
    where = ws.plumbing.session_worktree().path
    (where / "pkg/a.py").write_text("def f():\n    return 7\n")
    proc = git_commit_holding_index(where, tmp_path / "editor-fifo")
    monkeypatch.setattr(preflight, "INDEX_LOCK_WAIT_SECONDS", 0.05)
    before = repo_state(repo)
    try:
        with pytest.raises(ConcurrentUpdate, match="index.lock"):
            ws.checkpoint("pytest")
        assert repo_state(repo) == before
        assert git(where, "status", "--porcelain") == " M pkg/a.py\n"
    finally:
        let_go(tmp_path / "editor-fifo", proc)
    assert ws.checkpoint("pytest").recorded  # once git is done, the next one records it
