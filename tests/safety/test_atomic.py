"""The one atomic write: the old content or the new, never a half-written file or a temp left."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from gitpatch.safety.atomic import TMP_SUFFIX, temp_file, write_atomic


def test_write_atomic_replaces_with_the_permissions_asked(tmp_path: Path) -> None:
    target = tmp_path / "creds.toml"
    target.write_text("old\n")
    write_atomic(target, b"new\n", 0o600)
    assert target.read_bytes() == b"new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["creds.toml"]


def test_a_failed_rename_keeps_the_old_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "dir"
    target.mkdir()
    (target / "inside").write_text("x")  # a non-empty directory cannot be renamed over
    with pytest.raises(OSError) as err:
        write_atomic(target, b"new\n")
    assert err.value.errno in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir"]


def test_temp_file_sits_beside_its_target(tmp_path: Path) -> None:
    tmp = temp_file(tmp_path / "a.txt", b"data", 0o755, fsync=False)
    assert tmp.parent == tmp_path and tmp.name.startswith(".a.txt.")
    assert tmp.name.endswith(TMP_SUFFIX) and tmp.read_bytes() == b"data"
    assert os.access(tmp, os.X_OK)
