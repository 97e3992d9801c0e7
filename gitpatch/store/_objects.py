"""The object store: blobs, trees and commits, read and written without index or worktree.

A new tree is built from a base tree and a list of file changes: only the directories on the
paths that change are touched, each with one ``TreeBuilder`` seeded with its old entries, so the
cost is (changed paths x depth), whatever the repository's size. Untouched subtrees keep their
ids, and a moved file keeps its blob id and mode. One path in a tree is looked up in one place
(``object_at``; a ``KeyError`` from pygit2 means "no such path"). Commits carry an explicit
identity and an optional trailer block.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from gitpatch.core.model import FileChange
from gitpatch.core.spliced import Content, as_bytes
from gitpatch.errors import (
    InvalidArguments,
    NotATextResource,
    ObjectMissing,
    RepositoryError,
    ResourceExists,
    ResourceNotFound,
    UnsafePath,
)
from gitpatch.safety import durability, owners
from gitpatch.safety.owners import common_dir
from gitpatch.store import _loose
from gitpatch.store._repo import Repo, git_errors

__all__ = [
    "DEFAULT_EMAIL",
    "DEFAULT_NAME",
    "MODE_BLOB",
    "MODE_EXEC",
    "MODE_LINK",
    "MODE_SUBMODULE",
    "MODE_TREE",
    "CommitInfo",
    "Objects",
    "TreeEntry",
    "build",
    "build_entries",
    "entry",
    "file_id",
    "is_dir",
    "kind_of",
    "object_at",
    "raise_tree_cache",
]

#: The identity used when git config has no ``user.name`` / ``user.email``.
DEFAULT_NAME = "gitpatch"
DEFAULT_EMAIL = "gitpatch@localhost"

#: An object id in libgit2's "not found" messages.
_OBJECT_ID = re.compile(r"\b[0-9a-f]{40}\b")

_TRAILER_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")

MODE_BLOB = int(FileMode.BLOB)
MODE_EXEC = int(FileMode.BLOB_EXECUTABLE)
MODE_LINK = int(FileMode.LINK)
MODE_SUBMODULE = int(FileMode.COMMIT)
MODE_TREE = int(FileMode.TREE)
#: Trees up to this size stay parsed in libgit2's object cache. Its default (4 KB) leaves out
#: the root tree of any sizeable repository, which every lookup then re-reads, re-hashes and
#: re-parses; a proposal looks a root tree up a dozen times.
TREE_CACHE_LIMIT = 1 << 20
#: Blobs from this size up are remembered by ``build`` for the working tree (see ``build``).
FRESH_MIN = 1 << 20
#: How many such blobs are remembered (the oldest goes first; a land takes its own out), which
#: bounds what a long-lived process keeps of proposals that never land (review mode).
FRESH_MAX = 2


def kind_of(mode: int) -> str:
    """A word for what an entry of this filemode is, for messages."""
    return {
        MODE_TREE: "a directory",
        MODE_LINK: "a symbolic link",
        MODE_SUBMODULE: "a submodule",
    }.get(mode, "a file")


@dataclass(frozen=True)
class _Leaf:
    oid: pygit2.Oid
    mode: int


@dataclass
class _Dir:
    """A directory being rebuilt: its old tree (None when new) and the entries that change.

    In ``changes`` a name maps to a ``_Dir`` (descend), a ``_Leaf`` (write) or None (remove).
    """

    path: str
    base: pygit2.Tree | None
    changes: dict[str, _Dir | _Leaf | None] = field(default_factory=dict)


_Entry = _Dir | _Leaf | None


class _Overlay:
    """The base tree with the changes applied so far; answers lookups the way the result will."""

    def __init__(self, repo: pygit2.Repository, base: pygit2.Tree | None) -> None:
        self.repo = repo
        self.root = _Dir("", base)

    def _child(self, node: _Dir, name: str) -> _Entry:
        if name in node.changes:
            return node.changes[name]
        if node.base is None or name not in node.base:
            return None
        obj = node.base[name]
        path = f"{node.path}/{name}" if node.path else name
        if obj.filemode == MODE_TREE:
            subtree = self.repo[obj.id]
            assert isinstance(subtree, pygit2.Tree)
            sub = _Dir(path, subtree)
            node.changes[name] = sub  # cached so later edits below it share one builder
            return sub
        return _Leaf(obj.id, obj.filemode)

    def _parent(self, path: str, create: bool) -> tuple[_Dir, str] | None:
        """The directory holding ``path`` (made when ``create``), or None if it does not exist."""
        *dirs, name = path.split("/")
        node = self.root
        for depth, part in enumerate(dirs):
            child = self._child(node, part)
            here = "/".join(dirs[: depth + 1])
            if isinstance(child, _Leaf):
                raise ResourceExists(
                    f"cannot place {path!r}: {here!r} is {kind_of(child.mode)}, not a directory",
                    hint=f"Choose a path that does not go through the file {here!r}, or delete "
                    "that file in the same proposal.",
                    details={"path": path, "blocking": here},
                )
            if child is None:
                if not create:
                    return None
                child = _Dir(here, None)
                node.changes[part] = child
            node = child
        return node, name

    def lookup(self, path: str) -> _Entry:
        """What ``path`` holds now: a leaf, a non-empty directory, or None."""
        found = self._parent(path, create=False) if "/" in path else (self.root, path)
        try:
            current = None if found is None else self._child(*found)
        except ResourceExists:
            return None
        return None if isinstance(current, _Dir) and _empty(current) else current

    def put(self, path: str, leaf: _Leaf) -> None:
        """Write ``leaf`` at ``path``; refuses to overwrite a directory that still has files."""
        parent, name = self._parent(path, create=True) or (self.root, path)
        current = self._child(parent, name)
        # A directory emptied by earlier changes disappears, so a file may take its name.
        if isinstance(current, _Dir) and not _empty(current):
            raise NotATextResource(
                f"cannot write {path!r}: it is a directory",
                hint="Write to a file path inside the directory instead.",
                details={"path": path},
            )
        parent.changes[name] = leaf

    def remove(self, path: str) -> _Leaf:
        """Remove the file at ``path`` and return what it was; it must exist and not be a dir."""
        found = self._parent(path, create=False) if "/" in path else (self.root, path)
        current = None if found is None else self._child(*found)
        if current is None or found is None:
            raise ResourceNotFound(
                f"cannot remove {path!r}: no such file in the base commit",
                hint="Read the file list again; the path may have been moved or deleted.",
                details={"path": path},
            )
        if isinstance(current, _Dir):
            raise NotATextResource(
                f"cannot remove {path!r}: it is a directory",
                hint="Delete the files inside it one by one.",
                details={"path": path},
            )
        found[0].changes[found[1]] = None
        return current


def _empty(node: _Dir) -> bool:
    """True when ``node`` will hold nothing once the changes are applied."""
    names = {entry.name for entry in node.base} if node.base is not None else set()
    for name, entry in node.changes.items():
        if entry is None or (isinstance(entry, _Dir) and _empty(entry)):
            names.discard(name)
        else:
            names.add(name)
    return not names


def _dirty(node: _Dir) -> bool:
    """True when something below ``node`` changes (lookups alone cache unchanged dirs)."""
    return node.base is None or any(
        not isinstance(entry, _Dir) or _dirty(entry) for entry in node.changes.values()
    )


def _write(repo: pygit2.Repository, node: _Dir) -> pygit2.Oid | None:
    """Write ``node`` and its changed subdirectories; None when the result is empty."""
    builder = repo.TreeBuilder(node.base) if node.base is not None else repo.TreeBuilder()
    count = len(node.base) if node.base is not None else 0
    for name, entry in node.changes.items():
        if isinstance(entry, _Dir) and not _dirty(entry):
            continue  # only looked at: its tree id stays as it is
        present = builder.get(name) is not None
        if isinstance(entry, _Dir):
            oid = _write(repo, entry)
            if oid is None:
                entry = None
            else:
                builder.insert(name, oid, MODE_TREE)
                count += 0 if present else 1
                continue
        if entry is None:
            if present:
                builder.remove(name)
                count -= 1
            continue
        builder.insert(name, entry.oid, entry.mode)
        count += 0 if present else 1
    if count == 0 and node.path:
        return None
    return builder.write()


def _check_path(path: str) -> None:
    if not path or path.startswith("/") or path.endswith("/") or "\x00" in path:
        raise InvalidArguments(
            f"invalid repository path {path!r}",
            hint="Pass a normalized path relative to the repository root.",
            details={"path": path},
        )
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise InvalidArguments(
            f"invalid repository path {path!r}: empty, '.' or '..' component",
            hint="Pass a normalized path relative to the repository root.",
            details={"path": path},
        )
    # A tree entry named .git (in any case) is refused by `git fsck` and by checkouts.
    if any(part.lower() == ".git" for part in parts):
        raise UnsafePath(
            f"path {path!r} is inside .git",
            hint="gitpatch never writes git's own files.",
            details={"path": path},
        )


def raise_tree_cache() -> None:
    """Let libgit2 cache trees up to ``TREE_CACHE_LIMIT`` (process-wide; cheap to repeat)."""
    pygit2.settings.cache_object_limit(pygit2.enums.ObjectType.TREE, TREE_CACHE_LIMIT)


def _create_blob(
    repo: pygit2.Repository, content: Content, fresh: dict[pygit2.Oid, Content] | None
) -> pygit2.Oid:
    """Write a blob; a large one is also remembered in ``fresh`` (a few, newest last).

    A large one is written by ``loose`` (hashed and deflated in one pass, as git does).
    """
    if len(content) >= _loose.LARGE:
        hexid = _loose.write_blob(
            common_dir(repo.path) / "objects",
            content,
            level=_loose_level(repo),
            durable=durability.enabled(),
        )
        oid = pygit2.Oid(hex=hexid)
    else:
        # a Spliced is joined (``as_bytes``) only on this rare path
        oid = repo.create_blob(content if isinstance(content, bytes) else as_bytes(content))
    if fresh is not None and len(content) >= FRESH_MIN:
        fresh[oid] = content
        while len(fresh) > FRESH_MAX:
            del fresh[next(iter(fresh))]
    return oid


def _loose_level(repo: pygit2.Repository) -> int:
    """git's zlib level for loose objects: ``core.looseCompression``, ``core.compression``, 1."""
    for key in ("core.looseCompression", "core.compression"):
        try:
            level = int(str(repo.config[key])) if key in repo.config else None
        except (KeyError, ValueError, pygit2.GitError):
            level = None
        if level is not None and -1 <= level <= 9:
            return level
    return _loose.DEFAULT_LEVEL


def _apply(
    repo: pygit2.Repository,
    tree: _Overlay,
    change: FileChange,
    fresh: dict[pygit2.Oid, Content] | None = None,
) -> None:
    _check_path(change.path)
    if change.source is not None:
        _check_path(change.source)
        moved = tree.remove(change.source)
        if change.path != change.source and tree.lookup(change.path) is not None:
            raise ResourceExists(
                f"cannot move {change.source!r} to {change.path!r}: the target already exists",
                hint="Pick a new target path, or delete the existing file first.",
                details={"path": change.path, "source": change.source},
            )
        if change.content is not None and moved.mode in (MODE_LINK, MODE_SUBMODULE):
            raise NotATextResource(
                f"cannot edit {change.source!r}: it is {kind_of(moved.mode)}",
                hint="Move it without changing its content, or edit regular files only.",
                details={"path": change.source},
            )
        # Same bytes hash to the same id, so an unchanged move reuses the blob either way.
        content = change.content
        oid = moved.oid if content is None else _create_blob(repo, content, fresh)
        mode = moved.mode
        if change.mode is not None and mode not in (MODE_LINK, MODE_SUBMODULE):
            mode = change.mode
        tree.put(change.path, _Leaf(oid, mode))
        return
    if change.content is None:
        tree.remove(change.path)
        return
    current = tree.lookup(change.path)
    mode = current.mode if isinstance(current, _Leaf) else MODE_BLOB
    if change.mode is not None and mode not in (MODE_LINK, MODE_SUBMODULE):
        mode = change.mode
    if mode in (MODE_LINK, MODE_SUBMODULE):
        raise NotATextResource(
            f"cannot write {change.path!r}: it is {kind_of(mode)}, not a regular file",
            hint="gitpatch edits regular files only.",
            details={"path": change.path},
        )
    tree.put(change.path, _Leaf(_create_blob(repo, change.content, fresh), mode))


def build(
    repo: pygit2.Repository,
    base: pygit2.Tree | None,
    changes: Sequence[FileChange],
    fresh: dict[pygit2.Oid, Content] | None = None,
) -> pygit2.Oid:
    """Write the tree ``base`` becomes after ``changes`` (applied in order); return its id.

    Blobs of ``FRESH_MIN`` bytes or more are remembered in ``fresh`` (id -> content), so the
    working tree can write a large file it lands without reading it back from the store.
    """
    tree = _Overlay(repo, base)
    for change in changes:
        _apply(repo, tree, change, fresh)
    oid = _write(repo, tree.root)
    assert oid is not None  # the root is always written, even when empty
    return oid


def build_entries(
    repo: pygit2.Repository,
    base: pygit2.Tree | None,
    entries: Mapping[str, tuple[pygit2.Oid, int] | None],
) -> pygit2.Oid:
    """Like ``build`` for entries that already exist as objects: path -> (id, mode), or None
    to remove. Used to replay one side of a merge onto the other, modes included."""
    tree = _Overlay(repo, base)
    # Removals first: a file may take the place of a directory whose files go (and back).
    for path, side in sorted(entries.items(), key=lambda item: item[1] is not None):
        _check_path(path)
        if side is None:
            tree.remove(path)
        else:
            tree.put(path, _Leaf(*side))
    oid = _write(repo, tree.root)
    assert oid is not None
    return oid


def entry(tree: pygit2.Tree | None, path: str) -> tuple[pygit2.Oid, int] | None:
    """The (blob id, mode) at ``path`` in ``tree``, ``None`` when absent or not a blob."""
    obj = object_at(tree, path)
    if obj is None or obj.type != pygit2.enums.ObjectType.BLOB:
        return None
    return obj.id, int(obj.filemode)


def is_dir(tree: pygit2.Tree | None, path: str) -> bool:
    """True when ``tree`` has a directory at ``path``."""
    obj = object_at(tree, path)
    return obj is not None and obj.type == pygit2.enums.ObjectType.TREE


def file_id(tree: pygit2.Tree | None, path: str) -> pygit2.Oid | None:
    """The id of the entry at ``path`` unless it is a directory (a blob, link or submodule)."""
    obj = object_at(tree, path)
    return None if obj is None or obj.filemode == pygit2.enums.FileMode.TREE else obj.id


def object_at(tree: pygit2.Tree | None, path: str) -> pygit2.Object | None:
    """The entry at ``path`` (``a/b/c``) in ``tree``, None when there is none."""
    if tree is None:
        return None
    try:
        return tree[path]
    except KeyError:
        return None


@dataclass(frozen=True)
class TreeEntry:
    """One entry of a commit's tree: the object id and its git filemode (``0o100644``...)."""

    oid: pygit2.Oid
    mode: int

    @property
    def kind(self) -> str:
        """``file``, ``executable``, ``directory``, ``symlink`` or ``submodule``."""
        return {
            MODE_TREE: "directory",
            MODE_LINK: "symlink",
            MODE_SUBMODULE: "submodule",
            MODE_EXEC: "executable",
        }.get(self.mode, "file")


@dataclass(frozen=True)
class CommitInfo:
    """What gitpatch needs to know about one commit."""

    id: pygit2.Oid
    parents: tuple[pygit2.Oid, ...]
    author_name: str
    author_email: str
    time: int
    message: str
    trailers: Mapping[str, str] = field(default_factory=dict, hash=False)

    @property
    def author(self) -> str:
        """``Name <email>``, as git prints it."""
        return f"{self.author_name} <{self.author_email}>"

    @property
    def summary(self) -> str:
        """The first line of the message."""
        return self.message.split("\n", 1)[0]


def _format_message(message: str, trailers: Mapping[str, str] | None) -> str:
    body = message.strip()
    if not body:
        raise InvalidArguments("a commit message must not be empty", hint="Describe the change.")
    if not trailers:
        return body + "\n"
    lines = []
    for key, value in trailers.items():
        if not _TRAILER_KEY.match(key) or not value.strip() or "\n" in value:
            raise InvalidArguments(
                f"invalid commit trailer {key!r}: {value!r}",
                hint="Trailer keys are letters, digits and '-'; values are one non-empty line.",
                details={"key": key},
            )
        lines.append(f"{key}: {value.strip()}")
    return body + "\n\n" + "\n".join(lines) + "\n"


class Objects(Repo):
    """Blobs, trees and commits: the part of ``Store`` that reads and writes objects."""

    _identity: tuple[str, str] | None
    #: The last few large blobs ``build_tree`` wrote, id -> content (see ``build``):
    #: a land takes its blob from here instead of reading it back (``WorkingTree``).
    fresh_blobs: dict[pygit2.Oid, Content]
    #: The objects folder (a large loose blob is read from it directly, see ``_loose``).
    _objects: Path

    def _identity_pair(self) -> tuple[str, str]:
        if self._identity is None:
            name = email = None
            with git_errors("read user.name / user.email from git config"):
                config = self.repo.config
                if "user.name" in config:
                    name = str(config["user.name"]).strip() or None
                if "user.email" in config:
                    email = str(config["user.email"]).strip() or None
            self._identity = (name or DEFAULT_NAME, email or DEFAULT_EMAIL)
        return self._identity

    def signature(self) -> pygit2.Signature:
        """Who commits: git config ``user.name``/``user.email``, else the documented default.

        The default is ``gitpatch <gitpatch@localhost>`` (``DEFAULT_NAME``, ``DEFAULT_EMAIL``).

        The time is now. Never raises for a missing identity.
        """
        name, email = self._identity_pair()
        try:
            return pygit2.Signature(name, email)
        except (pygit2.GitError, ValueError):
            # libgit2 refuses some configured identities (angle brackets, only spaces); a
            # commit must still be possible, so fall back to the documented default.
            self._identity = (DEFAULT_NAME, DEFAULT_EMAIL)
            return pygit2.Signature(DEFAULT_NAME, DEFAULT_EMAIL)

    def commit(
        self,
        tree: pygit2.Oid,
        parents: Sequence[pygit2.Oid],
        message: str,
        trailers: Mapping[str, str] | None = None,
        author: pygit2.Signature | None = None,
    ) -> pygit2.Oid:
        """Write a commit object (no ref moves); trailers go in a final ``Key: value`` block."""
        text = _format_message(message, trailers)
        committer = self.signature()
        try:
            with git_errors(f"create a commit of tree {tree}"):
                oid = self.repo.create_commit(
                    None, author or committer, committer, text, tree, list(parents)
                )
        except RepositoryError as exc:
            durability.refuse_full(exc, self.repo.path, len(text))  # a full disk named
            raise
        assert isinstance(oid, pygit2.Oid)
        return oid

    def info(self, commit: pygit2.Oid) -> CommitInfo:
        """Id, parents, author, time, message and trailers of ``commit``."""
        with git_errors(f"read commit {commit}"):
            obj = self._commit(commit)
            return CommitInfo(
                id=obj.id,
                parents=tuple(obj.parent_ids),
                author_name=obj.author.name,
                author_email=obj.author.email,
                time=obj.author.time,
                message=obj.message,
                trailers=dict(obj.message_trailers),
            )

    def _commit(self, commit: pygit2.Oid) -> pygit2.Commit:
        obj = self.repo[commit]
        if not isinstance(obj, pygit2.Commit):
            raise RepositoryError(
                f"{commit} is a {obj.type_str}, not a commit", details={"id": str(commit)}
            )
        return obj

    def resolve_commit(self, rev: str) -> pygit2.Oid:
        """A full or unique-prefix commit id, or a ref name, as a commit id."""
        if not rev or not rev.strip():
            raise InvalidArguments("empty revision", hint="Pass a commit id or a ref name.")
        action = f"resolve {rev!r} to a commit"
        with git_errors(action):
            obj = self.repo.revparse_single(rev.strip())
            try:
                commit = obj.peel(pygit2.Commit)
            except (pygit2.GitError, ValueError) as exc:
                raise RepositoryError(
                    f"{action}: it names a {obj.type_str}, not a commit",
                    hint="Pass a commit id or a branch name.",
                    details={"rev": rev},
                ) from exc
        assert isinstance(commit.id, pygit2.Oid)
        return commit.id

    def _object_at(self, commit: pygit2.Oid, path: str) -> pygit2.Object | None:
        with git_errors(f"look up {path!r} in {commit}"):
            return object_at(self.repo[commit].peel(pygit2.Tree), path)

    def entry(self, commit: pygit2.Oid, path: str) -> TreeEntry | None:
        """The tree entry (file, directory, link or submodule) at ``path`` in ``commit``."""
        obj = self._object_at(commit, path)
        return None if obj is None else TreeEntry(obj.id, obj.filemode)

    def read(self, commit: pygit2.Oid, path: str) -> bytes | None:
        """The bytes of the file at ``path`` in ``commit``; None when there is no such path."""
        obj = self._object_at(commit, path)
        if obj is None:
            return None
        if not isinstance(obj, pygit2.Blob) or obj.filemode == MODE_LINK:
            found = TreeEntry(obj.id, obj.filemode)
            raise NotATextResource(
                f"{path!r} is {kind_of(found.mode)}, not a file",
                hint="Read a regular file; list a directory's files instead of reading it.",
                details={"path": path, "kind": found.kind},
            )
        with git_errors(f"read {path!r} in {commit}"):
            return self.blob_data(obj.id, path)

    def blob_size(self, oid: pygit2.Oid) -> int:
        """The size in bytes of blob ``oid``, from its header (the content is not inflated)."""
        with git_errors(f"read the header of blob {oid}"):
            return int(self.repo.odb.read_header(oid)[1])

    def blob_data(self, oid: pygit2.Oid, path: str | None = None) -> bytes:
        """The content of blob ``oid`` (the file at ``path``, when the caller knows it); a large
        loose one inflated once, straight into the bytes returned (``loose``), the rest through
        libgit2's object database. ``ObjectMissing`` when a partial clone never fetched it."""
        with git_errors(f"read blob {oid}"):
            try:
                kind, size = self.repo.odb.read_header(oid)
            except KeyError:
                self.refuse_missing(oid, path)
                raise
            if size >= _loose.LARGE and kind == pygit2.enums.ObjectType.BLOB:
                data = _loose.read_blob(self._objects, str(oid))
                if data is not None:
                    return data
            return self.repo.odb.read(oid)[1]

    def promisor(self) -> str | None:
        """The remote a partial clone (``git clone --filter``) fetches missing objects from;
        None when this is a full clone."""
        named = self.config_get("extensions.partialclone")
        if named:
            return named
        with contextlib.suppress(pygit2.GitError):
            for remote in self.repo.remotes.names():
                if remote and self.config_bool(f"remote.{remote}.promisor"):
                    return remote
        return None

    def refuse_missing(self, oid: pygit2.Oid | str, path: str | None = None) -> None:
        """Raise ``ObjectMissing`` when ``oid`` is a blob a partial clone left on its promisor
        remote (returns in a full clone: a missing object there is another matter)."""
        remote = self.promisor()
        if remote is None:
            return
        what = f"{path} (blob {oid})" if path else f"blob {oid}"
        fetch = f"git fetch {remote} {oid}"
        hint = f"Fetch it with `{fetch}`, then retry the same call."
        if path:
            hint = (
                f"Fetch it with `{fetch}` (a path outside a sparse checkout also comes with "
                f"`git sparse-checkout add {path}`), then retry the same call."
            )
        raise ObjectMissing(
            f"{what} is not in this repository: it is a partial clone (cloned with --filter) "
            f"that has not fetched that content from '{remote}' yet, and gitpatch never "
            "fetches; nothing was changed",
            hint=hint,
            details={"oid": str(oid), "path": path, "remote": remote, "reason": "partial_clone"},
        )

    def has_blob(self, oid: pygit2.Oid) -> bool:
        """True when blob ``oid`` is in the object database."""
        with git_errors(f"look up blob {oid}"):
            try:
                kind, _size = self.repo.odb.read_header(oid)
            except KeyError:
                return False
            return bool(kind == pygit2.enums.ObjectType.BLOB)

    def write_blob(self, data: bytes) -> pygit2.Oid:
        """Store ``data`` as a blob; its id."""
        with git_errors("write a blob"):
            return self.repo.create_blob(data)

    def build_tree(self, base: pygit2.Oid | None, changes: Sequence[FileChange]) -> pygit2.Oid:
        """The tree of commit ``base`` (None: empty) after ``changes``; cost ~ paths x depth."""
        need = sum(len(c.content or b"") for c in changes)
        try:
            with git_errors(f"build a tree on {base or 'an empty repository'}"):
                tree = None if base is None else self.repo[base].peel(pygit2.Tree)
                return build(self.repo, tree, changes, self.fresh_blobs)
        except RepositoryError as exc:
            durability.refuse_full(exc, self.repo.path, need)  # a full disk named
            raise

    def tree_of(self, commit: pygit2.Oid) -> pygit2.Oid:
        """The id of ``commit``'s tree."""
        with git_errors(f"read the tree of {commit}"):
            return self.repo[commit].peel(pygit2.Tree).id

    def files(self, commit: pygit2.Oid) -> Iterator[str]:
        """The paths of every non-directory entry of ``commit``'s tree."""
        repo = self.repo
        stack: list[tuple[str, pygit2.Tree]] = [("", repo[commit].peel(pygit2.Tree))]
        while stack:
            prefix, node = stack.pop()
            for entry in node:
                name = prefix + (entry.name or "")
                if entry.filemode == MODE_TREE:
                    stack.append((name + "/", repo[entry.id].peel(pygit2.Tree)))
                else:
                    yield name

    def has_commit(self, commit: pygit2.Oid) -> bool:
        """True when ``commit`` is in the object store (a push's old value may not be)."""
        return commit in self.repo

    def add_object_directory(self, path: str) -> None:
        """Also read objects from ``path`` (a hook's quarantine directory, where a push's
        objects wait until the hook accepts them)."""
        with git_errors(f"add the object directory {path!r}"):
            self.repo.odb.add_disk_alternate(path)

    @contextlib.contextmanager
    def operation(self) -> Iterator[None]:
        """Run one gitpatch operation under an owner record (see ``gitpatch.safety.owners``),
        with libgit2's fsync set as this repository's git config asks (``durability``)."""
        if durability.applied != [self._durable]:  # set once per process, mostly
            durability.apply(self._durable)
        with owners.operation(self.repo.path):
            try:
                yield
            except RepositoryError as exc:
                self._refuse_if_missing(exc)
                raise

    def _refuse_if_missing(self, exc: RepositoryError) -> None:
        """``exc`` as ``ObjectMissing`` when libgit2 met an object a partial clone never
        fetched (a merge or a diff reading a blob by id, the path unknown there)."""
        found = _OBJECT_ID.search(str(exc.details.get("cause", "")))
        if found is None or self.promisor() is None:
            return
        with contextlib.suppress(ValueError, pygit2.GitError):
            if pygit2.Oid(hex=found.group()) in self.repo.odb:
                return
        path = exc.details.get("path") or self._path_of(
            found.group(), _OBJECT_ID.findall(str(exc.details.get("action", "")))
        )
        try:
            self.refuse_missing(found.group(), path)
        except ObjectMissing as missing:
            raise missing from exc

    def _path_of(self, blob: str, commits: list[str]) -> str | None:
        """A path holding ``blob`` in one of ``commits`` (ids), for an error message."""
        for commit in commits:
            with contextlib.suppress(KeyError, ValueError, pygit2.GitError):
                obj = self.repo[commit]
                if obj.type != pygit2.enums.ObjectType.COMMIT:
                    continue
                for path in self.files(obj.id):
                    found = object_at(obj.peel(pygit2.Tree), path)
                    if found is not None and str(found.id) == blob:
                        return path
        return None
