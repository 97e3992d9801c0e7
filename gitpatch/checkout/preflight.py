"""The state of a person's checkout that moving a branch must respect: checked before any ref moves.

- ``check_refs``: a branch checked out in another linked worktree is never moved or deleted
  (``git branch -f`` refuses too), nor a branch a rebase or a bisect is working on;
- ``check_landing``: before a change is written to this working tree, no merge, cherry-pick,
  revert, rebase, ``am`` or bisect may be under way here, no path it writes may have staged
  changes or unmerged entries, and every path must be writable as it stands on disk (an
  untracked file where a directory must go, a read-only directory, a name too long);
- ``check_assumed``: a file marked ``--assume-unchanged`` whose disk content differs from its
  index entry holds local changes git hides on purpose (``git commit -a`` never commits them,
  ``git checkout`` refuses to overwrite them): gitpatch neither records nor overwrites them.

It reads; it never changes the repository. Everything it refuses leaves nothing changed.
"""

from __future__ import annotations

import errno
import functools
import itertools
import os
import stat
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

from gitpatch.checkout import gitbin, indexfile
from gitpatch.checkout.index import plain_entries
from gitpatch.errors import (
    BranchCheckedOut,
    ConcurrentUpdate,
    DirtyWorktree,
    FilesystemError,
    GitpatchError,
    OperationInProgress,
    ResourceExists,
    StagedChanges,
)
from gitpatch.safety import owners
from gitpatch.store import MODE_TREE, RefUpdate, Store, git_errors

if TYPE_CHECKING:
    from gitpatch.checkout.worktree import WorkingTree

__all__ = [
    "INDEX_LOCK_WAIT_SECONDS",
    "check_assumed",
    "check_landing",
    "check_staged",
    "check_unmerged",
    "check_refs",
    "common_dir",
    "operation",
    "preflight",
    "preflight_paths",
    "refuse_detached",
    "refuse_operation_here",
    "wait_for_index_lock",
]

# What git leaves in a worktree's git directory while an operation waits for the person.
_MARKERS = (
    ("rebase-merge", "rebase"),
    ("rebase-apply/applying", "am"),
    ("rebase-apply", "rebase"),
    ("MERGE_HEAD", "merge"),
    ("CHERRY_PICK_HEAD", "cherry-pick"),
    ("REVERT_HEAD", "revert"),
    ("BISECT_START", "bisect"),
)
_HINTS = {
    "merge": "finish it (`git commit`) or abort it (`git merge --abort`)",
    "cherry-pick": "finish it (`git cherry-pick --continue`) or abort it "
    "(`git cherry-pick --abort`)",
    "revert": "finish it (`git revert --continue`) or abort it (`git revert --abort`)",
    "rebase": "finish it (`git rebase --continue`) or abort it (`git rebase --abort`)",
    "am": "finish it (`git am --continue`) or abort it (`git am --abort`)",
    "bisect": "end it with `git bisect reset`",
}
_NAME_MAX = 255
#: How long a landing waits for another git process to release ``index.lock``.
INDEX_LOCK_WAIT_SECONDS = 2.0
_MODE_LINK = 0o120000
_EMPTY = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # the empty blob: an intent-to-add entry
#: Reads of the index and branch tip that a git command may disturb before giving up.
_SETTLE_ATTEMPTS = 20

#: path -> (blob id hex, mode) of a file in some commit, None when it has none there.
Entries = Callable[[str], "tuple[str, int] | None"]
#: path -> {stage: (blob id hex, mode)} of its index entries (stage 0, or 1-3 when unmerged).
IndexView = Callable[[str], "dict[int, tuple[str, int]]"]


def _short(ref: str) -> str:
    return ref.removeprefix("refs/heads/")


def refuse_operation_here(gitdir: Path, ref: str, root: Path) -> None:
    """``operation_in_progress`` when git waits for the person in this worktree."""
    doing = operation(gitdir)
    if doing is not None:
        _refuse_operation(doing, ref, root)


def refuse_detached(gitdir: Path, root: Path | None) -> None:
    """``operation_in_progress`` when HEAD is detached because git is rebasing or bisecting
    a branch here (or any operation waits): say what is under way, not "check out a branch"."""
    doing = operation(gitdir)
    if doing is None:
        return
    busy = {what: ref for ref, what in _busy_branches(gitdir).items()}
    _refuse_operation(doing, busy.get(doing, "HEAD"), root)


def common_dir(gitdir: Path) -> Path:
    """The repository's common git directory (a linked worktree's gitdir names it)."""
    try:
        text = (gitdir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return gitdir
    return (gitdir / text).resolve()


def operation(gitdir: Path, names: Collection[str] | None = None) -> str | None:
    """The git operation waiting in the worktree whose git directory is ``gitdir``, if any
    (``names``: the entries of ``gitdir``, when the caller has listed it already)."""
    present = _entries(gitdir) if names is None else names
    for marker, name in _MARKERS:
        top, _, inner = marker.partition("/")
        if top in present and (not inner or (gitdir / marker).exists()):
            return name
    return None


def _entries(gitdir: Path) -> set[str]:
    """The names in ``gitdir``: one directory read answers every marker question."""
    try:
        return set(os.listdir(gitdir))
    except OSError:
        return set()


def _worktrees(gitdir: Path, bare: bool) -> list[tuple[Path, Path | None]]:
    """(git directory, working tree path or None for a bare main repository) of every worktree."""
    common = common_dir(gitdir)
    main_bare = bare and common == gitdir
    out: list[tuple[Path, Path | None]] = [(common, None if main_bare else common.parent)]
    try:
        linked = sorted(os.scandir(common / "worktrees"), key=lambda e: e.name)
    except OSError:
        linked = []
    for entry in linked:
        try:
            where = Path((Path(entry.path) / "gitdir").read_text(encoding="utf-8").strip()).parent
        except OSError:
            where = Path(entry.path)
        out.append((Path(entry.path), where))
    return out


def _read_ref(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    text = text.removeprefix("ref:").strip()
    if not text:
        return None
    return text if text.startswith("refs/") else f"refs/heads/{text}"


def _busy_branches(gitdir: Path) -> dict[str, str]:
    """Branch -> what holds it in one worktree: ``checked out``, or an operation's name."""
    out: dict[str, str] = {}
    names = _entries(gitdir)
    try:
        symbolic = (gitdir / "HEAD").read_text(encoding="utf-8").startswith("ref:")
    except OSError:
        symbolic = False
    head = _read_ref(gitdir / "HEAD") if symbolic else None  # a detached HEAD holds no branch
    doing = operation(gitdir, names)
    if head is not None:
        out[head] = doing if doing in ("merge", "cherry-pick", "revert", "am") else "checked out"
    for folder in ("rebase-merge", "rebase-apply"):
        ref = _read_ref(gitdir / folder / "head-name") if folder in names else None
        if ref is not None:
            out[ref] = "rebase"
    ref = _read_ref(gitdir / "BISECT_START") if "BISECT_START" in names else None
    if ref is not None:
        out[ref] = "bisect"
    return out


def check_refs(gitdir: Path, bare: bool, refs: Sequence[RefUpdate]) -> None:
    """Refuse moving (or deleting) a branch another worktree has checked out, or one a rebase
    or bisect (here or elsewhere) is working on; the branch checked out here may move."""
    moving = {ref for ref, _new, _old in refs if ref.startswith("refs/heads/")}
    if not moving:
        return
    own = gitdir.resolve()
    for other, where in _worktrees(gitdir, bare):
        here = other.resolve() == own
        for ref, what in _busy_branches(other).items():
            if ref not in moving or where is None and what == "checked out":
                continue
            if what == "checked out":
                if here:
                    continue
                hint = (
                    f"Switch that worktree to another branch, or open the Workspace in {where} "
                    "so the change lands there. Nothing was changed."
                )
                if where is not None and not where.exists():  # a drive away, `git worktree lock`
                    hint = (
                        "Its folder is not there: mount the drive it is on (a session end "
                        "killed midway finishes when run again); if it is gone for good, git "
                        f"worktree unlock {where} (when locked), then git worktree prune. "
                        "Nothing was changed."
                    )
                raise BranchCheckedOut(
                    f"cannot move {_short(ref)}: it is checked out in the worktree at {where}; "
                    "its files and index would no longer match the branch",
                    hint=hint,
                    details={"branch": ref, "worktree": str(where)},
                )
            if here and what in ("merge", "cherry-pick", "revert", "am"):
                continue  # the landing check names it, with the paths
            _refuse_operation(what, ref, where)


def _refuse_operation(what: str, ref: str, where: Path | None) -> None:
    place = f" in {where}" if where is not None else ""
    raise OperationInProgress(
        f"a {what} is in progress{place} on {_short(ref)}; gitpatch does not change a branch "
        f"or working tree while git {what} is under way",
        hint=f"Let the person {_HINTS.get(what, 'finish it')}, then retry. Nothing was changed.",
        details={"operation": what, "branch": ref, "worktree": str(where or "")},
    )


def preflight(
    store: Store, worktree: WorkingTree, branch: str, new: pygit2.Oid, paths: Sequence[str]
) -> None:
    """``check_landing`` for ``worktree``, where ``branch`` lands ``paths`` as they are in
    ``new``; run under the land lock, when no other land is half done."""
    # the index must agree with the branch (if it moves later, the move fails)
    index, now = _settled(store, worktree, branch, paths)
    at = functools.partial(_entries_at, store)

    check_assumed(worktree, paths)
    try:
        check_landing(
            index,
            worktree.root,
            worktree.gitdir,
            branch,
            at(now),
            at(new),
            paths,
            indexfile.skipped(worktree.gitdir, worktree.root, paths),
        )
    except StagedChanges as refused:
        raise _older_index(store, now, index, refused) from None


def _entries_at(store: Store, commit: pygit2.Oid | None) -> Entries:
    def entry(path: str) -> tuple[str, int] | None:
        found = None if commit is None else store.entry(commit, path)
        if found is None or found.mode == MODE_TREE:
            return None  # a submodule's gitlink is an index entry like a file's
        return str(found.oid), int(found.mode)

    return entry


def check_staged(
    store: Store, worktree: WorkingTree, head: pygit2.Oid | None, paths: Sequence[str]
) -> None:
    """``staged_changes`` (or an unmerged refusal) when a path's index entry is not its entry
    at ``head``: what the land would refuse, refused before any merge is tried. When the
    checked-out branch is no longer at ``head`` (a person's commit), ``concurrent_update``:
    the caller rebuilds on the new head."""
    branch = store.head_branch() or "HEAD"
    index, now = _settled(store, worktree, branch, paths)
    try:
        _check_index(index, _entries_at(store, head), paths)
    except StagedChanges as refused:
        if now == head:
            raise _older_index(store, head, index, refused) from None
        raise ConcurrentUpdate(
            f"{_short(branch)} moved while the change was built (a commit was made)",
            hint="Retry the call.",
            details={"branch": branch},
            reason="changed",
        ) from None


def _older_index(
    store: Store, head: pygit2.Oid | None, index: IndexView, refused: StagedChanges
) -> StagedChanges:
    """``refused``, saying what most likely happened when every staged path holds exactly
    its entry before ``head`` (at its first parent): a ``git commit`` without ``-a`` reads
    the index before it locks it, and one that lost its race for HEAD to that commit (a land,
    or another git user's) has written the index it read back, the committed change undone
    in it. The person's next commit would record that revert."""
    paths = list(refused.details.get("paths") or ())
    if head is None or not paths or refused.details.get("reason"):
        return refused
    parent = next(itertools.islice(store.first_parents(head), 1, 2), None)
    if parent is None:
        return refused
    before = _entries_at(store, parent.id)
    if any(index(p).get(0) != before(p) for p in paths):
        return refused
    listed = " ".join(paths)
    return StagedChanges(
        f"{', '.join(paths)} is staged as it was before the branch's last commit "
        f"({str(head)[:12]}): the index would undo that commit's change to it, and landing this "
        "change would replace what is staged",
        hint="If nobody staged that on purpose, a `git commit` that lost its race for the "
        "branch wrote back the index it had read (git reads the index before it locks it), "
        f"and the next commit would record the revert: `git restore --staged {listed}` puts "
        "the committed version back in the index. Then retry. Nothing was changed.",
        details={"paths": paths, "reason": "older_index"},
    )


def _settled(
    store: Store, worktree: WorkingTree, branch: str, paths: Sequence[str]
) -> tuple[IndexView, pygit2.Oid | None]:
    """The index entries of ``paths`` and the tip of ``branch``, read while no git command
    holds ``index.lock``: git's commit moves the branch first and renames its index last,
    both under that lock, so a read in between would take the new tip with the old index
    for staged work. ``concurrent_update`` when one keeps starting."""
    lock = worktree.gitdir / "index.lock"
    record = owners.current()
    ours = record is not None and record.owns(str(lock))
    for _attempt in range(_SETTLE_ATTEMPTS):
        if not ours:
            wait_for_index_lock(worktree.gitdir)
        tip = store.ref_target(branch)
        index = index_view(worktree, paths)
        if store.ref_target(branch) == tip and (ours or not lock.exists()):
            return index, tip
    raise ConcurrentUpdate(
        f"git commands kept changing the index of {worktree.root} while it was read",
        hint="Retry in a moment. Nothing was changed.",
        details={"lock": str(lock)},
        reason="locked",
    )


def check_landing(
    index: IndexView,
    root: Path,
    gitdir: Path,
    branch: str,
    staged_base: Entries,
    new: Entries,
    paths: Sequence[str],
    skipped: Collection[str],
) -> None:
    """Everything that can stop ``paths`` from landing in this working tree, before the move.

    ``staged_base``: the entries of the commit the branch points at now, which the index must
    agree with for every path; ``new``: those the paths land as; ``skipped``: skip-worktree
    paths (only their index entries change); ``index``: the index entries of ``paths``.
    """
    refuse_operation_here(gitdir, branch, root)
    wait_for_index_lock(gitdir)
    _check_index(index, staged_base, paths)
    on_disk = [p for p in paths if p not in skipped]
    _check_kinds(root, staged_base, on_disk)
    preflight_paths(root, new, on_disk)


def _check_kinds(root: Path, base: Entries, paths: Sequence[str]) -> None:
    """Refuse (``dirty_worktree``, reason ``type_changed``) a path the person turned from the
    branch's file into a symlink: their change is of the file's kind, not its lines, so
    neither a merge nor a re-read would make sense of it. (The other way round is left to
    the content checks: with ``core.symlinks`` off, git itself writes links as files.)"""
    for path in paths:
        entry = base(path)
        full = root / path
        if entry is None or entry[1] == _MODE_LINK or not full.is_symlink():
            continue
        raise DirtyWorktree(
            f"{path} is a symlink (to {os.readlink(full)}) on disk where the branch has a "
            "file: the person changed what kind of file it is (not committed), and landing "
            "this change would replace it",
            hint=f"Ask the person to commit that change or restore {path} (`git checkout -- "
            f"{path}`), then retry. Nothing was changed.",
            details={"paths": [path], "reason": "type_changed"},
        )


def check_unmerged(worktree: WorkingTree, paths: Sequence[str]) -> None:
    """Refuse touching a path with unmerged index entries (a conflict waiting for a person)."""
    _check_unmerged(index_view(worktree, paths), paths, operation(worktree.gitdir))


def check_assumed(worktree: WorkingTree, paths: Sequence[str]) -> None:
    """Refuse (``dirty_worktree``, reason ``assume_unchanged``) touching a path marked
    assume-unchanged whose file on disk differs from its index entry (see the module doc).
    A marked file without local changes is landed as git checks it out (the mark goes)."""
    if not paths or plain_entries(str(worktree.gitdir / "index"), paths) is not None:
        return  # every entry is plain: no flag at all, so no assume-unchanged mark
    args = ["--literal-pathspecs", "ls-files", "-v", "-s", "-z", "--", *paths]
    out = gitbin.run(str(worktree.gitdir), str(worktree.root), args)
    hidden = []
    for row in out.decode("utf-8", "surrogateescape").split("\0"):
        if "\t" not in row or not row[:1].islower():
            continue  # an upper-case tag: not assume-unchanged
        meta, path = row.split("\t", 1)
        if worktree.disk_blob(path) not in (meta.split()[2], None):
            hidden.append(path)
    if hidden:
        names = ", ".join(hidden)
        raise DirtyWorktree(
            f"{names} is marked assume-unchanged and has local changes git does not show "
            "(`git update-index --assume-unchanged`); gitpatch neither commits nor "
            "overwrites them",
            hint=f"Commit them (`git update-index --no-assume-unchanged {hidden[0]}` first) or "
            "discard them, then retry. Nothing was changed.",
            details={"paths": hidden, "reason": "assume_unchanged"},
        )


def wait_for_index_lock(gitdir: Path) -> None:
    """A git command holding ``index.lock`` usually finishes at once: wait for it a little,
    then refuse (``concurrent_update``, locked) rather than fail after the branch moved."""
    lock = gitdir / "index.lock"
    record = owners.current()
    if record is not None and record.owns(str(lock)):
        return  # the land's own (``index.HeldIndex``): held from before the branch moves
    deadline = time.monotonic() + INDEX_LOCK_WAIT_SECONDS
    delay = 0.005
    while lock.exists():
        if time.monotonic() > deadline:
            raise ConcurrentUpdate(
                f"another git process holds {lock} (a commit, add or checkout is running)",
                hint="Retry in a moment; if it persists and no git command is running, remove "
                "the stale index.lock. Nothing was changed.",
                details={"lock": str(lock)},
                reason="locked",
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def index_view(worktree: WorkingTree, paths: Sequence[str]) -> IndexView:
    """The index entries of ``paths`` by stage: looked up in the index file's bytes when each
    is a plain stage-0 entry (no whole-index read), else libgit2's index, or ``git ls-files``
    for the formats only git reads (split and sparse indexes)."""
    plain = plain_entries(str(worktree.gitdir / "index"), paths)
    if plain is not None:
        return lambda path: {0: plain[path]}
    try:
        with git_errors("read the index"):
            index = worktree.index
    except GitpatchError:  # a format only git reads
        worktree.check_index_writable()  # without git: refused, naming the setting
        return _git_view(worktree, paths)

    def stages(path: str) -> dict[int, tuple[str, int]]:
        out: dict[int, tuple[str, int]] = {}
        conflicts = index.conflicts
        if conflicts is not None:
            try:
                sides = conflicts[path]
            except KeyError:
                sides = (None, None, None)
            for stage, side in enumerate(sides, start=1):
                if side is not None:
                    out[stage] = (str(side.id), int(side.mode))
        try:
            entry = index[path]
            out[0] = (str(entry.id), int(entry.mode))
        except KeyError:
            pass
        return out

    return stages


def _git_view(worktree: WorkingTree, paths: Sequence[str]) -> IndexView:
    found: dict[str, dict[int, tuple[str, int]]] = {p: {} for p in paths}
    if paths:
        args = ["--literal-pathspecs", "ls-files", "-s", "-z", "--", *paths]
        out = gitbin.run(str(worktree.gitdir), str(worktree.root), args)
        for row in out.decode("utf-8", "surrogateescape").split("\0"):
            if "\t" in row:
                meta, path = row.split("\t", 1)
                mode, oid, stage = meta.split()
                found.setdefault(path, {})[int(stage)] = (oid, int(mode, 8))
    return lambda path: found.get(path, {})


def _check_unmerged(index: IndexView, paths: Sequence[str], doing: str | None) -> None:
    for path in paths:
        if not any(stage for stage in index(path)):
            continue
        during = f"the {doing} in progress stopped on" if doing else "a conflict waits in"
        raise OperationInProgress(
            f"{path} has unmerged entries in the index ({during} it); gitpatch never touches them",
            hint=f"Let the person {_HINTS.get(doing or '', 'resolve the conflict with git')}, "
            "then retry. Nothing was changed.",
            details={"operation": doing or "conflict", "paths": [path]},
        )


def _check_index(index: IndexView, base: Entries, paths: Sequence[str]) -> None:
    _check_unmerged(index, paths, None)
    staged = [p for p in paths if index(p).get(0) != base(p)]
    # `git add -N`: an entry of the empty blob for a file the branch does not have yet
    planned = [p for p in staged if base(p) is None and (index(p).get(0) or ("",))[0] == _EMPTY]
    if planned and planned == staged:
        raise StagedChanges(
            f"{', '.join(planned)} is marked intent-to-add (`git add -N`): the person plans to "
            "add it, and gitpatch does not take that over",
            hint=f"Ask the person to `git add {planned[0]}` (stage it) or `git rm --cached "
            f"{planned[0]}` (drop the mark), then retry. Nothing was changed.",
            details={"paths": planned, "reason": "intent_to_add"},
        )
    if staged:
        raise StagedChanges(
            f"{', '.join(staged)} has staged changes (the index differs from the branch); "
            "landing this change would replace what is staged",
            hint="Commit the staged changes, or unstage them (`git restore --staged <path>`), "
            "then retry. Nothing was changed.",
            details={"paths": staged},
        )


def preflight_paths(root: Path, new: Entries, paths: Sequence[str]) -> None:
    """Refuse, before anything moves, a landing whose writes the disk would refuse.

    A path written (present in ``new``) needs every parent to be a directory or to be missing
    (or to be a file this landing deletes first), no non-empty directory where the file goes
    and names the filesystem accepts; every path needs a writable parent.
    """
    deleting = {p for p in paths if new(p) is None}
    for path in paths:
        parts = path.split("/")
        too_long = next((p for p in parts if len(os.fsencode(p)) > _NAME_MAX), None)
        if too_long is not None:
            _refuse_os(path, errno.ENAMETOOLONG, f"the name {too_long[:40]}... is too long")
        if path in deleting:
            _check_writable(root, path)
            continue
        for depth in range(1, len(parts)):
            prefix = "/".join(parts[:depth])
            try:
                st = (root / prefix).lstat()
            except (FileNotFoundError, NotADirectoryError):
                break
            if stat.S_ISDIR(st.st_mode) or prefix in deleting:
                continue
            raise ResourceExists(
                f"cannot write {path}: {prefix} is "
                + ("a symbolic link" if stat.S_ISLNK(st.st_mode) else "an untracked file")
                + " on disk where a directory must go",
                hint=f"Move or remove {prefix} (or commit it), then retry. Nothing was changed.",
                details={"path": path, "blocking": prefix},
            )
        full = root / path
        if full.is_dir() and not full.is_symlink() and _holds_other_files(full, path, deleting):
            raise ResourceExists(
                f"cannot write {path}: a directory with untracked files is there on disk",
                hint=f"Move or remove the directory {path}, then retry. Nothing was changed.",
                details={"path": path, "blocking": path},
            )
        _check_writable(root, path)


def _holds_other_files(full: Path, path: str, deleting: Collection[str]) -> bool:
    for folder, _dirs, files in os.walk(full):
        rel = os.path.relpath(folder, full)
        for name in files:
            inner = path if rel == "." else f"{path}/{rel}"
            if f"{inner}/{name}" not in deleting:
                return True
    return False


def _check_writable(root: Path, path: str) -> None:
    """The nearest existing parent directory of ``path`` must let us create and rename."""
    parent = (root / path).parent
    while not parent.is_dir() and parent != root:  # missing, or a file this landing deletes
        parent = parent.parent
    if not os.access(parent, os.W_OK | os.X_OK):
        _refuse_os(path, errno.EACCES, f"the directory {parent} is not writable")


def _refuse_os(path: str, code: int, why: str) -> None:
    raise FilesystemError(
        f"cannot write {path}: {why} ({os.strerror(code)})",
        hint="Fix the permissions or choose another name, then retry. Nothing was changed.",
        details={"path": path, "errno": errno.errorcode.get(code, str(code))},
    )
