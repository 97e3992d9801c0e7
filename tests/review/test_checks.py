"""The project's checks on approval, with the real git binary and real check processes.

Two sessions whose changes each pass alone and break the checks together; a cached tree runs
nothing; a skip is recorded in the commit; bad settings change nothing; a check past its time
is stopped; the scratch checkout stays out of the person's checkout and ``git worktree list``;
sparse checkouts and linked worktrees.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch.core.model import Proposal, Replace, UpdateFile
from gitpatch.errors import ChecksFailed, InvalidArguments
from gitpatch.porcelain.workspace import Workspace
from tests.gitkit import edit, git, head, make_repo
from tests.gitkit import repo_state as snapshot
from tests.review.checkskit import CHECK, FILES, checked, checked_repo, checks_toml

MAIN = "refs/heads/main"


def _sessions(repo: Path) -> tuple[Workspace, Workspace]:
    alice = Workspace.open(repo, mode="review", session="alice")
    bob = Workspace.open(repo, mode="review", session="bob")
    return alice, bob


def _without_notes(state: dict[str, str]) -> dict[str, str]:
    refs = state["refs"].splitlines()
    return {**state, "refs": "\n".join(r for r in refs if not r.startswith("refs/notes/"))}


def test_an_agent_check_is_cached_and_the_approval_runs_nothing(tmp_path: Path) -> None:
    repo, log = checked_repo(tmp_path / "repo")
    alice, _bob = _sessions(repo)
    alice.propose(edit("a.txt", "1\n", "5\n"))
    report = alice.check()
    assert report.passed and not report.cached
    assert [r.output for r in report.runs][0] == "sum is 6"
    assert checked(log) == [report.tree]
    again = alice.check()
    assert again.cached and checked(log) == [report.tree]  # nothing ran again
    person = Workspace.open(repo, mode="review")
    result = person.approve("alice", "Pat")
    assert "cached" in result.message
    assert checked(log) == [report.tree]
    assert git(repo, "rev-parse", "main^{tree}").strip() == report.tree
    # where the result is kept, and what the person sees of the scratch checkout: nothing
    cached = list((repo / ".git" / "gitpatch" / "checks" / "passed").iterdir())
    assert [p.name.split("-")[0] for p in cached] == [report.tree]
    assert git(repo, "worktree", "list").count("\n") == 1
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""


def test_two_sessions_passing_alone_and_failing_together(tmp_path: Path) -> None:
    repo, log = checked_repo(tmp_path / "repo")
    alice, bob = _sessions(repo)
    alice.propose(edit("a.txt", "1\n", "5\n"))
    second = bob.propose(edit("b.txt", "1\n", "6\n"))
    assert alice.check().passed and bob.check().passed  # 5 + 1 and 1 + 6: each passes alone
    person = Workspace.open(repo, mode="review")
    person.approve("alice", "Pat")
    landed = head(repo, MAIN)
    before = snapshot(repo)
    with pytest.raises(ChecksFailed) as caught:
        person.approve("bob", "Pat")
    assert caught.value.code == "checks_failed"
    assert caught.value.details["exit_code"] == 1
    assert caught.value.details["output"] == "sum is 11"
    # nothing landed: main, the proposal and the disk as they were; only the note says why
    assert head(repo, MAIN) == landed
    assert _without_notes(snapshot(repo)) == _without_notes(before)
    assert git(repo, "status", "--porcelain") == ""
    # the agent's next result and show_proposal carry the check, its exit code and output
    told = bob.plumbing.notices()
    assert len(told) == 1 and "failed the checks" in told[0] and "sum is 11" in told[0]
    info = bob.show(second.proposal_id).info
    assert info.status == "checks_failed"
    run = info.checks["runs"][0]
    assert (run["name"], run["exit_code"], run["output"]) == ("python3 check.py", 1, "sum is 11")
    # the checks stop at the first failure (the log check never ran) and a failure is not cached
    failed = info.checks["tree"]
    assert failed not in checked(log)
    passed = repo / ".git" / "gitpatch" / "checks" / "passed"
    assert not [p for p in passed.iterdir() if p.name.startswith(failed)]
    # still open: fixed on top, it lands (checked on the new result)
    bob.propose(edit("b.txt", "6\n", "2\n"))
    result = person.approve("bob", "Pat")
    assert result.status == "approved"
    assert git(repo, "show", "main:b.txt") == "2\n"


def test_skipping_the_checks_needs_a_reason_and_is_recorded_in_the_commit(tmp_path: Path) -> None:
    repo, log = checked_repo(tmp_path / "repo")
    alice, _bob = _sessions(repo)
    alice.propose(edit("a.txt", "1\n", "50\n"))
    person = Workspace.open(repo, mode="review")
    before = snapshot(repo)
    for bad in ("", "  ", "two\nlines"):
        with pytest.raises(InvalidArguments):
            person.approve("alice", "Pat", skip_checks=bad)
        assert snapshot(repo) == before
    result = person.approve("alice", "Pat", skip_checks="the sum rule is being changed")
    assert "Checks skipped: the sum rule is being changed" in result.message
    trailers = git(repo, "log", "-1", "--format=%(trailers)", "main")
    assert "Gitpatch-Checks-Skipped: the sum rule is being changed" in trailers
    assert git(repo, "show", "main:a.txt") == "50\n"
    assert checked(log) == []  # nothing ran


@pytest.mark.parametrize(
    "table",
    [
        '[checks]\nrun = "make test"\n',
        "[checks]\nrun = [42]\n",
        '[checks]\nrun = ["true"]\ntimeout = 0\n',
        '[checks]\nrun = [{ run = "true", timeout = "soon" }]\n',
        '[checks]\nrun = [{ name = "x" }]\n',
    ],
)
def test_bad_checks_settings_refuse_the_approval_and_change_nothing(
    tmp_path: Path, table: str
) -> None:
    repo = make_repo(tmp_path / "repo", FILES, "main")
    alice = Workspace.open(repo, mode="review", session="alice")
    alice.propose(edit("a.txt", "1\n", "5\n"))
    person = Workspace.open(repo, mode="review")
    (repo / ".gitpatch.toml").write_text(table)  # the person's file, read at each approval
    before = snapshot(repo)
    with pytest.raises(InvalidArguments) as caught:
        person.approve("alice", "Pat")
    assert ".gitpatch.toml" in caught.value.message and caught.value.hint
    assert snapshot(repo) == before


def test_a_check_past_its_timeout_is_stopped_and_fails(tmp_path: Path) -> None:
    toml = '[checks]\nrun = [{ run = "echo started; sleep 60", name = "slow", timeout = 0.5 }]\n'
    repo = make_repo(tmp_path / "repo", {**FILES, ".gitpatch.toml": toml}, "main")
    alice = Workspace.open(repo, mode="review", session="alice")
    alice.propose(edit("a.txt", "1\n", "5\n"))
    report = alice.check()
    assert not report.passed
    run = report.runs[0]
    assert run.timed_out and run.exit_code is None and run.output == "started"
    assert "ran out of" in report.summary()


def test_checks_see_exactly_the_tree_not_leftovers_of_an_earlier_run(tmp_path: Path) -> None:
    # the check fails if a file an earlier run wrote (ignored or not) is still there
    check = (
        "test ! -e left.txt && test ! -e build/x.o && touch left.txt && mkdir -p build "
        "&& touch build/x.o"
    )
    toml = f"[checks]\nrun = [{check!r}]\n".replace("'", '"')
    files = {**FILES, ".gitpatch.toml": toml, ".gitignore": "build/\n"}
    repo = make_repo(tmp_path / "repo", files, "main")
    alice = Workspace.open(repo, mode="review", session="alice")
    alice.propose(edit("a.txt", "1\n", "2\n"))
    assert alice.check().passed
    alice.propose(edit("a.txt", "2\n", "3\n"))
    report = alice.check()
    assert report.passed and not report.cached, report.runs


def test_a_sparse_checkout_without_the_file_still_runs_every_check_on_every_file(
    tmp_path: Path,
) -> None:
    repo, log = checked_repo(tmp_path / "repo")
    git(repo, "sparse-checkout", "set", "--no-cone", "/a.txt")
    assert not (repo / ".gitpatch.toml").exists() and not (repo / "check.py").exists()
    alice = Workspace.open(repo, mode="review", session="alice")
    alice.propose(edit("b.txt", "1\n", "9\n"))
    person = Workspace.open(repo, mode="review")
    with pytest.raises(ChecksFailed) as caught:
        person.approve("alice", "Pat")  # 1 + 9: the committed checks ran, on the whole tree
    assert caught.value.details["output"] == "sum is 10" and not checked(log)
    assert head(repo, MAIN) == git(repo, "rev-parse", "HEAD").strip()
    assert sorted(p.name for p in repo.iterdir()) == [".git", "a.txt"]


def test_approving_from_a_linked_worktree_uses_the_same_cache(tmp_path: Path) -> None:
    repo, log = checked_repo(tmp_path / "repo")
    alice = Workspace.open(repo, mode="review", session="alice")
    alice.propose(edit("a.txt", "1\n", "2\n"))
    tree = alice.check().tree
    git(repo, "checkout", "-q", "-b", "elsewhere")  # main is then checked out nowhere
    git(repo, "worktree", "add", "-q", str(tmp_path / "linked"), "-b", "side")
    linked = Workspace.open(tmp_path / "linked", mode="review", branch="main")
    result = linked.approve("alice", "Pat")
    assert "cached" in result.message and checked(log) == [tree]
    assert git(repo, "show", "main:a.txt") == "2\n"


def test_no_checks_configured_lands_as_before(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {**FILES, "check.py": CHECK}, "main")
    alice = Workspace.open(repo, mode="review", session="alice")
    alice.propose(edit("a.txt", "1\n", "50\n"))
    result = Workspace.open(repo, mode="review").approve("alice", "Pat")
    assert result.message.endswith(".") and "hecks" not in result.message
    assert not (repo / ".git" / "gitpatch" / "checks").exists()


def test_checks_toml_shape_is_documented_in_the_template() -> None:
    from gitpatch.workspace import config

    assert "[checks]" in config.TEMPLATE and "timeout" in config.TEMPLATE
    assert "python3 check.py" in checks_toml(Path("/x"))


def test_checks_see_the_tree_not_the_persons_staged_or_uncommitted_work(tmp_path: Path) -> None:
    repo, _log = checked_repo(tmp_path / "repo")
    alice = Workspace.open(repo, mode="review", session="alice")
    alice.propose(edit("a.txt", "1\n", "5\n"))
    (repo / "b.txt").write_text("7\n")  # staged: 5 + 7 would fail
    git(repo, "add", "b.txt")
    (repo / "c.txt").write_text("the person's own edit\n")  # uncommitted
    result = Workspace.open(repo, mode="review").approve("alice", "Pat")
    assert "sum is" not in result.message and result.status == "approved"
    assert git(repo, "show", "main:a.txt") == "5\n"
    assert git(repo, "diff", "--cached", "--name-only") == "b.txt\n"
    assert (repo / "c.txt").read_text() == "the person's own edit\n"


def test_an_autocrlf_repository_checks_what_git_would_check_out(tmp_path: Path) -> None:
    script = "import sys\nsys.exit(open('a.txt', 'rb').read() != b'5\\r\\n')\n"
    toml = '[checks]\nrun = ["python3 crlf.py"]\n'
    files = {**FILES, ".gitpatch.toml": toml, "crlf.py": script}
    repo = make_repo(tmp_path / "repo", files, "main")
    git(repo, "config", "core.autocrlf", "true")
    alice = Workspace.open(repo, mode="review", session="alice")
    alice.propose(edit("a.txt", "1\n", "5\n"))
    report = alice.check()
    assert report.passed, report.runs  # the scratch checkout wrote CRLF, as git does here
    Workspace.open(repo, mode="review").approve("alice", "Pat")
    assert git(repo, "show", "main:a.txt") == "5\n"  # the blob as git add would store it
    assert git(repo, "status", "--porcelain") == ""


def test_approving_some_hunks_checks_exactly_what_those_hunks_land(tmp_path: Path) -> None:
    repo, log = checked_repo(tmp_path / "repo")
    alice = Workspace.open(repo, mode="review", session="alice")
    both = Proposal(
        (
            UpdateFile("a.txt", (Replace("1\n", "9\n"),)),
            UpdateFile("b.txt", (Replace("1\n", "0\n"),)),
        ),
        "patch_resource",
        tool="test",
    )
    pid = alice.propose(both).proposal_id
    assert alice.check().passed  # 9 + 0 together pass
    person = Workspace.open(repo, mode="review")
    before = head(repo, MAIN)
    with pytest.raises(ChecksFailed) as caught:
        person.approve(pid, "Pat", hunks="a.txt:1")  # 9 + 1 alone does not
    assert caught.value.details["output"] == "sum is 10"
    assert head(repo, MAIN) == before
    result = person.approve(pid, "Pat", hunks="b.txt:1")  # 1 + 0 passes, lands alone
    assert result.status == "approved" and git(repo, "show", "main:b.txt") == "0\n"
    assert git(repo, "rev-parse", "main^{tree}").strip() in checked(log)
