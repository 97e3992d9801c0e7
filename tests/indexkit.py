"""Checks on git's index file for the tests of ``gitpatch.indexfile`` and the index formats.

Each check asks the ``git`` binary, or reads the bytes on disk with a parser written here
independently of ``gitpatch.indexfile``.
"""

from __future__ import annotations

import hashlib
import struct
import subprocess
from pathlib import Path

from tests.gitkit import git, git_env, run_git


def extensions(repo: Path) -> list[bytes]:
    """The signatures of the index's extensions, in file order (entries walked here)."""
    return [sig for sig, _start, _size in extension_table(repo)[1]]


def extension_table(repo: Path) -> tuple[int, list[tuple[bytes, int, int]]]:
    """Where the entries end, and each extension's (signature, payload offset, size)."""
    data = (repo / ".git" / "index").read_bytes()
    version, count = struct.unpack_from(">II", data, 4)
    assert version in (2, 3), version
    pos = 12
    for _ in range(count):
        flags = struct.unpack_from(">H", data, pos + 60)[0]
        fixed = 64 if flags & 0x4000 else 62
        name_end = data.index(b"\x00", pos + fixed)
        pos += (name_end - pos + 8) & ~7
    end = pos
    found = []
    while pos < len(data) - 20:
        size = struct.unpack_from(">I", data, pos + 4)[0]
        found.append((data[pos : pos + 4], pos + 8, size))
        pos += 8 + size
    assert pos == len(data) - 20
    return end, found


def assert_eoie_true(repo: Path) -> None:
    """The EOIE extension records where the entries end and the hash of the other
    extensions' headers (git silently ignores a wrong one, so check it here)."""
    data = (repo / ".git" / "index").read_bytes()
    end, table = extension_table(repo)
    eoie = [(start, size) for sig, start, size in table if sig == b"EOIE"]
    assert len(eoie) == 1 and table[-1][0] == b"EOIE"
    start, size = eoie[0]
    digest = hashlib.sha1()
    for sig, _start, length in table[:-1]:
        digest.update(sig + struct.pack(">I", length))
    assert data[start : start + size] == struct.pack(">I", end) + digest.digest()


def cache_tree(repo: Path) -> dict[str, str | None]:
    """The TREE extension as path -> tree id (None: invalidated), from the bytes on disk."""
    data = (repo / ".git" / "index").read_bytes()
    raw = _tree_payload(data)
    out: dict[str, str | None] = {}
    stack: list[list[object]] = []
    pos = 0
    while pos < len(raw):
        nul = raw.index(b"\x00", pos)
        eol = raw.index(b"\n", nul)
        entries, subtrees = raw[nul + 1 : eol].split(b" ")
        name = raw[pos:nul].decode()
        pos = eol + 1
        oid = None
        if int(entries) >= 0:
            oid = raw[pos : pos + 20].hex()
            pos += 20
        while stack and stack[-1][1] == 0:
            stack.pop()
        if stack:
            stack[-1][1] = int(stack[-1][1]) - 1  # type: ignore[call-overload]
            path = f"{stack[-1][0]}/{name}" if stack[-1][0] else name
        else:
            path = name
        stack.append([path, int(subtrees)])
        out[path] = oid
    return out


def _tree_payload(data: bytes) -> bytes:
    at = data.find(b"TREE")
    while at >= 0:
        size = struct.unpack_from(">I", data, at + 4)[0]
        payload = data[at + 8 : at + 8 + size]
        if payload.startswith(b"\x00") and at + 8 + size <= len(data) - 20:
            return payload
        at = data.find(b"TREE", at + 1)
    return b""


def assert_cache_tree_true(repo: Path) -> None:
    """Every valid cache-tree id is the tree HEAD has at that path (what git relies on)."""
    for path, oid in cache_tree(repo).items():
        if oid is not None:
            want = git(repo, "rev-parse", f"HEAD:{path}" if path else "HEAD^{tree}").strip()
            assert oid == want, f"cache-tree of {path!r} is {oid}, HEAD has {want}"


def assert_clean(repo: Path) -> None:
    """What git says of a repository whose index and files match HEAD exactly."""
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == ""
    assert git(repo, "diff", "--cached", "--name-only") == ""
    assert git(repo, "diff", "--name-only") == ""
    assert git(repo, "write-tree").strip() == git(repo, "rev-parse", "HEAD^{tree}").strip()
    fsck = run_git(repo, "fsck", "--strict")
    assert fsck.returncode == 0, fsck.stderr.decode()
    assert_cache_tree_true(repo)


def debug_entries(repo: Path, *paths: str, index: Path | None = None) -> str:
    """``git ls-files --stage --debug`` for ``paths`` (of another index file when given)."""
    env = git_env(repo)
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    args = ["git", "ls-files", "--stage", "--debug", "--", *paths]
    done = subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True, check=True)
    return done.stdout
