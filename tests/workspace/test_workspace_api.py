"""The typed Workspace API: explicit keyword arguments, format detection, read-only state."""

from __future__ import annotations

import inspect
import json
import typing
from pathlib import Path

import pytest

from gitpatch.errors import GitpatchError
from gitpatch.formats import detect, search_replace
from gitpatch.porcelain.workspace import Workspace
from tests.gitkit import git, make_repo, note, sr, state, status_porcelain

FILES = {"a.txt": "alpha\nbeta\ngamma\n", "src/b.py": "def f():\n    return 1\n"}

SEARCH_REPLACE = (
    "a.txt\n" + sr("beta\n", "BETA\n") + "src/b.py\n" + sr("    return 1\n", "    return 2\n")
)
APPLY_PATCH = """*** Begin Patch
*** Update File: a.txt
@@
 alpha
-beta
+BETA
*** Update File: src/b.py
-    return 1
+    return 2
*** End Patch
"""


def git_diff_of(root: Path, changes: dict[str, str]) -> str:
    """What `git diff` prints for ``changes``, leaving the working tree as it was."""
    before = {name: (root / name).read_text() for name in changes}
    for name, text in changes.items():
        (root / name).write_text(text)
    out = git(root, "diff")
    for name, text in before.items():
        (root / name).write_text(text)
    return out


@pytest.mark.parametrize("fmt", ["search_replace", "apply_patch", "unified_diff"])
def test_apply_detects_the_format_and_lands_it(repo: Path, fmt: str) -> None:
    changed = {"a.txt": "alpha\nBETA\ngamma\n", "src/b.py": "def f():\n    return 2\n"}
    text = {
        "search_replace": SEARCH_REPLACE,
        "apply_patch": APPLY_PATCH,
        "unified_diff": git_diff_of(repo, changed),
    }[fmt]
    assert detect(text) == fmt
    res = Workspace.open(repo).apply(text)
    assert res.status == "applied" and [f.path for f in res.files] == ["a.txt", "src/b.py"]
    assert {name: (repo / name).read_text() for name in changed} == changed
    assert status_porcelain(repo) == ""
    tool = {"search_replace": "patch", "apply_patch": "apply_patch", "unified_diff": "apply_diff"}
    assert json.loads(note(repo, res.version))["tool"] == tool[fmt]


@pytest.mark.parametrize(
    "text",
    ["just some prose\n", "", "--- only a minus line\n", "a.txt\n=======\n"],
    ids=["prose", "empty", "no plus line", "no search marker"],
)
def test_apply_refuses_text_in_no_known_format(repo: Path, text: str) -> None:
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        Workspace.open(repo).apply(text)
    assert err.value.code == "invalid_patch"
    assert "format" in err.value.message and "*** Begin Patch" in (err.value.hint or "")
    assert state(repo) == before


def test_the_first_marker_decides() -> None:
    # A SEARCH block quoting a diff is SEARCH/REPLACE; a diff quoting markers is a diff.
    quoted = "notes.md\n" + sr("--- a/x\n+++ b/x\n", "gone\n")
    assert detect(quoted) == "search_replace"
    assert detect("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-<<<<<<< SEARCH\n+x\n") == "unified_diff"
    assert detect("```\n*** Begin Patch\n*** Delete File: f\n*** End Patch\n```\n") == "apply_patch"


def test_apply_diff_in_review_mode_then_show_and_approve_by_proposal_id(repo: Path) -> None:
    ws = Workspace.open(repo, mode="review")
    diff = git_diff_of(repo, {"a.txt": "alpha\nbeta\ngamma\ndelta\n"})
    res = ws.apply(diff)
    assert res.status == "proposed" and (repo / "a.txt").read_text() == FILES["a.txt"]
    detail = ws.show(proposal_id=res.proposal_id)
    assert "+delta" in detail.diff
    done = ws.approve(proposal_id=res.proposal_id, by="Ann")
    assert done.status == "approved"
    assert (repo / "a.txt").read_text().endswith("delta\n")


def test_reject_by_proposal_id_then_a_revision_is_accepted(repo: Path) -> None:
    ws = Workspace.open(repo, mode="review")
    first = ws.apply(APPLY_PATCH)
    ws.reject(proposal_id=first.proposal_id, by="Ann", reason="no")
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.apply(APPLY_PATCH)
    assert err.value.code == "proposal_rejected" and state(repo) == before
    again = ws.apply(APPLY_PATCH, revision=True)
    assert json.loads(note(repo, again.version))["revision"] is True


def test_expected_version_through_patch_and_apply(repo: Path) -> None:
    ws = Workspace.open(repo)
    seen = ws.read("a.txt").version
    ws.apply(sr("gamma\n", "GAMMA\n"), path="a.txt", expected_version=seen)
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.apply(SEARCH_REPLACE, expected_version=seen)  # a.txt changed since `seen`
    assert err.value.code == "resource_conflict" and state(repo) == before


@pytest.mark.parametrize("method", ["apply", "propose"])
def test_options_are_explicit_keyword_only_parameters(method: str) -> None:
    signature = inspect.signature(getattr(Workspace, method))
    hints = typing.get_type_hints(getattr(Workspace, method))
    for name, default in (("expected_version", None), ("revision", False)):
        parameter = signature.parameters[name]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY and parameter.default == default
    assert hints["expected_version"] == str | None and hints["revision"] is bool
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())


def test_a_positional_version_is_refused(repo: Path) -> None:
    ws = Workspace.open(repo)
    with pytest.raises(TypeError):
        ws.apply([{"after_line": 0, "new_string": "x\n"}], "HEAD")  # type: ignore[misc]


@pytest.mark.parametrize("name", ["mode", "target", "branch", "session"])
def test_workspace_state_is_read_only(repo: Path, name: str) -> None:
    ws = Workspace.open(repo)
    value = getattr(ws, name)
    with pytest.raises(AttributeError):
        setattr(ws, name, value)
    assert getattr(ws.plumbing.context, name) == value


#: The porcelain's face: the verbs people and front ends use. The steps under them live on
#: ``ws.plumbing``; a new public verb is an API change, made here on purpose (issue 24).
VERBS = [
    "amend",
    "apply",
    "approve",
    "check",
    "checkpoint",
    "comment",
    "end_session",
    "log",
    "open",
    "proposals",
    "propose",
    "read",
    "reject",
    "run",
    "sessions",
    "show",
    "undo",
]
STATE = ["branch", "mode", "plumbing", "session", "target"]


def test_the_porcelain_is_these_verbs_and_this_state() -> None:
    public = {n: v for n, v in vars(Workspace).items() if not n.startswith("_")}
    state = sorted(n for n, v in public.items() if isinstance(v, property))
    assert sorted(n for n in public if n not in state) == VERBS
    assert state == STATE


def test_apply_takes_each_edit_language(repo: Path) -> None:
    """One verb for every edit language: the tool each came through is recorded."""
    ws = Workspace.open(repo)
    tools = [
        ws.apply(sr("alpha\n", "ALPHA\n"), path="a.txt"),
        ws.apply([{"old_string": "ALPHA", "new_string": "alpha"}], path="a.txt"),
        ws.apply(APPLY_PATCH),
        ws.apply("--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-alpha\n+A\n"),
    ]
    assert [json.loads(note(repo, t.version))["tool"] for t in tools] == [
        "patch",
        "patch_resource",
        "apply_patch",
        "apply_diff",
    ]
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.apply([{"old_string": "A", "new_string": "B"}])  # edit objects name no file
    assert err.value.code == "invalid_arguments" and state(repo) == before


def test_review_methods_name_their_argument_proposal_id() -> None:
    for method in ("approve", "reject", "show"):
        assert next(iter(inspect.signature(getattr(Workspace, method)).parameters)) == "self"
        assert "proposal_id" in inspect.signature(getattr(Workspace, method)).parameters


def test_apply_in_a_linked_worktree_lands_there(repo: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "side", str(linked))
    res = Workspace.open(linked).apply(APPLY_PATCH)
    assert res.branch == "refs/heads/side"
    assert (linked / "a.txt").read_text() == "alpha\nBETA\ngamma\n"
    assert (repo / "a.txt").read_text() == FILES["a.txt"]  # the main worktree is untouched
    assert status_porcelain(linked) == "" and status_porcelain(repo) == ""


def test_apply_diff_keeps_crlf_in_an_autocrlf_repository(tmp_path: Path) -> None:
    root = tmp_path / "crlf"
    root.mkdir()
    git(root, "init", "-q", "-b", "work")
    git(root, "config", "core.autocrlf", "true")
    git(root, "config", "user.name", "Test Person")
    git(root, "config", "user.email", "person@example.com")
    (root / "a.txt").write_bytes(b"alpha\r\nbeta\r\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "initial")  # git stores LF, the disk keeps CRLF
    diff = "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n alpha\n-beta\n+BETA\n"
    Workspace.open(root).apply(diff)
    assert (root / "a.txt").read_bytes() == b"alpha\r\nBETA\r\n"
    assert git(root, "show", "HEAD:a.txt") == "alpha\nBETA\n"
    assert status_porcelain(root) == ""


def test_preview_is_a_dry_run_of_what_is_on_disk(tmp_path: Path) -> None:
    # The doors' dry runs (CLI --dry-run, a space's size limits) go through the Workspace.
    repo = make_repo(tmp_path / "r", FILES)
    git(repo, "switch", "-q", "-c", "dev")  # not protected: the person's disk is the branch
    ws = Workspace.open(repo)
    (repo / "a.txt").write_text("alpha\nbeta\ngamma\nmine\n")  # uncommitted: the base
    before = state(repo)
    found = ws.plumbing.preview(search_replace.parse(SEARCH_REPLACE))
    assert found.before["a.txt"] == b"alpha\nbeta\ngamma\nmine\n"
    changed = {c.path: c.content for c in found.changeset.changes}
    assert changed["a.txt"] == b"alpha\nBETA\ngamma\nmine\n"
    assert changed["src/b.py"] == b"def f():\n    return 2\n"
    assert state(repo) == before
    with pytest.raises(GitpatchError) as err:
        ws.plumbing.preview(search_replace.parse("../x.txt\n" + sr("a\n", "b\n")))
    assert err.value.code == "path_unsafe" and state(repo) == before


def test_run_takes_a_shell_line_only_with_a_timeout_and_approve_a_list_only_whole(
    repo: Path,
) -> None:
    """The folded verbs refuse the mixes they cannot mean, changing nothing."""
    ws = Workspace.open(repo, mode="review", session="bot")
    pid = ws.apply(sr("alpha\n", "ALPHA\n"), path="a.txt").proposal_id
    before = state(repo)
    with pytest.raises(GitpatchError) as err:
        ws.run("true")  # a shell line: no timeout, no run
    assert err.value.code == "invalid_arguments" and state(repo) == before
    with pytest.raises(GitpatchError) as err:
        ws.approve([pid], "Ann", hunks="1")  # type: ignore[call-overload]
    assert err.value.code == "invalid_arguments" and state(repo) == before
    (landed,) = ws.approve([pid], "Ann")
    assert (landed.id, landed.status) == (pid, "approved")
    assert git(repo, "show", "HEAD:a.txt").startswith("ALPHA\n")
