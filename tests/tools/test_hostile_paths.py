"""No path escapes: a table of hostile paths through every tool and the Workspace API.

The repository sits next to an ``outside/`` directory holding a secret; the repository has a
symlink to that directory and one to the secret. Every path below must be refused (or, for
the harmless ones, fail as a missing file) by every tool and by the Workspace, with nothing
changed anywhere and the secret never shown.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitpatch import (
    GitpatchError,
    MountedFilesystem,
    Workspace,
    apply_patch_tool,
    patch_resource_tool,
    patch_tool,
    read_tool,
)
from tests.gitkit import make_repo, sr, state

SECRET = "TOP-SECRET-CONTENT"

HOSTILE = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "..",
    "../x",
    "../../etc/passwd",
    "a/../../x",
    "./../x",
    "sub/../../outside/secret.txt",
    "/etc/passwd",
    "/workspace/../etc/passwd",
    "/workspace/../../x",
    "/",
    "/workspace",
    "/workspace/",
    "//etc/passwd",
    "/workspace2/x",
    ".",
    "./",
    ".git",
    ".git/config",
    ".GIT/config",
    "a/.git/config",
    ".git/hooks/pre-commit",
    "sub/.Git/HEAD",
    "/workspace/.git/config",
    "link/secret.txt",
    "/workspace/link/secret.txt",
    "link/new.txt",
    "evil.txt",
    "link",
    "C:\\x",
    "C:/x",
    "c:x",
    "\\\\server\\share",
    "\\\\?\\C:\\x",
    "a\\b",
    "..\\x",
    "file.",
    "dir /x",
    "dir./x",
    "a\nb",
    "a\tb",
    "a\rb",
    "\x1b[31m",
    "file://etc/passwd",
    "file:///etc/passwd",
    "http://example.com/x",
    "https://x/y",
    "ftp://x/y",
    "work://",
    "work://s1",
    "work://s1/",
    "work:///x",
    "work://s*/x",
    "work://s1,s2/x",
    "work://{a,b}/x",
    "work://s1/../x",
    "work://s1/../../x",
    "work://s1/.git/config",
    "work://a b/x",
    "memory://",
    "memory://k",
    "memory://k/*.md",
    "memory://../x",
]

# Names Windows reserves for devices: never created, but a tracked one (``aux.c`` in a Linux
# project) stays editable, so an update of a missing one is an ordinary missing file.
DEVICE_NAMES = ["CON", "con.txt", "NUL", "aux.c", "COM1", "lpt9.txt", "prn", "a/CON/b"]

REFUSED = {"path_unsafe", "invalid_arguments", "not_a_text_resource", "invalid_patch"}


def test_the_table_is_large_enough() -> None:
    assert len(HOSTILE) >= 60 and len(set(HOSTILE)) == len(HOSTILE)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Workspace, MountedFilesystem]:
    base = tmp_path_factory.mktemp("hostile")
    (base / "outside").mkdir()
    (base / "outside" / "secret.txt").write_text(SECRET + "\n")
    repo = make_repo(base / "repo", {"a.txt": "a\n", "sub/b.txt": "b\n"})
    os.symlink(base / "outside", repo / "link")
    os.symlink(base / "outside" / "secret.txt", repo / "evil.txt")
    ws = Workspace.open(repo)
    return repo, ws, MountedFilesystem({"/workspace": ws})


def _calls(fs: object, path: str) -> list[tuple[str, object]]:
    edit = sr("a\n", "b\n")
    resource = [{"old_string": "a", "new_string": "b"}]
    out: list[tuple[str, object]] = []
    for ns in (fs,):
        out += [
            ("patch", patch_tool(ns, ns)(path=path, edits=edit)),
            ("patch_resource", patch_resource_tool(ns, ns)(path=path, edits=resource)),
            ("read", read_tool(ns)(path=path)),
        ]
        ap = apply_patch_tool(ns, ns)
        for body in (
            f"*** Update File: {path}\n@@\n-a\n+b\n",
            f"*** Add File: {path}\n+new\n",
            f"*** Delete File: {path}\n",
            f"*** Update File: a.txt\n*** Move to: {path}\n",
        ):
            out.append(("apply_patch", ap(patch=f"*** Begin Patch\n{body}*** End Patch")))
    return out


@pytest.mark.parametrize("path", HOSTILE, ids=repr)
def test_hostile_path_is_refused_everywhere(world, path: str) -> None:
    repo, ws, fs = world
    before = state(repo)
    secret = (repo.parent / "outside" / "secret.txt").read_bytes()
    for ns in (fs, ws):
        for name, res in _calls(ns, path):
            assert not res.ok, f"{name} accepted {path!r}: {res}"
            assert SECRET not in str(res)
            if name != "apply_patch" or path.strip() and "\n" not in path and "\r" not in path:
                assert res.code in REFUSED, f"{name} {path!r}: {res.code} {res}"
    for call in (
        lambda: ws.apply(sr("a\n", "b\n"), path=path),
        lambda: ws.read(path),
        lambda: ws.apply([{"old_string": "a", "new_string": "b"}], path=path),
        lambda: ws.apply(f"*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch"),
    ):
        with pytest.raises(GitpatchError) as info:
            call()
        assert SECRET not in str(info.value)
    assert state(repo) == before
    assert (repo.parent / "outside" / "secret.txt").read_bytes() == secret
    assert sorted(p.name for p in (repo.parent / "outside").iterdir()) == ["secret.txt"]


@pytest.mark.parametrize("path", [*DEVICE_NAMES, "memory://k/CON"], ids=repr)
def test_a_device_name_is_never_created(world, path: str) -> None:
    repo, ws, fs = world
    before = state(repo)
    for ns in (fs, ws):
        ap = apply_patch_tool(ns, ns)
        bodies = [f"*** Add File: {path}\n+new\n"]
        if not path.startswith("memory://"):  # a move between roots is refused for that
            bodies.append(f"*** Update File: a.txt\n*** Move to: {path}\n")
        for body in bodies:
            res = ap(patch=f"*** Begin Patch\n{body}*** End Patch")
            assert not res.ok and res.code == "path_unsafe", f"{path!r}: {res}"
            assert "device name" in str(res)
        if not path.startswith("memory://"):
            res = patch_tool(ns, ns)(path=path, edits=sr("a\n", "b\n"))
            assert not res.ok and res.code == "resource_not_found", f"{path!r}: {res}"
    assert state(repo) == before
