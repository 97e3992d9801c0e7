"""Workspace: proposing in auto and review mode, reading, versions — on real repositories."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
import pytest

from gitpatch.core.model import AddFile, FileChange, Proposal, Replace, UpdateFile
from gitpatch.errors import GitpatchError
from gitpatch.porcelain.workspace import REJECTED_PREFIX, Workspace
from gitpatch.store import NOTES_FANOUT_AT, NOTES_REF
from tests.gitkit import (
    before_first_publish,
    commit_on,
    edit,
    git,
    head,
    make_repo,
    note,
    sr,
    state,
    status_porcelain,
)

FILES = {"a.txt": "alpha\nbeta\ngamma\n", "src/b.py": "def f():\n    return 1\n"}


def test_auto_patch_lands_commit_file_index_and_note(repo: Path) -> None:
    base = head(repo)
    ws = Workspace.open(repo)
    res = ws.apply(sr("beta\n", "BETA\n"), path="a.txt")
    assert (repo / "a.txt").read_text() == "alpha\nBETA\ngamma\n"
    assert res.version == head(repo) and res.base == base
    assert res.branch == res.target == "refs/heads/work"
    assert res.mode == "auto" and res.status == "applied"
    assert [(f.path, f.action) for f in res.files] == [("a.txt", "update")]
    assert [(e.start_line, e.end_line, e.level) for e in res.edits] == [(2, 2, "exact")]
    assert "refs/heads/work" in res.message
    assert status_porcelain(repo) == ""
    assert git(repo, "diff-files", "--name-only") == ""
    trailers = git(repo, "log", "-1", "--format=%(trailers:only,unfold)")
    assert f"Gitpatch-Proposal: {res.proposal_id}" in trailers
    assert "Gitpatch-Tool: patch" in trailers
    data = json.loads(note(repo, res.version))
    assert data["id"] == res.proposal_id and data["status"] == "applied"
    assert data["tool"] == "patch" and data["base"] == base
    assert data["target"] == "refs/heads/work" and data["revision"] is False
    # the proposal is the agent's: its note and its commit name the agent, not the person
    assert data["author"] == "agent (gitpatch session agent) <agent@gitpatch.invalid>"
    assert data["created_at"].endswith("Z") and len(data["fingerprint"]) == 64
    assert len(res.proposal_id) == 12 and int(res.proposal_id, 16) >= 0
    notes_paths = git(repo, "ls-tree", "-r", "--name-only", "refs/notes/gitpatch").split()
    assert notes_paths == [res.version]  # flat while small; fanned out later, as git does
    assert git(repo, "fsck", "--strict", "--no-dangling") == ""


def test_proposal_notes_fan_out_once_the_notes_root_is_large(repo: Path) -> None:
    ws = Workspace.open(repo, mode="review")
    store = ws.plumbing.store
    blobs = [store.repo.create_blob(f"annotated {i}\n".encode()) for i in range(NOTES_FANOUT_AT)]
    flat = [FileChange(str(b), b'{"n": 1}\n') for b in blobs]
    tree = store.build_tree(None, flat)
    store.update_ref(NOTES_REF, store.commit(tree, [], "many notes"), None, "notes")
    res = ws.propose(edit("a.txt", "beta", "BETA"))
    paths = git(repo, "ls-tree", "--name-only", "refs/notes/gitpatch", res.version[:2] + "/")
    assert f"{res.version[:2]}/{res.version[2:]}" in paths.split()
    assert json.loads(note(repo, res.version))["id"] == res.proposal_id
    # the flat notes moved down with it: the root holds only the 2-digit directories
    root = git(repo, "ls-tree", "refs/notes/gitpatch").splitlines()
    assert root and all(line.split()[1] == "tree" and len(line.split()[3]) == 2 for line in root)
    assert git(repo, "notes", "--ref", "gitpatch", "show", str(blobs[0])) == '{"n": 1}\n'
    assert len(git(repo, "notes", "--ref", "gitpatch", "list").splitlines()) == NOTES_FANOUT_AT + 1


def test_review_mode_keeps_disk_and_target(repo: Path) -> None:
    base = head(repo)
    before = state(repo)
    ws = Workspace.open(repo, mode="review")
    res = ws.apply(sr("beta\n", "BETA\n"), path="a.txt")
    after = state(repo)
    assert res.branch == f"refs/heads/gitpatch/{res.proposal_id}"
    assert res.status == "proposed" and res.mode == "review" and res.base == base
    assert head(repo, res.branch) == res.version and head(repo) == base
    assert git(repo, "show", f"{res.version}:a.txt") == "alpha\nBETA\ngamma\n"
    assert {k: v for k, v in after.items() if k != "refs"} == {
        k: v for k, v in before.items() if k != "refs"
    }
    assert json.loads(note(repo, res.version))["status"] == "proposed"
    assert "approves" in res.message


def test_apply_patch_adds_deletes_and_moves_atomically(repo: Path) -> None:
    ws = Workspace.open(repo)
    text = (
        "*** Begin Patch\n*** Add File: docs/new.md\n+hello\n*** Delete File: a.txt\n"
        "*** Update File: src/b.py\n*** Move to: lib/b.py\n@@\n-    return 1\n+    return 2\n"
        "*** End Patch\n"
    )
    res = ws.apply(text)
    assert {(f.path, f.action, f.moved_from) for f in res.files} == {
        ("docs/new.md", "add", None),
        ("a.txt", "delete", None),
        ("lib/b.py", "move", "src/b.py"),
    }
    assert not (repo / "a.txt").exists() and not (repo / "src").exists()
    assert (repo / "lib/b.py").read_text() == "def f():\n    return 2\n"
    assert (repo / "docs/new.md").read_text() == "hello\n"
    assert status_porcelain(repo) == ""


def test_patch_resource_and_read_versions(repo: Path) -> None:
    ws = Workspace.open(repo)
    seen = ws.read("a.txt")
    assert seen.content == FILES["a.txt"] and seen.version == head(repo)
    res = ws.apply(
        [{"old_string": "gamma", "new_string": "GAMMA"}],
        path="a.txt",
        expected_version=seen.version,
    )
    again = ws.read("a.txt")
    assert again.version == res.version and again.content.endswith("GAMMA\n")
    # a unique prefix of the commit id works as a version
    res2 = ws.apply(
        [{"after_line": 0, "new_string": "top\n"}],
        path="a.txt",
        expected_version=res.version[:10],
    )
    assert (repo / "a.txt").read_text().startswith("top\nalpha")
    assert res2.base == res.version


def test_expected_version_ignores_other_files(repo: Path) -> None:
    ws = Workspace.open(repo)
    seen = ws.read("a.txt")
    moved = commit_on(repo, {"src/b.py": "def f():\n    return 3\n"})
    res = ws.apply(
        [{"old_string": "alpha", "new_string": "ALPHA"}],
        path="a.txt",
        expected_version=seen.version,
    )
    assert res.base == moved
    assert (repo / "src/b.py").read_text().endswith("return 3\n")
    assert (repo / "a.txt").read_text().startswith("ALPHA")
    assert status_porcelain(repo) == ""


def test_expected_version_conflict_on_same_file_changes_nothing(repo: Path) -> None:
    ws = Workspace.open(repo)
    seen = ws.read("a.txt")
    commit_on(repo, {"a.txt": "alpha\nbeta\ngamma\ndelta\n"})
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.apply(
            [{"old_string": "beta", "new_string": "B"}],
            path="a.txt",
            expected_version=seen.version,
        )
    assert err.value.code == "resource_conflict"
    assert "a.txt" in err.value.message and err.value.hint
    assert state(repo) == before


def test_deleted_and_recreated_since_version_is_not_found(repo: Path) -> None:
    ws = Workspace.open(repo)
    seen = ws.read("a.txt")
    commit_on(repo, {"a.txt": None})
    commit_on(repo, {"a.txt": FILES["a.txt"]})
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.apply(
            [{"old_string": "beta", "new_string": "B"}],
            path="a.txt",
            expected_version=seen.version,
        )
    assert err.value.code == "resource_not_found"
    assert "re-created" in err.value.message or "created" in err.value.message
    assert state(repo) == before


@pytest.mark.parametrize("version", ["zz", "0000000000000000000000000000000000000000", "12"])
def test_unknown_expected_version_is_invalid_arguments(repo: Path, version: str) -> None:
    ws = Workspace.open(repo)
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(edit("a.txt", "beta", "B"), expected_version=version)
    assert err.value.code == "invalid_arguments"
    assert state(repo) == before


def test_lost_race_on_other_file_rebuilds_on_new_head(repo: Path) -> None:
    ws = Workspace.open(repo)
    with before_first_publish(lambda: commit_on(repo, {"src/b.py": "def f():\n    return 9\n"})):
        res = ws.propose(edit("a.txt", "beta", "BETA"))
    assert res.base == head(repo, "HEAD~1")
    assert git(repo, "log", "-1", "--format=%s", res.base).strip() == "person"
    assert (repo / "a.txt").read_text() == "alpha\nBETA\ngamma\n"
    assert (repo / "src/b.py").read_text().endswith("return 9\n")
    assert status_porcelain(repo) == ""


def test_lost_race_on_same_file_is_conflict(repo: Path) -> None:
    ws = Workspace.open(repo)
    race = before_first_publish(lambda: commit_on(repo, {"a.txt": "alpha\nbeta\ngamma\nmore\n"}))
    with race, pytest.raises(GitpatchError) as err:
        ws.propose(edit("a.txt", "beta", "BETA"))
    assert err.value.code == "resource_conflict"
    assert git(repo, "log", "-1", "--format=%s").strip() == "person"
    assert (repo / "a.txt").read_text() == "alpha\nbeta\ngamma\nmore\n"
    assert git(repo, "notes", "--ref", "gitpatch", "list", check=False) == ""
    assert status_porcelain(repo) == ""


def test_rejected_fingerprint_refused_unless_revision(repo: Path) -> None:
    ws = Workspace.open(repo, mode="review")
    first = ws.propose(edit("a.txt", "beta", "BETA"))
    fp = json.loads(note(repo, first.version))["fingerprint"]
    git(repo, "update-ref", REJECTED_PREFIX + fp, first.version)
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.propose(edit("a.txt", "beta", "BETA"))
    assert err.value.code == "proposal_rejected"
    assert state(repo) == before
    again = ws.propose(edit("a.txt", "beta", "BETA"), revision=True)
    assert json.loads(note(repo, again.version))["revision"] is True
    # a different change is not refused
    ws.propose(edit("a.txt", "beta", "Beta"))


def test_fingerprint_is_sha256_of_path_blob_lines(repo: Path) -> None:
    ws = Workspace.open(repo, mode="review")
    res = ws.propose(
        Proposal(
            (AddFile("n.txt", "new\n"), UpdateFile("a.txt", (Replace("beta", "B"),), "m.txt")),
            "patch_resource",
        )
    )
    import hashlib

    blob_n = str(pygit2.hash(b"new\n"))
    blob_m = str(pygit2.hash(b"alpha\nB\ngamma\n"))
    lines = sorted([f"n.txt\t{blob_n}", f"m.txt\t{blob_m}", "a.txt\tDELETED"])
    expected = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    assert json.loads(note(repo, res.version))["fingerprint"] == expected


def test_bare_repository_auto_and_review(tmp_path: Path) -> None:
    src = make_repo(tmp_path / "src", FILES)
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(src), str(bare))
    ws = Workspace.open(bare)
    assert ws.plumbing.worktree is None and ws.target == "refs/heads/work"
    res = ws.apply(sr("beta\n", "BETA\n"), path="a.txt")
    assert git(bare, "show", "work:a.txt") == "alpha\nBETA\ngamma\n"
    assert ws.read("a.txt").version == res.version
    review = Workspace.open(bare, mode="review")
    res2 = review.apply(sr("alpha\n", "ALPHA\n"), path="a.txt")
    assert head(bare, "work") == res.version
    assert head(bare, res2.branch) == res2.version


def test_first_commit_on_unborn_branch(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    git(root, "init", "-q", "-b", "work")
    ws = Workspace.open(root)
    res = ws.propose(Proposal((AddFile("hello.txt", "hi\n"),), "apply_patch", tool="t"))
    assert res.base == "" and (root / "hello.txt").read_text() == "hi\n"
    assert head(root) == res.version and status_porcelain(root) == ""
    assert ws.read("hello.txt").version == res.version


def test_explicit_branch_not_checked_out_leaves_disk(repo: Path) -> None:
    git(repo, "branch", "other")
    before_disk = (repo / "a.txt").read_text()
    ws = Workspace.open(repo, branch="other")
    res = ws.apply(sr("beta\n", "BETA\n"), path="a.txt")
    assert head(repo, "other") == res.version and res.target == "refs/heads/other"
    assert (repo / "a.txt").read_text() == before_disk and status_porcelain(repo) == ""


def test_open_errors(tmp_path: Path, repo: Path) -> None:
    with pytest.raises(GitpatchError) as err:
        Workspace.open(tmp_path / "nowhere")
    assert err.value.code == "repository_error"
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo, mode="yolo")  # type: ignore[arg-type]
    assert err.value.code == "invalid_arguments"
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo, dirty="maybe")  # type: ignore[arg-type]
    assert err.value.code == "invalid_arguments"
    git(repo, "checkout", "-q", "--detach")
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo)
    assert err.value.code == "repository_error" and "detached" in err.value.message


def test_disk_edit_during_prepare_is_recorded_on_retry(repo: Path) -> None:
    ws = Workspace.open(repo, dirty="record")
    with before_first_publish(lambda: (repo / "a.txt").write_text("alpha\nbeta\ngamma\nperson\n")):
        res = ws.propose(edit("a.txt", "beta", "BETA"))
    assert (repo / "a.txt").read_text() == "alpha\nBETA\ngamma\nperson\n"
    assert git(repo, "show", f"{res.base}:a.txt") == "alpha\nbeta\ngamma\nperson\n"
    assert status_porcelain(repo) == ""


def test_one_workspace_shared_by_threads_serializes_calls(tmp_path: Path) -> None:
    files = {f"f{i}.txt": "v0\n" for i in range(4)}
    root = make_repo(tmp_path / "threads", files)
    ws = Workspace.open(root)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for n in range(5):
                ws.propose(edit(f"f{i}.txt", f"v{n}", f"v{n + 1}"))
        except BaseException as exc:  # reported below, in the main thread
            errors.append(exc)

    import threading

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert all((root / name).read_text() == "v5\n" for name in files)
    assert git(root, "rev-list", "--count", "HEAD").strip() == "21"
    assert status_porcelain(root) == ""


@pytest.mark.parametrize("mode", ["auto", "review"])
def test_note_written_with_the_ref_and_notes_race_absorbed(
    repo: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitpatch.workspace import propose

    real = propose.notes_update
    calls = {"n": 0}

    def racing(store, changes):  # type: ignore[no-untyped-def]
        update = real(store, changes)
        calls["n"] += 1
        if calls["n"] == 1:  # another writer adds a note after we read the notes tip
            git(repo, "notes", "--ref", "gitpatch", "add", "-m", "other", head(repo))
        return update

    monkeypatch.setattr(propose, "notes_update", racing)
    ws = Workspace.open(repo, mode=mode)  # type: ignore[arg-type]
    res = ws.propose(edit("a.txt", "beta", "BETA"))
    assert calls["n"] == 2
    assert json.loads(note(repo, res.version))["id"] == res.proposal_id
    assert note(repo, res.base).strip() == "other"


def test_approve_absorbs_a_note_written_meanwhile(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitpatch.workspace import propose

    ws = Workspace.open(repo, mode="review")
    res = ws.propose(edit("a.txt", "beta", "BETA"))
    real = propose.notes_update
    calls = {"n": 0}

    def racing(store, changes):  # type: ignore[no-untyped-def]
        update = real(store, changes)
        calls["n"] += 1
        if calls["n"] == 1:  # another writer notes an unrelated commit before we commit ours
            git(repo, "notes", "--ref", "gitpatch", "add", "-m", "other", res.base)
        return update

    monkeypatch.setattr(propose, "notes_update", racing)
    done = ws.approve(res.proposal_id, by="Ann")
    assert done.status == "approved" and calls["n"] == 2
    assert json.loads(note(repo, res.version))["approved_by"] == "Ann"
    assert note(repo, res.base).strip() == "other"
    assert (repo / "a.txt").read_text() == "alpha\nBETA\ngamma\n"


def test_a_note_changed_under_a_step_rebuilds_the_whole_step(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gitpatch.workspace import propose

    ws = Workspace.open(repo, mode="review")
    res = ws.propose(edit("a.txt", "beta", "BETA"))
    real = propose.notes_update
    calls = {"n": 0}

    def racing(store, changes):  # type: ignore[no-untyped-def]
        update = real(store, changes)
        calls["n"] += 1
        if calls["n"] == 1:  # another writer rewrites the very note this approval stamps
            git(repo, "notes", "--ref", "gitpatch", "add", "-f", "-m", "other", res.version)
        return update

    monkeypatch.setattr(propose, "notes_update", racing)
    ws.approve(res.proposal_id, by="Ann")
    # 1: first try; 2: rebuilt notes differ, so the step fails; 3: the step rebuilt from scratch
    assert calls["n"] == 3
    stamped = json.loads(note(repo, res.version))
    assert stamped["approved_by"] == "Ann" and stamped["text"].strip() == "other"


def test_a_large_file_edit_lands_as_git_would_store_it(tmp_path: Path) -> None:
    # Past core.spliced.LARGE: the new content is streamed (blob and working file), never
    # joined; git must see exactly the bytes a plain edit would give.
    big = "".join(f"value_{n} = {n}\n" for n in range(120_000))
    repo = make_repo(tmp_path / "big", {"big.py": big, "a.txt": "a\n"})
    ws = Workspace.open(repo)
    res = ws.propose(edit("big.py", "value_60000 = 60000\n", "value_60000 = -1\n"))
    want = big.replace("value_60000 = 60000\n", "value_60000 = -1\n")
    assert (repo / "big.py").read_text() == want
    assert git(repo, "show", f"{res.version}:big.py") == want
    assert status_porcelain(repo) == "" and git(repo, "diff-files", "--name-only") == ""
    assert git(repo, "fsck", "--strict", "--no-dangling") == ""
    # and the next edit reads the blob just written (from its loose object)
    ws.propose(edit("big.py", "value_7 = 7\n", "value_7 = 'seven'\n"))
    assert (repo / "big.py").read_text() == want.replace("value_7 = 7\n", "value_7 = 'seven'\n")
    assert status_porcelain(repo) == ""
