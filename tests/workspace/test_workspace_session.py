"""Protected branches: auto mode lands on gitpatch/session/<name>, never on the protected one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gitpatch.errors import GitpatchError
from gitpatch.porcelain.workspace import Workspace, protected_branches, session_target
from tests.doors.cli.clikit import gp_json
from tests.gitkit import commit_on, git, head, make_repo, sr, state, status_porcelain

FILES = {"a.txt": "alpha\nbeta\n", "b.txt": "one\n"}
SESSION = "refs/heads/gitpatch/session/agent"
BRANCH = "main"


def test_an_edit_only_auto_session_makes_no_worktree(repo: Path) -> None:
    base = head(repo)
    (repo / "b.txt").write_text("one\nlocal\n")
    index_before = (repo / ".git/index").read_bytes()
    ws = Workspace.open(repo)
    assert ws.target == "refs/heads/main" and ws.branch == SESSION and ws.session == "agent"
    assert ws.plumbing.worktree is None
    res = ws.apply(sr("beta\n", "BETA\n"), path="a.txt")
    again = ws.apply(sr("alpha\n", "ALPHA\n"), path="a.txt")
    assert ws.read("a.txt").content == "ALPHA\nBETA\n"
    assert head(repo, SESSION) == again.version and again.base == res.version
    assert head(repo, "main") == base
    # nothing on disk holds the session's files, so no result names a place to test them
    assert not (repo / ".git/gitpatch/worktrees").exists()
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert res.worktree == again.worktree == "" and "worktree" not in again.message
    assert (repo / "a.txt").read_text() == FILES["a.txt"]
    assert (repo / ".git/index").read_bytes() == index_before
    assert status_porcelain(repo) == " M b.txt\n"


def test_auto_on_main_works_in_a_worktree_of_its_own(repo: Path) -> None:
    base = head(repo)
    (repo / "b.txt").write_text("one\nlocal\n")
    index_before = (repo / ".git/index").read_bytes()
    ws = Workspace.open(repo)
    assert ws.target == "refs/heads/main" and ws.branch == SESSION and ws.session == "agent"
    assert git(repo, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    bench = ws.plumbing.session_worktree()
    assert ws.plumbing.worktree is not None and ws.plumbing.worktree.root == bench.path
    assert bench.made.startswith(f"Made the session's worktree at {bench.path} (")
    assert ws.plumbing.session_worktree().made == ""  # made once
    place = ws.plumbing.worktree.root
    assert place == (repo / ".git/gitpatch/worktrees/agent").resolve() or place == (
        repo / ".git/gitpatch/worktrees/agent"
    )
    assert git(place, "symbolic-ref", "HEAD").strip() == SESSION
    res = ws.apply(sr("beta\n", "BETA\n"), path="a.txt")
    assert res.branch == SESSION and res.target == "refs/heads/main"
    assert SESSION in res.message and "approve('agent')" in res.message
    assert res.worktree == str(place) and str(place) in res.message
    assert head(repo, "main") == base and head(repo, SESSION) == res.version
    assert (place / "a.txt").read_text() == "alpha\nBETA\n"
    assert git(place, "status", "--porcelain") == ""
    # the person's checkout: HEAD, index and uncommitted edit untouched
    assert (repo / "a.txt").read_text() == FILES["a.txt"]
    assert (repo / ".git/index").read_bytes() == index_before
    assert status_porcelain(repo) == " M b.txt\n"
    assert session_target(ws.plumbing.store, "agent") == "refs/heads/main"


def test_reopen_resumes_session(repo: Path) -> None:
    ws = Workspace.open(repo)
    ws.plumbing.session_worktree()
    first = ws.apply(sr("beta\n", "BETA\n"), path="a.txt")
    again = Workspace.open(repo)
    assert again.branch == SESSION and again.target == "refs/heads/main"
    assert again.plumbing.worktree is not None and ws.plumbing.worktree is not None
    assert again.plumbing.worktree.root == ws.plumbing.worktree.root
    second = again.apply(sr("one\n", "ONE\n"), path="b.txt")
    assert second.base == first.version and head(repo, "main") != second.version


def test_a_session_checked_out_by_the_person_is_worked_on_there(repo: Path) -> None:
    ws = Workspace.open(repo)
    ws.plumbing.session_worktree()
    res = ws.apply(sr("beta\n", "BETA\n"), path="a.txt")
    assert ws.plumbing.worktree is not None
    git(repo, "worktree", "remove", str(ws.plumbing.worktree.root))
    git(repo, "checkout", "-q", SESSION.removeprefix("refs/heads/"))
    again = Workspace.open(repo)
    assert again.plumbing.worktree is not None and again.plumbing.worktree.root == repo
    assert again.branch == SESSION and head(repo) == res.version


def test_a_removed_session_worktree_is_made_again(repo: Path) -> None:
    ws = Workspace.open(repo)
    ws.plumbing.session_worktree()
    res = ws.apply(sr("beta\n", "BETA\n"), path="a.txt")
    assert ws.plumbing.worktree is not None
    shutil.rmtree(ws.plumbing.worktree.root)  # removed by hand: git still has its record
    again = Workspace.open(repo)
    assert again.plumbing.worktree is None  # lazy again: made on the next need
    assert (again.plumbing.session_worktree().path / "a.txt").read_text() == "alpha\nBETA\n"
    assert again.plumbing.worktree is not None
    assert head(repo, SESSION) == res.version and status_porcelain(repo) == ""


def test_two_sessions_get_two_worktrees(repo: Path) -> None:
    one = Workspace.open(repo, session="one")
    two = Workspace.open(repo, session="two")
    one.plumbing.session_worktree()
    two.plumbing.session_worktree()
    assert one.plumbing.worktree is not None and two.plumbing.worktree is not None
    assert one.plumbing.worktree.root != two.plumbing.worktree.root
    a = one.apply(sr("beta\n", "ONE\n"), path="a.txt")
    b = two.apply(sr("beta\n", "TWO\n"), path="a.txt")
    assert (one.plumbing.worktree.root / "a.txt").read_text() == "alpha\nONE\n"
    assert (two.plumbing.worktree.root / "a.txt").read_text() == "alpha\nTWO\n"
    assert a.base == b.base == head(repo, "main")
    assert status_porcelain(repo) == ""


def test_worktrees_setting_places_them_and_keeps_them_ignored(repo: Path) -> None:
    git(repo, "config", "gitpatch.worktrees", ".agents")
    ws = Workspace.open(repo)
    ws.plumbing.session_worktree()
    assert ws.plumbing.worktree is not None and ws.plumbing.worktree.root.resolve() == (
        repo / ".agents/agent"
    )
    ws.apply(sr("beta\n", "BETA\n"), path="a.txt")
    assert status_porcelain(repo) == ""  # .agents/ is excluded in .git/info/exclude
    assert "/.agents/" in (repo / ".git/info/exclude").read_text()


def test_named_session_and_review_mode_needs_none(repo: Path) -> None:
    ws = Workspace.open(repo, session="feature-x")
    assert ws.branch == "refs/heads/gitpatch/session/feature-x"
    git(repo, "checkout", "-q", "main")
    review = Workspace.open(repo, mode="review")
    assert review.session is None and review.branch == "refs/heads/main"
    res = review.apply(sr("beta\n", "B\n"), path="a.txt")
    assert res.branch == f"refs/heads/gitpatch/{res.proposal_id}"
    assert head(repo, "main") == res.base


def test_protected_config_multi_valued_and_comma_separated(repo: Path) -> None:
    git(repo, "config", "--add", "gitpatch.protected", "release, prod")
    git(repo, "config", "--add", "gitpatch.protected", "main")
    ws = Workspace.open(repo, mode="review")
    assert protected_branches(ws.plumbing.store) == {
        "refs/heads/release",
        "refs/heads/prod",
        "refs/heads/main",
    }
    assert protected_branches(ws.plumbing.store, ["dev"]) == {"refs/heads/dev"}


def test_unprotected_by_override_lands_on_main(repo: Path) -> None:
    ws = Workspace.open(repo, protected=[])
    res = ws.apply(sr("beta\n", "BETA\n"), path="a.txt")
    assert res.branch == "refs/heads/main" and head(repo, "main") == res.version


def test_person_commits_land_on_their_branch_not_the_session(repo: Path) -> None:
    ws = Workspace.open(repo)
    commit_on(repo, {"b.txt": "one\ntwo\n"})
    assert git(repo, "log", "-1", "--format=%s", "main").strip() == "person"
    res = ws.apply(sr("beta\n", "BETA\n"), path="a.txt")
    assert git(repo, "log", "-1", "--format=%s", res.base).strip() != "person"
    assert head(repo, "main") != res.version


def test_bare_protected_branch_gets_session_without_head_move(tmp_path: Path) -> None:
    src = make_repo(tmp_path / "src", FILES, branch="main")
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(src), str(bare))
    ws = Workspace.open(bare)
    res = ws.apply(sr("beta\n", "BETA\n"), path="a.txt")
    assert res.branch == SESSION
    assert git(bare, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert head(bare, "main") == head(src)


def test_empty_repository_on_main_starts_an_unborn_session(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    ws = Workspace.open(root)
    assert ws.branch == SESSION and git(root, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    res = ws.apply("*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n")
    assert res.branch == SESSION and head(root, SESSION) == res.version
    assert git(root, "rev-parse", "--verify", "-q", "refs/heads/main", check=False) == ""
    assert not (root / "hello.txt").exists()  # git cannot check out an unborn session yet
    again = Workspace.open(root)
    assert (again.plumbing.session_worktree().path / "hello.txt").read_text() == "hi\n"


@pytest.mark.slow  # the console script in a process of its own
def test_open_honours_the_config_file_like_the_cli(repo: Path) -> None:
    # One resolver (config.protected_names): Python and the CLI agree on what is protected.
    git(repo, "switch", "-q", "-c", "dev")
    (repo / ".gitpatch.toml").write_text('[review]\nprotected = ["dev"]\n')
    ws = Workspace.open(repo)
    assert ws.plumbing.context.protected == {"refs/heads/dev"}
    assert ws.target == "refs/heads/dev" and ws.branch == SESSION
    git(repo, "switch", "-q", "dev")
    patch = "*** Begin Patch\n*** Update File: b.txt\n@@\n-one\n+two\n*** End Patch\n"
    out = gp_json(repo, "apply-patch", "-", input=patch)
    assert out["branch"] == SESSION and out["target"] == "refs/heads/dev"
    git(repo, "config", "gitpatch.protected", "release")  # git config wins over the file
    assert protected_branches(Workspace.open(repo, mode="review").plumbing.store) == {
        "refs/heads/release"
    }


def test_a_broken_config_file_refuses_to_open_and_changes_nothing(repo: Path) -> None:
    (repo / ".gitpatch.toml").write_text("[review]\nprotected = 'main'\n")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo)
    assert err.value.code == "invalid_arguments" and "list of strings" in err.value.message
    assert state(repo) == before


def test_a_person_in_a_linked_worktree_keeps_it(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "root", FILES, branch="base")
    side = tmp_path / "side"
    git(root, "worktree", "add", "-q", "-b", "main", str(side))
    (side / "b.txt").write_text("one\nmine\n")
    index = git(side, "rev-parse", "--git-path", "index").strip()
    before = (side / index).read_bytes()  # an absolute index path replaces side
    ws = Workspace.open(side)
    ws.plumbing.session_worktree()
    assert ws.plumbing.worktree is not None
    assert ws.plumbing.worktree.root.resolve() == (root / ".git/gitpatch/worktrees/agent").resolve()
    ws.apply(sr("beta\n", "BETA\n"), path="a.txt")
    assert git(side, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert status_porcelain(side) == " M b.txt\n" and (side / "a.txt").read_text() == FILES["a.txt"]
    after = (side / index).read_bytes()
    assert after == before
    assert (ws.plumbing.worktree.root / "a.txt").read_text() == "alpha\nBETA\n"


def test_a_session_worktree_converts_line_endings_as_git_does(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "crlf", FILES, branch="main")
    git(root, "config", "core.autocrlf", "true")
    ws = Workspace.open(root)
    ws.plumbing.session_worktree()
    assert ws.plumbing.worktree is not None
    assert (ws.plumbing.worktree.root / "a.txt").read_bytes() == b"alpha\r\nbeta\r\n"
    ws.apply(sr("beta\n", "BETA\n"), path="a.txt")
    assert (ws.plumbing.worktree.root / "a.txt").read_bytes() == b"alpha\r\nBETA\r\n"
    assert git(root, "show", "gitpatch/session/agent:a.txt") == "alpha\nBETA\n"
    assert (
        git(ws.plumbing.worktree.root, "status", "--porcelain") == ""
        and status_porcelain(root) == ""
    )


def _files_in(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if not p.is_dir())


def test_a_worktree_git_cannot_make_is_refused_changing_nothing(repo: Path) -> None:
    (repo / "blocker").write_text("a file where the worktrees folder would go\n")
    git(repo, "config", "gitpatch.worktrees", "blocker")
    ws = Workspace.open(repo)
    before = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    gitpatch_dir = _files_in(repo / ".git/gitpatch")
    with pytest.raises(GitpatchError) as err:
        ws.plumbing.session_worktree()
    assert err.value.code == "repository_error" and "worktree" in err.value.message
    assert "gitpatch.worktrees" in (err.value.hint or "")
    assert git(repo, "for-each-ref", "--format=%(refname) %(objectname)") == before
    assert _files_in(repo / ".git/gitpatch") == gitpatch_dir
    assert git(repo, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert status_porcelain(repo) == "?? blocker\n"
    assert (
        ws.plumbing.worktree is None
        and ws.apply(sr("beta\n", "B\n"), path="a.txt").branch == SESSION
    )
