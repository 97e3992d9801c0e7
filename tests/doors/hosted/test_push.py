"""Review on a real git remote: proposal branches and notes pushed to a bare repository served
by ``git daemon`` on 127.0.0.1 with gitpatch's pre-receive hook installed there. An
unapproved proposal cannot reach ``main``; an approved one can."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gitpatch import Workspace
from tests.doors.cli.clikit import gp, gp_ok
from tests.doors.hosted.svckit import PEOPLE, Server, call, fixed_ports, make_credentials, text_of
from tests.gitkit import git, git_env, wait_until

#: a git daemon and pushes: `make test-fast` leaves these out.
pytestmark = pytest.mark.slow


@contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """``git daemon`` serving the repositories under ``base`` (push enabled) on loopback."""
    [port] = fixed_ports(1)
    env = {**git_env(base), "GITPATCH_PYTHON": sys.executable}
    proc = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack"]
        + ["--informative-errors", f"--base-path={base}", "--listen=127.0.0.1"]
        + [f"--port={port}", str(base)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"git://127.0.0.1:{port}/"

    def answers() -> bool:  # the daemon has no "ready" signal: probe it
        assert proc.poll() is None, "git daemon exited"
        probe = subprocess.run(
            ["git", "ls-remote", url + "remote.git"], capture_output=True, check=False
        )
        return probe.returncode == 0

    try:
        wait_until(answers, "git daemon answering")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_unapproved_proposals_cannot_reach_main_on_the_remote_approved_ones_can(
    tmp_path: Path,
) -> None:
    PEOPLE["rita"] = {"user": "rita", "organization": "acme", "teams": ["docs"], "manage": ["docs"]}
    tokens = make_credentials(tmp_path / "credentials.toml")
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    (data / "spaces.toml").write_text('[space."teams/docs"]\nmode = "review"\n')
    served = tmp_path / "served"
    remote = served / "remote.git"
    served.mkdir()
    git(served, "init", "-q", "--bare", "-b", "main", str(remote))
    assert gp_ok(remote, "hooks", "install").splitlines() == ["pre-receive: installed"]
    space = data / "teams" / "docs.git"
    person = "A Person <person@example.com>"

    with git_daemon(served) as url:
        server = Server(data, tmp_path / "credentials.toml", "--push", "origin")
        try:
            first = call(
                server.url, tokens["rita"], "create_resource", path="team/docs/g.md", content="v1\n"
            )
            assert not first.is_error, text_of(first)
            Workspace.open(space, "review", "main", protected=["main"]).approve(
                first.structured_content["proposal_id"], by=person
            )
            git(space, "remote", "add", "origin", url + "remote.git")
            git(space, "push", "-q", "origin", "main", "refs/notes/gitpatch")  # a person publishes
            published = git(remote, "rev-parse", "main").strip()

            edit = [{"old_string": "v1", "new_string": "v2"}]
            second = call(
                server.url, tokens["rita"], "patch_resource", path="g.md", team="docs", edits=edit
            )
            assert not second.is_error, text_of(second)
        finally:
            server.stop()
        pid, commit = second.structured_content["proposal_id"], second.structured_content["commit"]
        # pushed by the server after the proposal: the branch and its note are on the remote
        assert git(remote, "rev-parse", f"refs/heads/gitpatch/{pid}").strip() == commit
        assert pid in git(remote, "notes", "--ref=gitpatch", "show", commit)

        clone = tmp_path / "clone"
        git(tmp_path, "clone", "-q", url + "remote.git", str(clone))
        refused = subprocess.run(
            ["git", "push", "--no-verify", "origin", f"origin/gitpatch/{pid}:main"],
            cwd=clone,
            env=git_env(clone),
            capture_output=True,
            text=True,
            check=False,
        )
        assert refused.returncode != 0
        assert "pre-receive hook declined" in refused.stderr and pid in refused.stderr
        assert git(remote, "rev-parse", "main").strip() == published

        Workspace.open(space, "review", "main", protected=["main"]).approve(pid, by=person)
        assert "pushed" in gp_ok(space, "push", "--remote", "origin")
        assert git(remote, "for-each-ref", "refs/heads/gitpatch/") == ""  # closed: pruned
        accepted = subprocess.run(
            ["git", "push", "origin", "main"],
            cwd=space,
            env={**git_env(space), "GITPATCH_PYTHON": sys.executable},
            capture_output=True,
            text=True,
            check=False,
        )
        assert accepted.returncode == 0, accepted.stderr
        assert git(remote, "show", "main:g.md") == "v2\n"
    assert git(remote, "fsck", "--strict", "--no-dangling", "--no-progress") == ""


def test_push_without_the_remote_is_refused(tmp_path: Path) -> None:
    repo = tmp_path / "r.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(repo))
    out = gp(repo, "push", "--remote", "nowhere")
    assert out.returncode == 1 and out.stderr.startswith("invalid_arguments:")
    assert os.listdir(repo / "refs" / "heads") == []


def test_an_auto_space_pushes_main_and_a_shard_restored_from_its_remotes_loses_nothing(
    tmp_path: Path,
) -> None:
    """``--push origin`` in an auto space sends ``main`` before the call is answered, so a
    shard wiped and restored from its remotes (docs/hosted-service.md: ``git clone --bare``
    per space, into a fresh directory) serves every acknowledged edit, at the same versions."""
    tokens = make_credentials(tmp_path / "credentials.toml")
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    remotes = tmp_path / "remotes"
    for space in ("users/bob", "teams/web"):
        git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remotes / f"{space}.git"))
    server = Server(data, tmp_path / "credentials.toml", "--push", "origin")
    acknowledged: dict[str, tuple[str, int]] = {}
    try:
        for who, space, extra in (("bob", "users/bob", {}), ("ada", "teams/web", {"team": "web"})):
            made = call(
                server.url, tokens[who], "create_resource", path="n.md", content="0\n", **extra
            )
            assert not made.is_error, text_of(made)
            git(data / f"{space}.git", "remote", "add", "origin", str(remotes / f"{space}.git"))
            text = "0\n"
            for n in range(1, 4):
                edit = [{"after_line": 0, "new_string": f"{n}\n"}]
                done = call(
                    server.url, tokens[who], "patch_resource", path="n.md", edits=edit, **extra
                )
                assert not done.is_error, text_of(done)
                text = f"{n}\n" + text
                # answered: the remote already has it
                pushed = git(remotes / f"{space}.git", "rev-parse", "main").strip()
                assert pushed == done.structured_content["commit"]
            acknowledged[space] = (text, done.structured_content["version"])
    finally:
        log = server.stop()
    assert "push of" not in log, log

    fresh = tmp_path / "fresh"  # the shard's disk is gone: a new directory, from the remotes
    fresh.mkdir(mode=0o700)
    for space in acknowledged:
        git(
            tmp_path,
            "clone",
            "-q",
            "--bare",
            str(remotes / f"{space}.git"),
            str(fresh / f"{space}.git"),
        )
    restored = Server(fresh, tmp_path / "credentials.toml", "--push", "origin")
    try:
        for space, (text, version) in acknowledged.items():
            who, extra = ("bob", {}) if space == "users/bob" else ("ada", {"team": "web"})
            read = call(restored.url, tokens[who], "read_resource", path="n.md", **extra)
            assert read.structured_content["content"] == text
            assert read.structured_content["version"] == version
        edit = [{"after_line": 0, "new_string": "4\n"}]
        done = call(restored.url, tokens["bob"], "patch_resource", path="n.md", edits=edit)
        assert done.structured_content["version"] == acknowledged["users/bob"][1] + 1
        assert (
            git(remotes / "users/bob.git", "rev-parse", "main").strip()
            == (done.structured_content["commit"])
        )
    finally:
        restored.stop()
    for space in acknowledged:
        git(fresh / f"{space}.git", "fsck", "--strict", "--no-progress")
