"""A session's own linked worktree: where auto mode on a protected branch lands its commits.

The person's checkout is never switched: a session that lands commits (auto mode) gets a
linked worktree of its own (``git worktree add``), checked out on ``gitpatch/session/<name>``,
so the agent can run its tests there while the person keeps working on their branch, with
their HEAD, index and uncommitted edits untouched. Its place is
``<git common dir>/gitpatch/worktrees/<name>`` (inside ``.git``, so git never sees it as
untracked), or below the folder git config ``gitpatch.worktrees`` names (relative to the
repository root; such a folder inside the working tree is added to ``.git/info/exclude``).

It does not move any ref or write any tracked file: ``git worktree add`` checks the session
branch out in the new folder, and the Workspace then works there as on any checkout.

Making one is not atomic (git records the worktree, then the files are written), so a
marker ``<git common dir>/gitpatch/filling/<name>`` is there while it is made: a worktree
with the marker is not one (``filling``), and the next ``add`` removes what a killed one
left and starts again. A half-filled worktree taken for a whole one would have a checkpoint
record every file it lacks as deleted.

Only a worktree gitpatch made is a session's (``made_for``): ``add`` leaves a file naming the
session in the worktree's own git directory (``.git/worktrees/<id>/gitpatch-session``), which
git keeps while the worktree lives and drops with it, and which a checkout inside it never
touches. A person's own linked worktree in the same folder (``git worktree add
../wts/feature``) has none, so it is never listed, followed or removed as a session's. A
worktree an older gitpatch made (no such file) still counts while its HEAD is what gitpatch
left there (detached, or on the session branch) and the session's target is recorded.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path

from gitpatch.checkout import gitbin, preflight, saves
from gitpatch.checkout.worktree import WorkingTree
from gitpatch.errors import RepositoryError
from gitpatch.safety.owners import land_lock
from gitpatch.safety.recovery import crashpoint
from gitpatch.store import Store
from gitpatch.workspace.sessions import SESSION_PREFIX, session_target

__all__ = [
    "WORKTREES_SETTING",
    "add",
    "checked_out",
    "common_dir",
    "drop_half_made",
    "ensure",
    "filling",
    "forget",
    "linked_gitdir",
    "made_for",
    "place",
    "recovered",
]

#: git config key: the folder session worktrees go in (default: inside the git directory).
WORKTREES_SETTING = "gitpatch.worktrees"

#: How ``session end`` names a worktree folder it set aside (``ENDING<name>-<ns>``) before it
#: removes it; one a killed end left is swept later (``review._sessions``).
ENDING = ".ending-"

#: The file in a session worktree's own git directory that names its session (``made_for``).
_OURS = "gitpatch-session"
#: The file in it that says its folder's parent was a mount point when it was made: while
#: that parent is not one, the drive is away and its worktrees are not gone (``forget``).
_MOUNTED = "gitpatch-mounted"


def common_dir(store: Store) -> Path:
    """The repository's common git directory (a linked worktree's points at the main one)."""
    return preflight.common_dir(store.git_dir).resolve()


def _main_root(store: Store) -> Path:
    """The main working tree's root: the folder holding the common git directory."""
    return common_dir(store).parent


def place(store: Store, name: str) -> Path:
    """Where session ``name``'s worktree goes (it need not exist yet)."""
    setting = store.config_get(WORKTREES_SETTING)
    if not setting:
        return common_dir(store) / "gitpatch" / "worktrees" / name
    folder = Path(os.path.expanduser(setting))
    if not folder.is_absolute():
        folder = _main_root(store) / folder
    return folder.resolve() / name


def filling(store: Store, name: str) -> bool:
    """True while session ``name``'s worktree is being made (or a killed ``add`` left it
    half made): it is not a worktree to use yet."""
    return _marker(store, name).exists()


def _marker(store: Store, name: str) -> Path:
    return common_dir(store) / "gitpatch" / "filling" / name


def checked_out(store: Store, ref: str) -> Path | None:
    """The working tree that has ``ref`` checked out, None when none has (a session's own
    worktree still being made is none). git is asked only when a worktree's HEAD file names
    ``ref``: opening a session that has no worktree yet starts no process."""
    if not _named_by_a_head(store, ref):
        return None
    listing = _git(store, ["worktree", "list", "--porcelain"]).decode("utf-8", "replace")
    path: str | None = None
    for line in listing.splitlines():
        if line.startswith("worktree "):
            path = line.removeprefix("worktree ")
        elif line == f"branch {ref}" and path is not None and Path(path).is_dir():
            found = Path(path)
            if found.name and filling(store, found.name) and found == place(store, found.name):
                return None
            return found
    return None


def _named_by_a_head(store: Store, ref: str) -> bool:
    """Whether the HEAD file of the main worktree or of a linked one names ``ref`` (what
    ``git worktree list`` reads for each); True when one cannot be read."""
    common = common_dir(store)
    records = common / "worktrees"
    heads = [common / "HEAD", *(records.glob("*/HEAD") if records.is_dir() else ())]
    for head in heads:
        try:
            text = head.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            continue
        except OSError:
            return True
        if text == f"ref: {ref}":
            return True
    return False


def ensure(store: Store, name: str, ref: str) -> Path:
    """The worktree holding session branch ``ref`` (full ref, which must exist), created at
    ``place(name)`` when no working tree has it checked out."""
    found = checked_out(store, ref)
    if found is not None:
        return found
    state = common_dir(store) / "gitpatch"
    state.mkdir(parents=True, exist_ok=True)
    # processes opening the same session at once: one adds the worktree, the others find it
    with land_lock(state):
        found = checked_out(store, ref)
        if found is not None:
            return found
        return add(store, name, ref.removeprefix("refs/heads/"))


def add(store: Store, name: str, start: str, *, detach: bool = False) -> Path:
    """Add session ``name``'s worktree at ``place(name)`` checked out at ``start`` (a branch
    name, or with ``detach`` a commit id), the way it is cheapest here.

    ``git worktree add`` writes every file from one process. Here the worktree is added with
    ``--no-checkout`` and then filled by ``git reset --hard`` with git's parallel checkout
    (``checkout.workers``, two per core): 15-25 % faster on a 100,000-file repository (see
    docs/benchmarks.md). Hard links to the person's files were ruled out: an agent's command
    writing a file in place would write the person's file too. Like ``--no-checkout``, it
    runs no ``post-checkout`` hook.
    """
    where = place(store, name)
    marker = _marker(store, name)
    if marker.exists():
        _discard(store, where)  # what a killed add left: never handed out, nothing of anyone's
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_bytes(b"")
    _exclude(store, where)
    with contextlib.suppress(OSError):  # git worktree add would make it (or say why not)
        where.parent.mkdir(parents=True, exist_ok=True)
    forget(store, where, unless_locked=True)  # a folder removed by hand leaves its record
    detached = ["--detach"] if detach else []
    try:
        _git(store, ["worktree", "add", "--quiet", "--no-checkout", *detached, str(where), start])
    except RepositoryError:
        marker.unlink()  # git made nothing: nothing half made is left
        raise
    (linked_gitdir(where) / _OURS).write_text(name + "\n", encoding="utf-8")
    if _mount_point(where.parent):  # gitpatch.worktrees is a drive of its own
        (linked_gitdir(where) / _MOUNTED).write_text(str(where.parent) + "\n", encoding="utf-8")
    crashpoint("worktree.added")
    _fill(where)
    crashpoint("worktree.filled")
    marker.unlink()
    return where


def _fill(where: Path) -> None:
    """Write the files of the worktree at ``where`` (added with ``--no-checkout``)."""
    workers = str(2 * (os.cpu_count() or 1))
    gitdir = linked_gitdir(where)
    try:
        gitbin.run(
            str(gitdir),
            str(where),
            [
                "-c",
                f"checkout.workers={workers}",
                "-c",
                "checkout.thresholdForParallelism=100",
                "reset",
                "--quiet",
                "--hard",
            ],
        )
    except gitbin.GitFailed as exc:
        raise RepositoryError(
            f"could not fill the session's worktree: {exc.stderr}",
            hint="Check the disk has room and git can write there; then retry.",
            details={"path": str(where)},
        ) from exc


def drop_half_made(store: Store, name: str) -> None:
    """Remove session ``name``'s worktree when a killed ``add`` left it half made (it was
    never handed out: nothing in it is anyone's)."""
    marker = _marker(store, name)
    if marker.exists():
        _discard(store, place(store, name))
        marker.unlink()


def _discard(store: Store, where: Path) -> None:
    """Remove a worktree a killed ``add`` left half made, and git's record of it (which git
    keeps locked while ``worktree add`` runs)."""
    for record in _records_of(store, where):
        (record / "locked").unlink(missing_ok=True)
    shutil.rmtree(where, ignore_errors=True)
    forget(store, where)


def forget(store: Store, where: Path, *, unless_locked: bool = False) -> None:
    """Drop git's record of the linked worktree whose folder ``where`` is gone (what ``git
    worktree prune`` does, for that one worktree alone: never for a person's worktree that
    is away for now, a drive not mounted). A save an older gitpatch set aside in its git
    directory is moved to the common one first (``saves.rescue``). Only a session's record
    is dropped (``_session_record``), never a person's. Nothing is dropped while
    the folder holding ``where`` is missing too (``gitpatch.worktrees`` on a drive not
    mounted), or while the folder holding it was a mount point when gitpatch made it and is
    not one now (``gitpatch.worktrees`` itself the drive not mounted), while ``where`` is a
    symlink (to a drive away), or while a killed end's set-aside folder of it is there (its
    sweep decides). With ``unless_locked``
    (what no one asked for: an open, an add), a record ``git worktree lock`` locked is kept,
    as ``git worktree prune`` keeps it (the person's word that the worktree is away)."""
    if (where / ".git").exists() or not where.parent.is_dir() or where.is_symlink():
        return  # a link left in its place leads to a drive that is away: not removed
    if ending_folders(where):
        return  # a killed end's sweep decides (a change written there puts it back)
    for record in _records_of(store, where):
        if not _session_record(record, where.name):
            continue  # a person's own worktree where the session's would go: theirs to prune
        if (record / _MOUNTED).exists() and not _mount_point(where.parent):
            continue  # its drive is away: the worktree is not gone
        if unless_locked and (record / "locked").exists():
            continue  # a person's lock, or git's own while ``worktree add`` runs
        if (where / ".git").exists():
            return  # made again meanwhile (another process's ``ensure``): the record is its
        saves.rescue(record, where)
        shutil.rmtree(record, ignore_errors=True)


def ending_folders(where: Path) -> list[Path]:
    """The folders a ``session end`` set the worktree at ``where`` aside as
    (``ENDING`` + its name + ``-`` + a time), beside it: a killed end leaves one."""
    prefix = f"{ENDING}{where.name}-"
    try:
        names = [c for c in where.parent.iterdir() if c.name.startswith(prefix)]
    except OSError:
        return []
    return [c for c in names if c.name[len(prefix) :].isdigit()]


def _session_record(record: Path, name: str) -> bool:
    """Whether git's record ``record`` is of session ``name``'s worktree (``made_for``, read
    from the record alone: its folder is gone): its ``gitpatch-session`` file names the
    session, or, one an older gitpatch made (none there), its HEAD is detached or on the
    session's branch, or it has no HEAD yet (a ``git worktree add`` killed before it wrote
    one: a person's worktree always has one). A person's worktree on a branch of their own
    is not."""
    try:
        ours = record / _OURS
        if ours.exists():
            return ours.read_text(encoding="utf-8").strip() == name
        head = (record / "HEAD").read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return True
    except (OSError, UnicodeDecodeError):
        return False
    return not head.startswith("ref: ") or head == f"ref: {SESSION_PREFIX}{name}"


def _mount_point(folder: Path) -> bool:
    """Whether something is mounted on ``folder``: a drive (``os.path.ismount``), or a bind
    mount of a folder of the same filesystem, which only the kernel's list of this process's
    mounts tells (Linux's ``/proc/self/mountinfo``: its fifth field, spaces as ``\\040``)."""
    if os.path.ismount(folder):
        return True
    try:
        listed = Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return False
    target = str(folder.resolve())
    for line in listed.splitlines():
        fields = line.split(" ")
        if len(fields) > 4 and _OCTAL.sub(lambda m: chr(int(m[1], 8)), fields[4]) == target:
            return True
    return False


#: An octal escape in ``/proc/self/mountinfo`` (a space, tab, newline or backslash of a path).
_OCTAL = re.compile(r"\\([0-7]{3})")


def left_behind(store: Store, where: Path) -> bool:
    """Whether git keeps a record of session ``where.name``'s worktree at ``where`` while its
    folder is gone (removed by hand): what ``forget`` may drop. Cheap: no lock, no process;
    False at once where ``forget`` keeps every record (a link to a drive away, the folder
    holding it missing), so an open does not take the lock for it each time."""
    if where.exists() or where.is_symlink() or not where.parent.is_dir():
        return False
    return any(_session_record(record, where.name) for record in _records_of(store, where))


def _records_of(store: Store, where: Path) -> list[Path]:
    """git's records (``.git/worktrees/<id>``) of a linked worktree at ``where``."""
    records = common_dir(store) / "worktrees"
    found = []
    for named in sorted(records.glob("*/gitdir")) if records.is_dir() else ():
        with contextlib.suppress(OSError):
            if Path(named.read_text(encoding="utf-8").strip()).parent.resolve() == where.resolve():
                found.append(named.parent)
    return found


def made_for(store: Store, where: Path) -> bool:
    """Whether the folder ``where`` is a linked worktree of this repository that gitpatch made
    for the session named like the folder (see the module); a person's own is not."""
    name = where.name
    try:
        if not (where / ".git").is_file():
            return False
        gitdir = linked_gitdir(where)
        if gitdir.parent != common_dir(store) / "worktrees":
            return False  # another repository's, or not a linked worktree's
        ours = gitdir / _OURS
        if ours.exists():
            return ours.read_text(encoding="utf-8").strip() == name
        head = (gitdir / "HEAD").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return False
    left = not head.startswith("ref: ") or head == f"ref: {SESSION_PREFIX}{name}"
    return left and session_target(store, name) is not None


def linked_gitdir(where: Path) -> Path:
    """The git directory of the linked worktree at ``where`` (its ``.git`` file names it);
    the main checkout's own ``.git`` when ``where`` is the main checkout (a session's branch
    the person checked out there)."""
    dotgit = where / ".git"
    if dotgit.is_dir():
        return dotgit.resolve()
    text = dotgit.read_text(encoding="utf-8").strip()
    return (where / text.removeprefix("gitdir:").strip()).resolve()


def _exclude(store: Store, where: Path) -> None:
    """Keep a worktree folder placed inside the main working tree out of ``git status``."""
    root = _main_root(store)
    try:
        inside = where.resolve().relative_to(root)
    except ValueError:
        return
    if inside.parts and inside.parts[0] == common_dir(store).name:
        return  # inside .git: never seen as untracked
    pattern = "/" + inside.parent.as_posix() + "/"
    info = common_dir(store) / "info" / "exclude"
    lines = info.read_text(encoding="utf-8").splitlines() if info.exists() else []
    if pattern not in lines:
        info.parent.mkdir(parents=True, exist_ok=True)
        with info.open("a", encoding="utf-8") as fh:
            fh.write(("\n" if lines and lines[-1] else "") + pattern + "\n")


def _git(store: Store, args: list[str]) -> bytes:
    workdir = store.workdir
    assert workdir is not None  # only checkouts get session worktrees
    try:
        return gitbin.run(str(store.git_dir), workdir, args)
    except gitbin.GitFailed as exc:
        raise RepositoryError(
            f"could not prepare the session's worktree: {exc.stderr}",
            hint="Check that git can write to the git directory, or set git config "
            f"{WORKTREES_SETTING} to a writable folder.",
            details={"command": "git " + " ".join(args)},
        ) from exc


def recovered(folder: Path) -> tuple[Store, WorkingTree | None]:
    """The store and working tree of the linked worktree at ``folder``, with what a killed
    process left there settled in order: its refs first (the store), then its land (the
    working tree, which adopts a killed land's ``index.lock``). A call from another worktree
    leaves such a land's locks to this one (``safety.recovery``), so whatever works in a
    session's worktree from outside it settles it this way first."""
    store = Store.open(folder)
    store.recover()
    tree = WorkingTree.of(store)
    if tree is not None:
        tree.recover()
    return store, tree
