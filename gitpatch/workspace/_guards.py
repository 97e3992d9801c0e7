"""What a proposal must pass before it may land: safe paths, unchanged versions, a new change.

The Workspace runs these on the touched paths only, so their cost follows the proposal, not the
repository: a tree lookup and an ``lstat`` per path component, a blob comparison per path, and a
history walk limited to the commits made since the version the caller read. ``Snapshot`` is the
lazy view of a commit the engine reads.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path

import pygit2

from gitpatch.checkout.filters import Filters
from gitpatch.core.model import AddFile, Changeset, DeleteFile, Proposal, UpdateFile
from gitpatch.core.spliced import as_bytes
from gitpatch.errors import (
    FilesystemError,
    InvalidArguments,
    NotATextResource,
    PathIgnored,
    RepositoryError,
    ResourceConflict,
    ResourceExists,
    ResourceNotFound,
    UnsafePath,
)
from gitpatch.store import MODE_LINK, MODE_SUBMODULE, MODE_TREE, Store, blob_id, file_id

__all__ = [
    "Snapshot",
    "blob",
    "check_gitmodules",
    "check_paths",
    "check_unchanged",
    "fingerprint",
    "fingerprint_of",
    "resolve_version",
]


def fingerprint(changeset: Changeset) -> str:
    """sha256 hex of the sorted ``"<path>\\t<new blob hex or DELETED>"`` lines of a changeset.

    Two proposals with the same fingerprint make the same change to their files, whatever edit
    language or matching led there: that is how a change a person rejected is recognised.
    """
    blobs: dict[str, str | None] = {}
    for change in changeset.changes:
        if change.source is not None:
            blobs[change.source] = None
        blobs[change.path] = None if change.content is None else blob_id(change.content)
    return fingerprint_of(blobs)


def fingerprint_of(blobs: Mapping[str, str | None]) -> str:
    """The fingerprint of a change that leaves each path with a blob (hex) or deletes it (None)."""
    text = "\n".join(f"{path}\t{blob or 'DELETED'}" for path, blob in sorted(blobs.items()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Snapshot(Mapping[str, bytes]):
    """The regular files of one commit, read lazily: the engine reads only what it names."""

    def __init__(
        self, store: Store, commit: pygit2.Oid | None, filters: Filters | None = None
    ) -> None:
        self._store = store
        self._commit = commit
        self._filters = filters
        self._cache: dict[str, bytes | None] = {}

    def _load(self, path: str) -> bytes | None:
        if path not in self._cache:
            self._cache[path] = None
            if self._commit is not None and path in self:
                data = self._store.read(self._commit, path)
                # Only a converting path differs from its blob: reading the blob a second
                # time costs a large file its whole inflate again.
                if data is not None and self._filters is not None and self._filters.converts(path):
                    found = blob(self._store, self._commit, path)
                    assert found is not None
                    data = self._filters.checkout_bytes(path, found)
                    self._filters.refuse_encoded(path, data)
                self._cache[path] = data
        return self._cache[path]

    def __getitem__(self, path: str) -> bytes:
        data = self._load(path)
        if data is None:
            raise KeyError(path)
        return data

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, str) or self._commit is None:
            return False
        found = self._store.entry(self._commit, path)
        return found is not None and found.mode != MODE_TREE

    def __iter__(self) -> Iterator[str]:
        if self._commit is None:
            return
        yield from self._store.files(self._commit)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def blob(store: Store, commit: pygit2.Oid | None, path: str) -> pygit2.Oid | None:
    """The id of the file (not directory) at ``path`` in ``commit``, or None."""
    if commit is None:
        return None
    found = store.entry(commit, path)
    return None if found is None or found.mode == MODE_TREE else found.oid


# -- paths -------------------------------------------------------------------------------------


def check_paths(
    store: Store,
    head: pygit2.Oid | None,
    paths: Sequence[str],
    *,
    disk: Path | None,
    check_ignored: bool,
    replaced: Collection[str] = (),
) -> None:
    """Refuse symlinks, submodules and directories on the branch and (``disk``) in the working
    tree, and with ``check_ignored`` untracked paths that .gitignore ignores. ``replaced``:
    directories the same change empties and writes a file at (a directory replaced by a file,
    as a commit can do): those are no refusal here (untracked files left in one on disk are
    refused by the landing's pre-flight)."""
    for path in paths:
        parts = path.split("/")
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            last = depth == len(parts)
            if last and path in replaced:
                continue
            found = None if head is None else store.entry(head, prefix)
            if found is not None:
                _refuse_mode(path, prefix, found.mode, last)
            if disk is not None:
                _refuse_disk(disk, path, prefix, last, tracked=found is not None)
    if not check_ignored:
        return
    ignored = [p for p in paths if _ignored(store, head, p)]
    if ignored:
        raise PathIgnored(
            f"{', '.join(ignored)}: ignored by .gitignore; gitpatch does not edit or create "
            "ignored files",
            hint="Edit a tracked file, or set git config gitpatch.allowIgnored true.",
            details={"paths": ignored},
        )


def replaced_directories(
    store: Store, head: pygit2.Oid | None, proposal: Proposal
) -> tuple[set[str], dict[str, list[str]]]:
    """(directories at ``head`` that ``proposal`` empties and writes a file at, directory ->
    the files it leaves in one it writes a file at without emptying it)."""
    targets = [op.path for op in proposal.operations if isinstance(op, AddFile)]
    targets += [
        op.move_to for op in proposal.operations if isinstance(op, UpdateFile) and op.move_to
    ]
    found = [t for t in targets if head is not None and _is_tree(store, head, t)]
    if not found or head is None:
        return set(), {}
    gone = {op.path for op in proposal.operations if isinstance(op, DeleteFile)}
    gone |= {op.path for op in proposal.operations if isinstance(op, UpdateFile) and op.move_to}
    files = list(store.files(head))
    replaced, kept = set(), {}
    for folder in found:
        left = [f for f in files if f.startswith(folder + "/") and f not in gone]
        if left:
            kept[folder] = left
        else:
            replaced.add(folder)
    return replaced, kept


def refuse_half_replaced(kept: Mapping[str, list[str]]) -> None:
    """``not_a_text_resource`` for a file written where a directory stays: say which files the
    change leaves in it, and how to replace the directory by a file."""
    for folder, left in kept.items():
        shown = ", ".join(left[:3]) + (f" and {len(left) - 3} more" if len(left) > 3 else "")
        raise NotATextResource(
            f"cannot replace the directory {folder} by a file: this change writes a file at "
            f"{folder} but leaves {shown} in it",
            hint=f"To replace the directory by a file, delete every file inside {folder}/ in "
            "the same change; otherwise choose another name for the file. Nothing was changed.",
            details={"path": folder, "kept": left},
        )


def refuse_case_twins(store: Store, head: pygit2.Oid | None, proposal: Proposal) -> None:
    """With ``core.ignorecase=true``, git takes ``A.txt`` and a tracked ``a.txt`` for one file
    (``git add A.txt`` updates ``a.txt``): a new path differing from a tracked one only in case
    is ``resource_exists``, naming the tracked one."""
    if head is None:
        return
    new = [op.path for op in proposal.operations if isinstance(op, AddFile)]
    new += [op.move_to for op in proposal.operations if isinstance(op, UpdateFile) and op.move_to]
    # an edit in place names no new path: the config is not even read
    if not new or not store.config_bool("core.ignorecase"):
        return
    new = [p for p in new if store.entry(head, p) is None]
    if not new:
        return
    # a case-only rename too: libgit2's index then holds one entry for both names
    gone = {op.path for op in proposal.operations if isinstance(op, DeleteFile)}
    folded = {f.casefold(): f for f in store.files(head) if f not in gone}
    for path in new:
        twin = folded.get(path.casefold())
        if twin is not None:
            raise ResourceExists(
                f"cannot create {path}: core.ignorecase is true and {twin} is tracked, so git "
                "takes the two for the same file",
                hint=f"Edit {twin} itself; to change only the case of its name, use `git mv` "
                "(with core.ignorecase true, gitpatch does not). Nothing was changed.",
                details={"path": path, "existing": twin, "reason": "ignorecase"},
            )


def _is_tree(store: Store, head: pygit2.Oid, path: str) -> bool:
    found = store.entry(head, path)
    return found is not None and found.mode == MODE_TREE


def _ignored(store: Store, head: pygit2.Oid | None, path: str) -> bool:
    if head is not None and store.entry(head, path) is not None:
        return False  # git never ignores a tracked file
    return store.is_ignored(path)


def _refuse_mode(path: str, prefix: str, mode: int, last: bool) -> None:
    """Refuse a path that is, or goes through, a symlink, a submodule or a directory."""
    if mode == MODE_LINK:
        raise UnsafePath(
            f"{path}: {prefix} is a symbolic link; gitpatch does not follow or edit symlinks",
            hint="Edit the file the link points to, by its real path.",
            details={"path": path, "symlink": prefix},
        )
    if mode == MODE_SUBMODULE:
        raise NotATextResource(
            f"{path}: {prefix} is a submodule; gitpatch does not edit inside submodules",
            hint="Open a Workspace on the submodule's own repository instead.",
            details={"path": path, "submodule": prefix},
        )
    if mode == MODE_TREE and last:
        raise NotATextResource(
            f"{path} is a directory, not a file",
            hint="Name a file inside the directory.",
            details={"path": path},
        )


def _refuse_disk(root: Path, path: str, prefix: str, last: bool, *, tracked: bool) -> None:
    """The same refusals for what is on disk (an untracked symlink or directory), and an
    untracked file standing where a directory of ``path`` has to go."""
    try:
        st = (root / prefix).lstat()
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:  # a name too long, a directory we may not enter
        raise FilesystemError.of(path, exc, "look at") from exc
    if stat.S_ISLNK(st.st_mode):
        _refuse_mode(path, prefix, MODE_LINK, last)
    if not last and not tracked and not stat.S_ISDIR(st.st_mode):
        raise ResourceExists(
            f"cannot place {path}: {prefix} is an untracked file on disk, not a directory",
            hint=f"Choose another path, or remove or commit the file {prefix} first.",
            details={"path": path, "blocking": prefix},
        )
    if not last and not tracked and os.path.lexists(root / prefix / ".git"):
        raise NotATextResource(
            f"{path}: {prefix} is a nested git repository (it has its own .git); gitpatch "
            "does not commit its files into this repository, as `git add` does not",
            hint=f"Open a Workspace on {prefix} itself to edit its files.",
            details={"path": path, "repository": prefix},
        )
    if last and stat.S_ISDIR(st.st_mode):
        _refuse_mode(path, prefix, MODE_TREE, last)
    if last and not stat.S_ISDIR(st.st_mode) and not stat.S_ISREG(st.st_mode):
        raise NotATextResource(
            f"{path} is not a regular file",
            hint="Only regular text files can be edited.",
            details={"path": path},
        )


_GITMODULES_BAD = re.compile(
    r"^\s*(?:(?:url|path)\s*=\s*\"?\s*-|update\s*=\s*\"?\s*!)", re.IGNORECASE | re.MULTILINE
)


def check_gitmodules(changeset: Changeset) -> None:
    """Refuse ``.gitmodules`` content ``git fsck --strict`` rejects: a ``url`` or ``path``
    starting with ``-`` (read as an option by the commands that get it), a command as
    ``update``, a submodule name with a ``..`` component."""
    for change in changeset.changes:
        if change.content is None or change.path.rsplit("/", 1)[-1] != ".gitmodules":
            continue
        text = as_bytes(change.content).decode("utf-8", "replace")
        bad = _GITMODULES_BAD.search(text)
        names = re.findall(r'^\s*\[submodule\s+"([^"]*)"\s*\]', text, re.MULTILINE)
        if bad is None and not any(".." in n.replace("\\", "/").split("/") for n in names):
            continue
        raise UnsafePath(
            f"{change.path}: content git fsck --strict rejects "
            f"({bad.group(0).strip() if bad else 'a submodule name with ..'})",
            hint="A submodule url or path may not start with '-', update may not be a "
            "'!command', and names may not contain '..'.",
            details={"path": change.path},
        )


# -- versions ----------------------------------------------------------------------------------


def resolve_version(store: Store, version: str | None) -> pygit2.Oid | None:
    """The commit a caller's ``expected_version`` (full or unique-prefix id) names."""
    if version is None:
        return None
    text = str(version).strip().lower()
    if len(text) < 4 or any(c not in "0123456789abcdef" for c in text):
        raise InvalidArguments(
            f"expected_version {version!r} is not a commit id",
            hint="Pass the version (a commit id) returned by your last read or edit.",
            details={"expected_version": version},
        )
    try:
        return store.resolve_commit(text)
    except RepositoryError as exc:
        raise InvalidArguments(
            f"expected_version {version!r} names no commit of this repository ({exc.message})",
            hint="Pass the version returned by your last read or edit, or read the file again "
            "to get its current version.",
            details={"expected_version": version},
        ) from exc


def check_unchanged(
    store: Store,
    reference: pygit2.Oid | None,
    head: pygit2.Oid | None,
    paths: Sequence[str],
    *,
    since_version: bool,
    branch: str,
    read: pygit2.Oid | None = None,
) -> None:
    """``resource_conflict`` when a path's content at ``head`` is not the one at ``reference``;
    with ``since_version``, ``resource_not_found`` when it was deleted (maybe re-created) since.

    Only the touched paths count: other files changing since ``reference`` is no conflict.
    ``read``: the pin the caller read (uncommitted content on top of ``reference``): a person
    committing exactly that content is no conflict, the content read is the content now.
    """
    if reference == head:
        return
    paths = [p for p in paths if read is None or blob(store, read, p) != blob(store, head, p)]
    what = f"version {str(reference)[:12]}" if since_version else "the proposal was prepared"
    gone = _deleted_since(store, reference, head, paths) if since_version else set()
    for path in paths:
        then = blob(store, reference, path)
        now = blob(store, head, path)
        if then is not None and path in gone:
            raise ResourceNotFound(
                f"{path} was deleted since {what}"
                + (" and a new file was created at that path" if now is not None else ""),
                hint="The file you read no longer exists; read the current file (and its "
                "version) before editing it.",
                details={"path": path, "version": str(reference), "head": str(head)},
            )
        if then != now:
            raise ResourceConflict(
                f"{path} changed since {what}: {branch.removeprefix('refs/heads/')} is now at "
                f"{str(head)[:12]}",
                hint="Read the file again and redo the edit on its current content, passing the "
                "new version as expected_version.",
                details={
                    "path": path,
                    "expected_version": str(reference),
                    "current_version": str(head),
                },
            )


def _deleted_since(
    store: Store, reference: pygit2.Oid | None, head: pygit2.Oid | None, paths: Sequence[str]
) -> set[str]:
    """Paths present at ``reference`` but missing in some commit between it and ``head``."""
    if reference is None or head is None:
        return set()
    present = [p for p in paths if blob(store, reference, p) is not None]
    if not present:
        return set()
    gone: set[str] = set()
    for commit in store.walk(head, hide=reference):
        if len(gone) == len(present):
            break
        for path in present:
            if path not in gone and file_id(commit.tree, path) is None:
                gone.add(path)
    return gone
