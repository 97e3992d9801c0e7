"""``Store``: every access gitpatch makes to a git repository, through pygit2 only.

The store builds trees and commits in the object store, moves refs by compare-and-swap and keeps
proposal status in notes. It never reads or writes the index file or the working tree: that is
``gitpatch.checkout.worktree``'s job. Every libgit2 call runs inside ``git_errors`` so callers only
ever see ``GitpatchError``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pygit2

from gitpatch.core.model import FileChange
from gitpatch.core.spliced import Content
from gitpatch.errors import (
    ConcurrentUpdate,
    InvalidArguments,
    NotATextResource,
    ObjectMissing,
    RepositoryError,
)
from gitpatch.safety import durability, owners
from gitpatch.store import diffs, entries, history, loose, merging, notes, refs, treediff, trees
from gitpatch.store._errors import git_errors

__all__ = ["DEFAULT_EMAIL", "DEFAULT_NAME", "HISTORY_DEPTH", "CommitInfo", "Store", "TreeEntry"]

#: The identity used when git config has no ``user.name`` / ``user.email``.
DEFAULT_NAME = "gitpatch"
DEFAULT_EMAIL = "gitpatch@localhost"

#: How far back any history walk goes (undo, log, what a session brings, deleted files).
HISTORY_DEPTH = 10_000

_TRAILER_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")


@dataclass(frozen=True)
class TreeEntry:
    """One entry of a commit's tree: the object id and its git filemode (``0o100644``...)."""

    oid: pygit2.Oid
    mode: int

    @property
    def kind(self) -> str:
        """``file``, ``executable``, ``directory``, ``symlink`` or ``submodule``."""
        return {
            trees.MODE_TREE: "directory",
            trees.MODE_LINK: "symlink",
            trees.MODE_SUBMODULE: "submodule",
            trees.MODE_EXEC: "executable",
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


#: An object id in libgit2's "not found" messages.
_OBJECT_ID = re.compile(r"\b[0-9a-f]{40}\b")

#: How old stat data must be before a listing keyed by it is kept (``flat_ref_names``).
_SETTLED_NS = 100_000_000


class Store:
    """All git access. One Store (and one pygit2.Repository) per thread/process."""

    def __init__(self, repo: pygit2.Repository) -> None:
        self.repo = repo
        self._identity: tuple[str, str] | None = None
        #: The last few large blobs ``build_tree`` wrote, id -> content (see ``trees.build``):
        #: a land takes its blob from here instead of reading it back (``WorkingTree``).
        self.fresh_blobs: dict[pygit2.Oid, Content] = {}
        self._durable = durability.wanted(self.config_get)
        self._objects = owners.common_dir(repo.path) / "objects"
        #: prefix -> (stat data of its folder and of packed-refs, the names listed then)
        self._flat: dict[str, tuple[tuple[Any, ...], list[str]]] = {}

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Store:
        """Open the repository at (or above) ``path``; ``RepositoryError`` if there is none."""
        where = os.fspath(path)
        trees.raise_tree_cache()
        try:
            with git_errors(f"open the repository at {where!r}"):
                repo = pygit2.Repository(where)
        except RepositoryError as exc:
            cause = str(exc.details.get("cause", exc.message))
            if "object format" in cause:  # libgit2 reads SHA-1 repositories only
                raise RepositoryError(
                    f"{where!r} is a git repository with SHA-256 object names "
                    "(extensions.objectFormat), which gitpatch cannot read: its git library "
                    "knows SHA-1 repositories only; nothing was changed",
                    hint="Edit this repository's files directly, or work in a SHA-1 clone "
                    "(`git init --object-format=sha1`, then fetch into it).",
                    details={"path": where, "reason": "object_format"},
                ) from exc.__cause__
            raise RepositoryError(
                f"not a git repository: {where!r} ({cause})",
                hint="Run `git init` there first, or pass the path of an existing repository.",
                details={"path": where},
            ) from exc.__cause__
        store = cls(repo)
        sig = store.signature()
        with git_errors("set the reflog identity"):
            repo.set_ident(sig.name, sig.email)  # reflog entries then name who moved the ref
        return store

    @staticmethod
    def init_bare(path: str | os.PathLike[str], branch: str = "main") -> None:
        """Create an empty bare repository at ``path`` whose HEAD names ``branch``."""
        with git_errors(f"create a bare repository at {os.fspath(path)!r}"):
            pygit2.init_repository(os.fspath(path), bare=True, initial_head=branch)

    # -- identity and commits ---------------------------------------------------------------

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
        with (
            durability.objects_written(self.repo.path, len(text)),
            git_errors(f"create a commit of tree {tree}"),
        ):
            oid = self.repo.create_commit(
                None, author or committer, committer, text, tree, list(parents)
            )
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

    # -- names ------------------------------------------------------------------------------

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

    def ref_target(self, name: str) -> pygit2.Oid | None:
        """The commit the full ref ``name`` points to, or None if it does not exist (or unborn)."""
        return refs.current_target(self.repo, name)

    def head_branch(self) -> str | None:
        """The branch HEAD points to (``refs/heads/x``, even unborn), or None when detached."""
        with git_errors("read HEAD"):
            head = self.repo.references.get("HEAD")
            if head is None or head.type != pygit2.enums.ReferenceType.SYMBOLIC:
                return None
            target = head.target
            return target if isinstance(target, str) else None

    # -- reading trees ----------------------------------------------------------------------

    def _object_at(self, commit: pygit2.Oid, path: str) -> pygit2.Object | None:
        with git_errors(f"look up {path!r} in {commit}"):
            return entries.object_at(self.repo[commit].peel(pygit2.Tree), path)

    def entry(self, commit: pygit2.Oid, path: str) -> TreeEntry | None:
        """The tree entry (file, directory, link or submodule) at ``path`` in ``commit``."""
        obj = self._object_at(commit, path)
        return None if obj is None else TreeEntry(obj.id, obj.filemode)

    def read(self, commit: pygit2.Oid, path: str) -> bytes | None:
        """The bytes of the file at ``path`` in ``commit``; None when there is no such path."""
        obj = self._object_at(commit, path)
        if obj is None:
            return None
        if not isinstance(obj, pygit2.Blob) or obj.filemode == trees.MODE_LINK:
            found = TreeEntry(obj.id, obj.filemode)
            raise NotATextResource(
                f"{path!r} is {trees.kind_of(found.mode)}, not a file",
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
            if size >= loose.LARGE and kind == pygit2.enums.ObjectType.BLOB:
                data = loose.read_blob(self._objects, str(oid))
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

    # -- writing ----------------------------------------------------------------------------

    def write_blob(self, data: bytes) -> pygit2.Oid:
        """Store ``data`` as a blob; its id."""
        with git_errors("write a blob"):
            return self.repo.create_blob(data)

    def build_tree(self, base: pygit2.Oid | None, changes: Sequence[FileChange]) -> pygit2.Oid:
        """The tree of commit ``base`` (None: empty) after ``changes``; cost ~ paths x depth."""
        need = sum(len(c.content or b"") for c in changes)
        with (
            durability.objects_written(self.repo.path, need),
            git_errors(f"build a tree on {base or 'an empty repository'}"),
        ):
            tree = None if base is None else self.repo[base].peel(pygit2.Tree)
            return trees.build(self.repo, tree, changes, self.fresh_blobs)

    def update_ref(
        self, name: str, new: pygit2.Oid | None, old: pygit2.Oid | None, message: str
    ) -> None:
        """Compare-and-swap ``name`` from ``old`` to ``new`` (None = absent); see ``refs``."""
        refs.update_ref(self.repo, name, new, old, message)

    def update_refs(self, updates: Sequence[refs.RefUpdate], message: str) -> None:
        """Compare-and-swap several ``(name, new, old)`` refs at once, all or none."""
        refs.update_refs(self.repo, updates, message)

    # -- history ----------------------------------------------------------------------------

    def changed_paths(self, old: pygit2.Oid | None, new: pygit2.Oid) -> list[str]:
        """Sorted paths whose entries differ between commits ``old`` (None: empty) and ``new``."""
        with git_errors(f"compare {old} and {new}"):
            return treediff.changed_paths(self.repo, old, new)

    def is_ancestor(self, ancestor: pygit2.Oid, commit: pygit2.Oid) -> bool:
        """True when ``ancestor`` is ``commit`` or one of its ancestors (fast-forward test)."""
        if ancestor == commit:
            return True
        with git_errors(f"check whether {ancestor} is an ancestor of {commit}"):
            return bool(self.repo.descendant_of(commit, ancestor))

    def merge(
        self,
        ours: pygit2.Oid,
        theirs: pygit2.Oid,
        message: str,
        trailers: Mapping[str, str] | None = None,
    ) -> pygit2.Oid:
        """A 3-way merge commit with parents (ours, theirs); ``MergeConflict`` writes nothing."""
        with git_errors(f"merge {theirs} into {ours}"):
            tree = history.merge_tree(self.repo, ours, theirs)
        return self.commit(tree, [ours, theirs], message, trailers)

    def merge_file(self, path: str, base: bytes | None, ours: bytes, theirs: bytes) -> bytes | None:
        """One file's 3-way merge (git's line merge); None when it conflicts or is not
        UTF-8 text (pygit2 hands merged content back as str)."""
        with git_errors(f"merge the versions of {path!r}"):
            return merging.merge_blobs(self.repo, path, base, ours, theirs)

    def pick_tree(
        self, base: pygit2.Oid | None, ours: pygit2.Oid, theirs: pygit2.Oid
    ) -> pygit2.Oid:
        """Tree ``ours`` plus the change from tree ``base`` (None: empty) to tree ``theirs``;
        ``MergeConflict`` (nothing written) when the two clash."""
        with git_errors(f"apply {base}..{theirs} onto {ours}"):
            return history.pick_tree(self.repo, base, ours, theirs)

    def file_patches(self, old: pygit2.Oid | None, new: pygit2.Oid) -> list[diffs.FilePatch]:
        """Commit ``old`` (None: empty) -> commit ``new`` file by file, in ``diff``'s order,
        each with its hunks (see ``diffs.file_patches``)."""
        with git_errors(f"diff {old} and {new}"):
            return diffs.file_patches(
                self.repo, treediff.tree_id(self.repo, old), treediff.tree_id(self.repo, new)
            )

    def tree_of(self, commit: pygit2.Oid) -> pygit2.Oid:
        """The id of ``commit``'s tree."""
        with git_errors(f"read the tree of {commit}"):
            return self.repo[commit].peel(pygit2.Tree).id

    def merge_conflicts(self, ours: pygit2.Oid, theirs: pygit2.Oid) -> list[str]:
        """The paths merging ``theirs`` into ``ours`` would conflict in ([]: it merges cleanly).

        A preview for people deciding: the merge happens in memory and writes nothing.
        """
        with git_errors(f"try merging {theirs} into {ours}"):
            return history.merge_conflicts(self.repo, ours, theirs)

    def revert(
        self,
        commit: pygit2.Oid,
        onto: pygit2.Oid,
        message: str,
        trailers: Mapping[str, str] | None = None,
    ) -> pygit2.Oid:
        """A new commit on ``onto`` undoing ``commit``; ``MergeConflict`` if later edits clash."""
        with git_errors(f"revert {commit} on {onto}"):
            tree = history.revert_tree(self.repo, commit, onto)
        return self.commit(tree, [onto], message, trailers)

    def diff(self, old: pygit2.Oid | None, new: pygit2.Oid) -> tuple[str, dict[str, int]]:
        """Unified patch ``old`` (None: empty) -> ``new``; stats {files, insertions, deletions}."""
        with git_errors(f"diff {old} and {new}"):
            return diffs.diff_trees(
                self.repo, treediff.tree_id(self.repo, old), treediff.tree_id(self.repo, new)
            )

    # -- notes ------------------------------------------------------------------------------

    def read_note(self, commit: pygit2.Oid) -> dict[str, Any] | None:
        """The JSON note of ``commit`` on ``refs/notes/gitpatch``, or None."""
        return notes.read_note(self, commit)

    def update_note(
        self, commit: pygit2.Oid, change: Callable[[dict[str, Any] | None], dict[str, Any]]
    ) -> dict[str, Any]:
        """Read-modify-write the note of ``commit`` by CAS; ``change`` may run more than once."""
        return notes.update_note(self, commit, change)

    def remove_note(self, commit: pygit2.Oid) -> bool:
        """Remove the note of ``commit`` by CAS; False when it had none."""
        return notes.remove_note(self, commit)

    def iter_notes(self) -> Iterator[tuple[pygit2.Oid, dict[str, Any]]]:
        """Every (commit id, note) on ``refs/notes/gitpatch``."""
        return notes.iter_notes(self)

    # -- what the rest of gitpatch asks of the repository -------------------------------------

    @property
    def git_dir(self) -> Path:
        """The git directory (a linked worktree's own one, under the common ``worktrees/``)."""
        return Path(self.repo.path)

    @property
    def is_bare(self) -> bool:
        """True when the repository has no working tree."""
        return bool(self.repo.is_bare)

    @property
    def workdir(self) -> str | None:
        """The working tree's root (with a trailing slash), None for a bare repository."""
        return None if self.repo.is_bare else self.repo.workdir

    def has_commit(self, commit: pygit2.Oid) -> bool:
        """True when ``commit`` is in the object store (a push's old value may not be)."""
        return commit in self.repo

    def add_object_directory(self, path: str) -> None:
        """Also read objects from ``path`` (a hook's quarantine directory, where a push's
        objects wait until the hook accepts them)."""
        with git_errors(f"add the object directory {path!r}"):
            self.repo.odb.add_disk_alternate(path)

    def walk(
        self, tip: pygit2.Oid, *, first_parent: bool = False, hide: pygit2.Oid | None = None
    ) -> Iterator[pygit2.Commit]:
        """Commits from ``tip`` back, newest first (only the first-parent line when asked),
        leaving out those reachable from ``hide``; at most ``HISTORY_DEPTH`` of them."""
        order = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME
        with git_errors(f"walk the history of {tip}"):
            walker = self.repo.walk(tip, order)
            if first_parent:
                walker.simplify_first_parent()
            if hide is not None:
                walker.hide(hide)
            yield from itertools.islice(walker, HISTORY_DEPTH)

    def first_parents(self, tip: pygit2.Oid) -> Iterator[pygit2.Commit]:
        """``tip`` and its first parents, newest first, read one by one (no sorting walk, so
        stopping early costs only what was read); at most ``HISTORY_DEPTH`` commits."""
        with git_errors(f"walk the first parents of {tip}"):
            commit: pygit2.Commit | None = self.repo[tip].peel(pygit2.Commit)
            for _ in range(HISTORY_DEPTH):
                if commit is None:
                    return
                yield commit
                commit = commit.parents[0] if commit.parents else None

    def merge_base(self, one: pygit2.Oid, two: pygit2.Oid) -> pygit2.Oid | None:
        """The best common ancestor of two commits, None when they share no history."""
        with git_errors(f"find the merge base of {one} and {two}"):
            base = self.repo.merge_base(one, two)
        return base if isinstance(base, pygit2.Oid) else None

    def ref_names(self, prefix: str) -> list[str]:
        """The full names of the refs starting with ``prefix``, sorted."""
        with git_errors(f"list the references under {prefix}"):
            return sorted(
                r.name for r in self.repo.references.iterator() if r.name.startswith(prefix)
            )

    def flat_ref_names(self, prefix: str) -> list[str]:
        """``ref_names(prefix)`` for a folder of refs one level deep (``prefix`` ends with
        ``/``), listed again only when the stat data of that folder or of ``packed-refs``
        changed since the last listing. libgit2 lists every ref to find a few (it reads each
        loose ref file): with 1,000 open proposals that is ~10 ms. Like git's own stat checks
        this trusts only settled stat data (changed over 0.1 s before the look), and a listing
        with a name below a deeper folder is never kept."""
        stamp = self._refs_stamp(prefix)
        kept = self._flat.get(prefix)
        if stamp is not None and kept is not None and kept[0] == stamp:
            return list(kept[1])
        names = self.ref_names(prefix)
        self._flat.pop(prefix, None)
        if stamp is not None and not any("/" in n[len(prefix) :] for n in names):
            self._flat[prefix] = (stamp, names)
        return list(names)

    def _refs_stamp(self, prefix: str) -> tuple[Any, ...] | None:
        """Stat data of ``prefix``'s folder and of ``packed-refs`` (None for one that does not
        exist), or None when either changed too recently to be trusted."""
        common = owners.common_dir(self.repo.path)
        now = time.time_ns()
        stamp: list[Any] = []
        for path in (common / prefix.rstrip("/"), common / "packed-refs"):
            try:
                st = os.stat(path)
            except FileNotFoundError:
                stamp.append(None)
                continue
            except OSError:
                return None
            if now - max(st.st_mtime_ns, st.st_ctime_ns) < _SETTLED_NS:
                return None
            stamp.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        return tuple(stamp)

    def set_head(self, ref: str) -> None:
        """Point HEAD at the branch ``ref``; ``ConcurrentUpdate`` (reason ``locked``) while
        HEAD.lock is held by another process (announced in an owner record first, so recovery
        can remove the lock if this process is killed holding it)."""
        with owners.holding(self.repo.path, [os.path.join(self.repo.path, "HEAD.lock")]):
            try:
                self.repo.references.create("HEAD", ref, force=True)
            except OSError as exc:
                raise ConcurrentUpdate("HEAD is locked", reason="locked") from exc

    @contextlib.contextmanager
    def operation(self) -> Iterator[None]:
        """Run one gitpatch operation under an owner record (see ``gitpatch.safety.owners``),
        with libgit2's fsync set as this repository's git config asks (``durability``)."""
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

    def durable(self) -> bool:
        """Whether git config (``core.fsync`` and friends) asks to fsync objects, refs or the
        index; read once, when the Store is made (see ``gitpatch.safety.durability``)."""
        return self._durable

    def recover(self, *, sweep: bool = False) -> list[str]:
        """Finish or undo what killed gitpatch processes left; the lock files removed (with
        ``sweep``, also libgit2's half-written object files no live process owns; see
        ``gitpatch.safety.recovery``). Returns the lock files removed."""
        with git_errors("recover what a killed gitpatch process left"):
            return refs.recover(self.repo, sweep=sweep)

    def _path_of(self, blob: str, commits: list[str]) -> str | None:
        """A path holding ``blob`` in one of ``commits`` (ids), for an error message."""
        for commit in commits:
            with contextlib.suppress(KeyError, ValueError, pygit2.GitError):
                obj = self.repo[commit]
                if obj.type != pygit2.enums.ObjectType.COMMIT:
                    continue
                for path in self.files(obj.id):
                    found = entries.object_at(obj.peel(pygit2.Tree), path)
                    if found is not None and str(found.id) == blob:
                        return path
        return None

    def files(self, commit: pygit2.Oid) -> Iterator[str]:
        """The paths of every non-directory entry of ``commit``'s tree."""
        repo = self.repo
        stack: list[tuple[str, pygit2.Tree]] = [("", repo[commit].peel(pygit2.Tree))]
        while stack:
            prefix, node = stack.pop()
            for entry in node:
                name = prefix + (entry.name or "")
                if entry.filemode == trees.MODE_TREE:
                    stack.append((name + "/", repo[entry.id].peel(pygit2.Tree)))
                else:
                    yield name

    def is_ignored(self, path: str) -> bool:
        """Whether git's ignore rules match ``path`` (tracked or not: callers check that)."""
        try:
            return bool(self.repo.path_is_ignored(path))
        except pygit2.GitError:
            return False

    def config_handle(self) -> pygit2.Config:
        """The repository's git config as one object to keep: libgit2 re-reads its files when
        they change (making one per lookup costs ~0.3 ms, which per-path callers avoid)."""
        return self.repo.config

    def attribute(self, path: str, name: str) -> str | bool | None:
        """Git attribute ``name`` of ``path`` as libgit2 reads the attribute files."""
        value: str | bool | None = self.repo.get_attr(path, name)
        return value

    def config_get(self, key: str) -> str | None:
        """The git config value of ``key``, None when unset or unreadable."""
        with contextlib.suppress(KeyError, pygit2.GitError):
            if key in self.repo.config:
                return str(self.repo.config[key])
        return None

    def config_bool(self, key: str) -> bool:
        """The git config boolean ``key``; False when unset or not a boolean."""
        with contextlib.suppress(KeyError, pygit2.GitError, ValueError):
            if key in self.repo.config:
                return bool(self.repo.config.get_bool(key))
        return False

    def config_values(self, key: str) -> list[str]:
        """Every value of the multi-valued git config ``key`` (empty when unset)."""
        with contextlib.suppress(KeyError, pygit2.GitError):
            return [str(v) for v in self.repo.config.get_multivar(key)]
        return []

    def config_set(self, key: str, value: str) -> bool:
        """Set ``key`` in the repository's config; False when the config cannot be written."""
        lock = [str(owners.config_lock(self.repo.path))]
        with owners.holding(self.repo.path, lock), contextlib.suppress(pygit2.GitError, OSError):
            self.repo.config[key] = value
            return True
        return False
