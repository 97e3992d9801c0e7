"""Line-ending and filter attributes: commit what `git add` stores, write what checkout writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitpatch import Workspace
from gitpatch.errors import GitpatchError
from tests.gitkit import git, run_git
from tests.realrepo.kit import add, edit, fsck, make_repo, staged, state, status

TEXT = "one\ntwo\nthree\n"
ROT13 = "tr A-Za-z N-ZA-Mn-za-m"


def recheckout(repo: Path) -> None:
    """Write every file again as checkout does with the current settings."""
    git(repo, "rm", "-q", "-r", "--cached", ".")
    git(repo, "reset", "-q", "--hard")


def blob(repo: Path, path: str) -> bytes:
    return run_git(repo, "show", f"HEAD:{path}").stdout


@pytest.fixture(params=["autocrlf", "attributes"])
def crlf_repo(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    if request.param == "autocrlf":
        repo = make_repo(tmp_path / "r", {"a.txt": TEXT})
        git(repo, "config", "core.autocrlf", "true")
    else:
        repo = make_repo(
            tmp_path / "r", {"a.txt": TEXT, ".gitattributes": "* text=auto eol=crlf\n"}
        )
    recheckout(repo)
    assert (repo / "a.txt").read_bytes() == TEXT.replace("\n", "\r\n").encode()
    assert status(repo) == ""
    return repo


def test_edit_commits_lf_and_writes_crlf(crlf_repo: Path) -> None:
    ws = Workspace.open(crlf_repo)
    assert ws.read("a.txt").content.splitlines() == ["one", "two", "three"]
    ws.propose(edit("a.txt", "two", "TWO"))
    assert blob(crlf_repo, "a.txt") == b"one\nTWO\nthree\n"
    assert (crlf_repo / "a.txt").read_bytes() == b"one\r\nTWO\r\nthree\r\n"
    assert status(crlf_repo) == "" and staged(crlf_repo) == ""
    assert (
        git(crlf_repo, "diff", "--stat", "HEAD~1", "HEAD")
        .strip()
        .endswith("1 insertion(+), 1 deletion(-)")
    )
    fsck(crlf_repo)


def test_dirty_refuse_does_not_refuse_a_clean_converted_tree(crlf_repo: Path) -> None:
    ws = Workspace.open(crlf_repo, dirty="refuse")
    ws.propose(edit("a.txt", "three", "THREE"))
    assert blob(crlf_repo, "a.txt") == b"one\ntwo\nTHREE\n"
    assert status(crlf_repo) == ""


def test_added_files_get_crlf_on_disk(crlf_repo: Path) -> None:
    ws = Workspace.open(crlf_repo)
    ws.propose(add("docs/new.txt", "alpha\nbeta\n"))
    assert blob(crlf_repo, "docs/new.txt") == b"alpha\nbeta\n"
    assert (crlf_repo / "docs/new.txt").read_bytes() == b"alpha\r\nbeta\r\n"
    assert status(crlf_repo) == ""
    fsck(crlf_repo)


def test_carried_onto_a_local_edit_with_crlf_on_disk(crlf_repo: Path) -> None:
    (crlf_repo / "a.txt").write_bytes(b"one\r\ntwo\r\nthree\r\nlocal\r\n")
    res = Workspace.open(crlf_repo).propose(edit("a.txt", "one", "ONE"))
    assert res.carried == ["a.txt"] and "stays uncommitted" in res.message
    assert blob(crlf_repo, "a.txt") == b"ONE\ntwo\nthree\n"  # only the agent's change
    assert (crlf_repo / "a.txt").read_bytes() == b"ONE\r\ntwo\r\nthree\r\nlocal\r\n"
    assert status(crlf_repo) == " M a.txt\n"
    assert run_git(crlf_repo, "diff").stdout.count(b"\n+local") == 1
    fsck(crlf_repo)


def test_recorded_local_edit_is_stored_as_git_add_would(crlf_repo: Path) -> None:
    (crlf_repo / "a.txt").write_bytes(b"one\r\ntwo\r\nthree\r\nlocal\r\n")
    ws = Workspace.open(crlf_repo, dirty="record")
    ws.propose(edit("a.txt", "one", "ONE"))
    assert blob(crlf_repo, "a.txt") == b"ONE\ntwo\nthree\nlocal\n"
    assert run_git(crlf_repo, "show", "HEAD~1:a.txt").stdout == b"one\ntwo\nthree\nlocal\n"
    assert (crlf_repo / "a.txt").read_bytes() == b"ONE\r\ntwo\r\nthree\r\nlocal\r\n"
    assert status(crlf_repo) == ""


@pytest.fixture
def filtered(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "r", {".gitattributes": "*.secret filter=rot\n"})
    git(repo, "config", "filter.rot.clean", ROT13)
    git(repo, "config", "filter.rot.smudge", ROT13)
    git(repo, "config", "filter.rot.required", "true")
    (repo / "key.secret").write_text("Hello World\nsecond line\n")
    git(repo, "add", "key.secret")
    git(repo, "commit", "-q", "-m", "secret")
    assert blob(repo, "key.secret") == b"Uryyb Jbeyq\nfrpbaq yvar\n"
    return repo


def test_filter_driver_runs_both_ways(filtered: Path) -> None:
    ws = Workspace.open(filtered)
    assert ws.read("key.secret").content == "Hello World\nsecond line\n"
    ws.propose(edit("key.secret", "second line", "Second Line"))
    assert blob(filtered, "key.secret") == b"Uryyb Jbeyq\nFrpbaq Yvar\n"  # never plaintext
    assert (filtered / "key.secret").read_text() == "Hello World\nSecond Line\n"
    assert status(filtered) == ""
    ws.propose(add("new.secret", "Plain\n"))
    assert blob(filtered, "new.secret") == b"Cynva\n"
    assert (filtered / "new.secret").read_text() == "Plain\n"
    assert status(filtered) == ""
    fsck(filtered)


def test_failing_required_filter_changes_nothing(filtered: Path) -> None:
    git(filtered, "config", "filter.rot.clean", "false")
    ws = Workspace.open(filtered)
    before = state(filtered)
    with pytest.raises(GitpatchError) as err:
        ws.propose(edit("key.secret", "second line", "Second Line"))
    assert err.value.code == "filter_failed"
    assert err.value.details["path"] == "key.secret"
    assert state(filtered) == before


def test_plain_repositories_start_no_git_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a spy on the real runner (it still runs git): the cost stays on converting repositories
    from gitpatch.checkout import gitbin

    calls: list[object] = []
    real = gitbin.run
    monkeypatch.setattr(gitbin, "run", lambda *a, **k: calls.append(a) or real(*a, **k))
    repo = make_repo(tmp_path / "r", {"a.txt": TEXT})
    ws = Workspace.open(repo)
    ws.read("a.txt")
    ws.propose(edit("a.txt", "two", "TWO"))
    assert calls == []


def test_review_and_approve_in_a_converting_checkout(crlf_repo: Path) -> None:
    ws = Workspace.open(crlf_repo, "review")
    res = ws.propose(edit("a.txt", "one", "ONE"))
    assert "-one\n+ONE\n" in ws.show(res.proposal_id).diff  # the stored form: no CR
    ws.approve(res.proposal_id, by="Pat")
    assert blob(crlf_repo, "a.txt") == b"ONE\ntwo\nthree\n"
    assert (crlf_repo / "a.txt").read_bytes() == b"ONE\r\ntwo\r\nthree\r\n"
    assert status(crlf_repo) == ""
    ws.undo()
    assert (crlf_repo / "a.txt").read_bytes() == TEXT.replace("\n", "\r\n").encode()
    assert status(crlf_repo) == ""


def test_review_on_a_branch_not_checked_out_edits_the_filtered_plaintext(filtered: Path) -> None:
    git(filtered, "branch", "side")
    ws = Workspace.open(filtered, "review", branch="side")
    assert ws.read("key.secret").content == "Hello World\nsecond line\n"
    res = ws.propose(edit("key.secret", "second line", "Second Line"))
    assert run_git(filtered, "show", f"{res.version}:key.secret").stdout == (
        b"Uryyb Jbeyq\nFrpbaq Yvar\n"
    )
    assert status(filtered) == ""
