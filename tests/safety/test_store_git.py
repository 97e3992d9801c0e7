"""What the store writes, read back by the real ``git`` binary."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest

from gitpatch.core.model import FileChange as F
from gitpatch.store import NOTES_REF, Store
from tests.gitkit import git, git_env

MAIN = "refs/heads/main"
TRAILERS = {"Gitpatch-Proposal": "p-42", "Gitpatch-Tool": "apply_patch"}


def run(cwd: Path, *args: str, input_text: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run git with the test identity; the caller checks the exit code."""
    return subprocess.run(
        ["git", *args], cwd=cwd, env=git_env(cwd), input=input_text, capture_output=True, text=True
    )


@pytest.fixture
def store(git_repo: Path) -> Iterator[Store]:
    """A store on a fresh repo; ``git fsck --strict`` must be clean after every scenario."""
    yield Store.open(git_repo)
    out = git(git_repo, "fsck", "--strict", "--no-progress", "--no-dangling")
    assert out == ""


def land(store: Store, changes: list[F], message: str, **trailers: str) -> pygit2.Oid:
    """Build, commit and CAS main, as a proposal landing in auto mode would."""
    tip = store.ref_target(MAIN)
    tree = store.build_tree(tip, changes)
    commit = store.commit(tree, [tip] if tip else [], message, trailers or None)
    store.update_ref(MAIN, commit, tip, f"gitpatch: {message}")
    return commit


def test_log_stat_shows_adds_edits_deletes_and_moves(store: Store, git_repo: Path) -> None:
    land(store, [F("src/app.py", b"a = 1\nb = 2\n"), F("docs/old.md", b"# doc\n")], "add")
    land(
        store,
        [
            F("src/app.py", b"a = 1\nb = 3\nc = 4\n"),
            F("guide/new.md", None, source="docs/old.md"),
            F("README", b"hi\n"),
        ],
        "edit",
    )
    land(store, [F("README", None)], "delete")
    log = git(git_repo, "log", "--stat", "--format=@@%s", "-M")
    assert log.split("@@")[1:] == [
        "delete\n\n README | 1 -\n 1 file changed, 1 deletion(-)\n",
        "edit\n\n README                      | 1 +\n docs/old.md => guide/new.md | 0\n"
        " src/app.py                  | 3 ++-\n"
        " 3 files changed, 3 insertions(+), 1 deletion(-)\n",
        "add\n\n docs/old.md | 1 +\n src/app.py  | 2 ++\n 2 files changed, 3 insertions(+)\n",
    ]
    assert git(git_repo, "ls-tree", "-r", "-t", "--name-only", "HEAD").split() == [
        "guide",
        "guide/new.md",
        "src",
        "src/app.py",
    ]
    assert git(git_repo, "show", "HEAD:src/app.py") == "a = 1\nb = 3\nc = 4\n"


def test_git_sees_modes_kept_and_moves_reusing_blobs(store: Store, git_repo: Path) -> None:
    script = git_repo / "run.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o755)
    (git_repo / "link").symlink_to("run.sh")
    git(git_repo, "add", "run.sh", "link")
    git(git_repo, "commit", "-q", "-m", "by git")
    land(store, [F("run.sh", b"#!/bin/sh\necho bye\n"), F("bin/link", None, source="link")], "e")
    tree = git(git_repo, "ls-tree", "-r", "HEAD")
    lines = {line.split("\t")[1]: line.split()[0] for line in tree.splitlines()}
    assert lines == {"bin/link": "120000", "run.sh": "100755"}
    old_link = git(git_repo, "rev-parse", "HEAD~1:link").strip()
    assert git(git_repo, "rev-parse", "HEAD:bin/link").strip() == old_link
    git(git_repo, "reset", "-q", "--hard")
    assert (git_repo / "bin/link").readlink() == Path("run.sh")
    assert git(git_repo, "status", "--porcelain") == ""


def test_trailers_parse_with_git(store: Store, git_repo: Path) -> None:
    land(store, [F("a.txt", b"a\n")], "Edit a.txt\n\nWhy: the body explains.", **TRAILERS)
    body = git(git_repo, "log", "-1", "--format=%B")
    assert body.startswith("Edit a.txt\n\nWhy: the body explains.\n\n")
    parsed = run(git_repo, "interpret-trailers", "--parse", input_text=body).stdout
    assert parsed == "Gitpatch-Proposal: p-42\nGitpatch-Tool: apply_patch\n"
    fmt = "%(trailers:key=Gitpatch-Proposal,valueonly)"
    assert git(git_repo, "log", "-1", f"--format={fmt}").strip() == "p-42"


def test_git_show_of_commit_identity_and_reflog(store: Store, git_repo: Path) -> None:
    author = pygit2.Signature("Agent Smith", "agent@example.com", 1767225600, 60)
    tree = store.build_tree(None, [F("a.txt", b"a\n")])
    commit = store.commit(tree, [], "first", TRAILERS, author=author)
    store.update_ref(MAIN, commit, None, "gitpatch: first")
    show = git(git_repo, "show", "--format=%an <%ae>|%ad|%cn <%ce>", "--date=iso", "-s", "HEAD")
    assert show.strip() == "Agent Smith <agent@example.com>|2026-01-01 01:00:00 +0100|" + (
        "Test Person <person@example.com>"
    )
    reflog = git(git_repo, "reflog", "show", "--format=%gs|%gn", "main")
    assert reflog.strip() == "gitpatch: first|Test Person"


def test_notes_readable_by_git_and_git_notes_readable_by_store(
    store: Store, git_repo: Path
) -> None:
    c1 = land(store, [F("a.txt", b"a\n")], "one")
    c2 = land(store, [F("a.txt", b"b\n")], "two")
    store.update_note(c1, lambda old: {"status": "proposed", "proposal": "p-1"})
    store.update_note(c1, lambda old: {**(old or {}), "status": "approved", "by": "ann"})
    shown = git(git_repo, "notes", "--ref", "gitpatch", "show", str(c1))
    assert json.loads(shown) == {"status": "approved", "by": "ann", "proposal": "p-1"}
    assert git(git_repo, "notes", "--ref", "gitpatch", "list").split() == [
        git(git_repo, "notes", "--ref", "gitpatch", "list", str(c1)).strip(),
        str(c1),
    ]
    log = git(git_repo, "log", "--notes=gitpatch", "--format=%s%n%N", "-1", str(c1))
    assert '"status": "approved"' in log
    # git writes a note of its own on the same ref; the store reads it and builds on top.
    git(git_repo, "notes", "--ref", "gitpatch", "add", "-m", '{"status": "rejected"}', str(c2))
    assert store.read_note(c2) == {"status": "rejected"}
    store.update_note(c2, lambda old: {**(old or {}), "reason": "too big"})
    shown2 = json.loads(git(git_repo, "notes", "--ref", "gitpatch", "show", str(c2)))
    assert shown2 == {"status": "rejected", "reason": "too big"}
    assert dict(store.iter_notes()) == {c1: json.loads(shown), c2: shown2}
    assert git(git_repo, "rev-parse", NOTES_REF).strip() == str(store.ref_target(NOTES_REF))


def test_merge_and_revert_as_git_sees_them(store: Store, git_repo: Path) -> None:
    base = land(store, [F("f.txt", b"1\n2\n3\n4\n5\n"), F("g.txt", b"g\n")], "base")
    ours = land(store, [F("f.txt", b"ONE\n2\n3\n4\n5\n")], "ours")
    theirs = store.commit(store.build_tree(base, [F("h.txt", b"h\n")]), [base], "theirs")
    store.update_ref("refs/heads/gitpatch/p1", theirs, None, "proposal")
    merged = store.merge(ours, theirs, "Merge proposal p1", {"Gitpatch-Proposal": "p1"})
    store.update_refs([(MAIN, merged, ours), ("refs/heads/gitpatch/p1", None, theirs)], "approve")
    assert git(git_repo, "log", "-1", "--format=%P").split() == [str(ours), str(theirs)]
    assert git(git_repo, "branch", "--list", "gitpatch/*") == ""
    for anc, desc in ((base, merged), (theirs, merged), (merged, base), (ours, theirs)):
        answer = run(git_repo, "merge-base", "--is-ancestor", str(anc), str(desc)).returncode
        assert store.is_ancestor(anc, desc) == (answer == 0)
    undo = store.revert(ours, merged, "Undo ours")
    store.update_ref(MAIN, undo, merged, "undo")
    assert git(git_repo, "show", "HEAD:f.txt") == "1\n2\n3\n4\n5\n"
    assert git(git_repo, "show", "HEAD:h.txt") == "h\n"
    assert (
        git(git_repo, "diff", "--stat", str(merged), "HEAD")
        .strip()
        .endswith("1 file changed, 1 insertion(+), 1 deletion(-)")
    )


def test_diff_agrees_with_git(store: Store, git_repo: Path) -> None:
    c1 = land(store, [F("a.txt", b"one\ntwo\nthree\n"), F("b.txt", b"b\n")], "one")
    c2 = land(store, [F("a.txt", b"one\n2\nthree\nfour\n"), F("b.txt", None)], "two")
    text, stats = store.diff(c1, c2)
    short = git(git_repo, "diff", "--shortstat", str(c1), str(c2)).strip()
    assert short == (
        f"{stats['files']} files changed, {stats['insertions']} insertions(+), "
        f"{stats['deletions']} deletions(-)"
    )
    git(git_repo, "checkout", "-q", str(c1))
    patch = git_repo / "p.diff"
    patch.write_text(text)
    git(git_repo, "apply", "--index", "p.diff")
    patch.unlink()
    assert git(git_repo, "diff", "--cached", "--stat", str(c2)) == ""
    assert store.changed_paths(c1, c2) == ["a.txt", "b.txt"]
    git(git_repo, "checkout", "-q", "main")


def test_git_and_store_share_the_ref_lock_protocol(store: Store, git_repo: Path) -> None:
    c1 = land(store, [F("a.txt", b"1\n")], "one")
    c2 = land(store, [F("a.txt", b"2\n")], "two")
    # git's own CAS refuses to move main from the value the store already replaced.
    refused = run(git_repo, "update-ref", MAIN, str(c1), str(c1))
    assert refused.returncode != 0 and "is at" in refused.stderr
    assert store.ref_target(MAIN) == c2
    git(git_repo, "update-ref", MAIN, str(c1), str(c2))
    assert store.ref_target(MAIN) == c1


def test_store_keeps_working_after_git_gc_packs_everything(store: Store, git_repo: Path) -> None:
    c1 = land(store, [F("a/b/c.txt", b"1\n"), F("d.txt", b"d\n")], "one")
    store.update_ref("refs/heads/gitpatch/p1", c1, None, "proposal")
    store.update_note(c1, lambda old: {"status": "proposed"})
    git(git_repo, "gc", "-q", "--prune=now")
    assert not list((git_repo / ".git" / "objects").glob("??/*"))  # all packed now
    assert "refs/heads/gitpatch/p1" in (git_repo / ".git" / "packed-refs").read_text()
    fresh = Store.open(git_repo)
    assert fresh.read(c1, "a/b/c.txt") == b"1\n"
    assert fresh.read_note(c1) == {"status": "proposed"}
    c2 = land(fresh, [F("a/b/c.txt", b"2\n")], "two")
    fresh.update_ref("refs/heads/gitpatch/p1", None, c1, "reject")
    fresh.update_note(c1, lambda old: {**(old or {}), "status": "rejected"})
    assert git(git_repo, "rev-parse", "main").strip() == str(c2)
    assert "gitpatch/p1" not in git(git_repo, "show-ref")
    shown = git(git_repo, "notes", "--ref", "gitpatch", "show", str(c1))
    assert json.loads(shown) == {"status": "rejected"}


def test_diff_of_modes_links_and_moves_applies_with_git(store: Store, git_repo: Path) -> None:
    def write(name: str, text: str, mode: int = 0o644) -> None:
        path = git_repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(mode)

    write("tool.sh", "#!/bin/sh\necho one\n", 0o755)
    write("plain.sh", "echo plain\n")
    write("docs/guide.md", "# Guide\n\nread me\n")
    write("gone.txt", "bye\n")
    (git_repo / "link").symlink_to("tool.sh")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "before")
    c1 = store.resolve_commit("HEAD")
    write("tool.sh", "#!/bin/sh\necho two\n", 0o755)
    (git_repo / "plain.sh").chmod(0o755)
    (git_repo / "manual").mkdir()
    git(git_repo, "mv", "docs/guide.md", "manual/guide.md")
    git(git_repo, "rm", "-q", "gone.txt")
    (git_repo / "link").unlink()
    (git_repo / "link").symlink_to("plain.sh")
    write("new.sh", "#!/bin/sh\n", 0o755)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "after")
    c2 = store.resolve_commit("HEAD")
    text, stats = store.diff(c1, c2)
    assert "rename from docs/guide.md\nrename to manual/guide.md\n" in text
    assert "old mode 100644\nnew mode 100755\n" in text
    assert "new file mode 100755" in text
    short = git(git_repo, "diff", "--shortstat", "-M", str(c1), str(c2)).strip()
    assert short.startswith(f"{stats['files']} files changed, {stats['insertions']} insertions")
    git(git_repo, "checkout", "-q", str(c1))
    (git_repo / "p.diff").write_text(text)
    git(git_repo, "apply", "--index", "p.diff")
    (git_repo / "p.diff").unlink()
    assert run(git_repo, "diff", "--cached", "--quiet", str(c2)).returncode == 0
    git(git_repo, "checkout", "-q", "-f", "main")


def test_diff_of_submodule_entries_matches_git(store: Store, git_repo: Path) -> None:
    repo = store.repo
    gitlink = pygit2.enums.FileMode.COMMIT

    def commit_with(subs: dict[str, str], parents: list[pygit2.Oid]) -> pygit2.Oid:
        builder = repo.TreeBuilder()
        builder.insert("a.txt", repo.create_blob(b"a\n"), pygit2.enums.FileMode.BLOB)
        for name, digit in subs.items():
            builder.insert(name, pygit2.Oid(hex=digit * 40), gitlink)
        return store.commit(builder.write(), parents, "subs")

    c1 = commit_with({"lib": "1", "old": "3"}, [])
    c2 = commit_with({"lib": "2", "new": "4"}, [c1])
    store.update_ref(MAIN, c2, None, "subs")
    text, stats = store.diff(c1, c2)
    assert text == git(git_repo, "diff", "--no-renames", str(c1), str(c2))
    assert stats == {"files": 3, "insertions": 2, "deletions": 2}
