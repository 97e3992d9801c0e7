"""git's content conversions for one working tree: what ``git add`` stores, what checkout writes.

With ``core.autocrlf``, a ``text``/``eol``/``crlf`` attribute, ``ident``,
``working-tree-encoding`` or a ``filter=`` driver, the bytes on disk are not the blob's bytes.
For those paths (``converts``) gitpatch lets the ``git`` binary convert, so the result is
exactly git's, external clean/smudge drivers included (libgit2 runs none of those):

- ``clean(path, data)``: the blob ``git add`` would store for ``data`` at ``path``
  (``git hash-object -w --stdin --path``);
- ``disk_blob(path)``: the blob id the file on disk would get (``git hash-object``);
- ``smudge(path, blob)``: the bytes checkout would write (``git cat-file --filters``).

Paths without any of those settings never start a process: the cost stays on the repositories
that use conversions. A conversion git refuses (a ``required`` filter that fails,
``core.safecrlf``) is ``filter_failed``, and nothing is written.
"""

from __future__ import annotations

import os
from pathlib import Path

import pygit2

from gitpatch.checkout import gitbin
from gitpatch.errors import FilterFailed

__all__ = ["ATTRIBUTES", "Filters"]

#: Attributes under which the disk bytes may differ from the blob's.
ATTRIBUTES = ("filter", "text", "eol", "crlf", "ident", "working-tree-encoding")


class Filters:
    """The conversions of one working tree (``repo`` must have one)."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self._repo = repo
        self._gitdir = repo.path
        self._root = str(repo.workdir)
        # libgit2 re-reads a repository's config files when they change: one object will do
        # (making one per lookup costs ~0.3 ms)
        self._config = repo.config
        self._known: dict[str, tuple[tuple[object, ...], bool]] = {}

    def converts(self, path: str) -> bool:
        """True when git may convert between the blob and the file at ``path``.

        Remembered until one of the files its answer comes from changes (the repository's
        attribute files on the way to ``path``, ``info/attributes``, the index, the config).
        """
        stamp = self._stamp(path)
        known = self._known.get(path)
        if known is not None and known[0] == stamp:
            return known[1]
        answer = self._converts(path)
        self._known[path] = (stamp, answer)
        return answer

    def _stamp(self, path: str) -> tuple[object, ...]:
        parts = path.split("/")[:-1]
        sources = [os.path.join(self._gitdir, "info", "attributes")]
        sources += [os.path.join(self._gitdir, "index"), os.path.join(self._gitdir, "config")]
        sources += [
            os.path.join(self._root, *parts[:depth], ".gitattributes")
            for depth in range(len(parts) + 1)
        ]
        return tuple(_stat(source) for source in sources)

    def _converts(self, path: str) -> bool:
        config = self._config
        try:
            autocrlf = str(config["core.autocrlf"]).lower() if "core.autocrlf" in config else ""
        except (pygit2.GitError, ValueError):
            autocrlf = ""
        if autocrlf in ("true", "input", "1", "yes", "on"):
            return True
        try:
            return any(self._repo.get_attr(path, name) not in (None, False) for name in ATTRIBUTES)
        except pygit2.GitError:
            return True  # attributes libgit2 cannot read (a split index): git itself decides

    def to_blob(self, path: str, data: bytes) -> bytes:
        """``data`` (as on disk at ``path``) as the blob ``git add`` would store."""
        return self.clean(path, data) if self.converts(path) else data

    def hash_file(self, path: str, full: Path) -> str:
        """The blob id (hex) ``git add`` would give the file ``full`` at ``path``."""
        return self.disk_blob(path) if self.converts(path) else str(pygit2.hashfile(str(full)))

    def checkout_bytes(self, path: str, blob: pygit2.Oid) -> bytes:
        """What ``git checkout`` writes at ``path`` for ``blob``."""
        if self.converts(path):
            return self.smudge(path, blob)
        return bytes(self._repo[blob].peel(pygit2.Blob).data)

    def clean(self, path: str, data: bytes) -> bytes:
        """The bytes ``git add`` stores for ``data`` at ``path`` (the blob is written too)."""
        out = self._git(path, ["hash-object", "-w", "--stdin", f"--path={path}"], data)
        oid = pygit2.Oid(hex=out.decode("ascii").strip())
        return bytes(self._repo[oid].peel(pygit2.Blob).data)

    def disk_blob(self, path: str) -> str:
        """The blob id ``git add`` would give the file at ``path`` (nothing is written)."""
        out = self._git(path, ["hash-object", "--", path])
        return out.decode("ascii").strip()

    def smudge(self, path: str, blob: pygit2.Oid) -> bytes:
        """The bytes ``git checkout`` writes at ``path`` for ``blob``."""
        return self._git(path, ["cat-file", "--filters", f"--path={path}", str(blob)])

    def _git(self, path: str, args: list[str], stdin: bytes = b"") -> bytes:
        try:
            return gitbin.run(self._gitdir, self._root, args, stdin)
        except gitbin.GitFailed as exc:
            raise FilterFailed(
                f"git could not convert {path} as its attributes ask ({exc.stderr})",
                hint="Check the path's filter driver and line-ending settings "
                "(`git check-attr -a -- <path>`); gitpatch converts exactly as git does or "
                "changes nothing.",
                details={"path": path},
            ) from exc


def _stat(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns
