"""A server that stops while one of its spaces is being packed lets the run finish (a bounded
wait) before it exits: the pack moved into place, the run's work folder removed, nothing left
for a later run to sweep. Through the real ``gitpatch serve --http`` and the SDK client, with a
``git`` on PATH that holds ``pack-objects`` until the test lets it go."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.doors.hosted.svckit import Server, inserted_lines, make_credentials, run
from tests.gitkit import git, wait_until

pytestmark = pytest.mark.slow

#: How long the test gives a stopping server to exit while the packing run is held: a server
#: that does not wait for the run exits well within it; one that waits cannot exit before
#: its bound (``SETTLE_SECONDS``, 5 s, counted from later still).
HELD_SECONDS = 1.5


def _held_git(folder: Path) -> Path:
    """A ``git`` that, for ``pack-objects``, says it started (``folder/started``) and waits
    until ``folder/release`` exists (at most a minute), then runs the real git."""
    real = shutil.which("git")
    assert real is not None
    wrapper = folder / "bin" / "git"
    wrapper.parent.mkdir()
    wrapper.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" pack-objects "*)\n'
        f"  : > {folder}/started\n"
        "  n=0\n"
        f'  while [ ! -e {folder}/release ] && [ "$n" -lt 1200 ]; do sleep 0.05; n=$((n+1)); done\n'
        "esac\n"
        f'exec {real} "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper.parent


def test_a_stopping_server_lets_a_packing_run_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = make_credentials(tmp_path / "credentials.toml")
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    (data / "spaces.toml").write_text("[defaults]\npack_every_changes = 5\n")
    monkeypatch.setenv("PATH", f"{_held_git(tmp_path)}{os.pathsep}{os.environ['PATH']}")
    server = Server(data, tmp_path / "credentials.toml")
    try:
        results = run(server.url, tokens["bob"], inserted_lines(5))
        assert not any(r.is_error for r in results)
        repo = data / "users" / "bob.git"
        # the run starts in the background after the fifth change
        wait_until((tmp_path / "started").exists, "a packing run started")
        server.proc.send_signal(signal.SIGTERM)
        with pytest.raises(subprocess.TimeoutExpired):
            server.proc.wait(timeout=HELD_SECONDS)  # it waits for the run it cannot see end
        (tmp_path / "release").touch()
        assert server.proc.wait(timeout=60) == -signal.SIGTERM  # as uvicorn ends
    finally:
        (tmp_path / "release").touch()
        server.stop()
    assert not list(repo.glob("gitpatch-packing-*"))  # the run cleaned up after itself
    assert list((repo / "objects" / "pack").glob("*.idx"))
    git(repo, "fsck", "--strict", "--no-progress")
    assert git(repo, "show", "main:h.md").splitlines()[0] == "line 4"
