"""What the front ends (CLI, MCP server) share: opening a repository as its config says, and
telling what awaits a person's review. No click, no mcp, no terminal here."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitpatch.store import Store
from gitpatch.workspace.config import Config, load

if TYPE_CHECKING:
    from gitpatch.porcelain.workspace import Workspace
    from gitpatch.workspace.results import Mode, ProposalInfo

__all__ = [
    "git_dir",
    "is_open",
    "open_session",
    "open_workspace",
    "repository_config",
    "session_in",
    "working_root",
    "worktree_setting",
]


def working_root(directory: str | Path) -> Path | None:
    """The working tree's root of the repository at (or above) ``directory``; None if bare."""
    workdir = Store.open(directory).workdir
    return Path(workdir) if workdir else None


def git_dir(directory: str | Path) -> str:
    """The git directory of the repository at (or above) ``directory``."""
    return str(Store.open(directory).git_dir)


def worktree_setting(directory: str | Path) -> tuple[Path | None, bool]:
    """(the working tree libgit2 opens for the repository at ``directory``, None if bare;
    whether ``core.worktree`` names one)."""
    store = Store.open(directory)
    root = Path(store.workdir).resolve() if store.workdir else None
    return root, store.config_get("core.worktree") is not None


def repository_config(directory: str | Path) -> Config:
    """The ``.gitpatch.toml`` of the repository at ``directory`` (defaults when absent)."""
    return load(working_root(directory))


def open_workspace(
    directory: str | Path, mode: Mode | None = None, config: Config | None = None, **kw: Any
) -> Workspace:
    """A Workspace on the repository at ``directory`` in ``mode`` (default: the config's);
    the protected branches are the Workspace's own (``config.protected_names``)."""
    from gitpatch.porcelain.workspace import Workspace

    inside = session_in(directory)
    if inside is not None:  # a session's own worktree: that session, on the person's repository
        kw.pop("name", None)
        return open_session(directory, kw.pop("session", None) or inside, mode, **kw)
    chosen = mode or (config.mode if config is not None else None)
    return Workspace.open(directory, mode=chosen, **kw)


def session_in(directory: str | Path) -> str | None:
    """The session whose own worktree ``directory`` is in, None elsewhere (a person's own
    worktree in the same folder too: ``worktrees.made_for``)."""
    from gitpatch.review import worktrees

    store = Store.open(directory)
    if store.workdir is None:
        return None
    root = Path(store.workdir).resolve()
    folder = worktrees.place(store, "x").parent.resolve()
    if root.parent != folder or not worktrees.made_for(store, root):
        return None
    return root.name


def caller_inside(directory: str | Path, name: str) -> tuple[Path, Path] | None:
    """(this process's folder, the worktree) when the folder is inside the worktree of
    session ``name`` of the repository at ``directory``: ending the session would remove the
    folder the caller (an agent's shell) is in. None when it is not, or is gone already, and
    when that folder is a person's own worktree where the session's would go (``made_for``:
    the end removes nothing of it)."""
    from gitpatch.review import worktrees

    store = Store.open(directory)
    where = worktrees.place(store, name).resolve()
    if not worktrees.made_for(store, where):
        return None
    try:
        here = Path.cwd().resolve()
    except OSError:
        return None
    return (here, where) if here == where or where in here.parents else None


def open_session(
    directory: str | Path, session: str | None = None, mode: Mode | None = None, **kw: Any
) -> Workspace:
    """A Workspace on session ``session`` (default: the one whose worktree ``directory`` is
    in) of the repository at ``directory``: auto mode when it has a session branch, else
    ``mode`` (default review), for the target it was started for."""
    from gitpatch.errors import InvalidArguments
    from gitpatch.porcelain.workspace import Workspace
    from gitpatch.review import worktrees
    from gitpatch.workspace.sessions import SESSION_PREFIX, check_session_name, session_target

    name = session or session_in(directory)
    if name is None:
        raise InvalidArguments(
            "no session named, and this directory is not a session's worktree",
            hint="Pass --session NAME (see gitpatch sessions), or run it inside the "
            "session's worktree (gitpatch session start NAME prints it).",
        )
    check_session_name(name)
    store = Store.open(directory)
    main = worktrees.common_dir(store).parent
    if session_in(directory) is None and store.workdir is not None:
        main = Path(store.workdir)  # the person's checkout (a linked one too)
    auto = store.ref_target(SESSION_PREFIX + name) is not None
    chosen: Mode = "auto" if auto else (mode or "review")
    target = session_target(store, name)
    return Workspace.open(main, chosen, target, session=name, **kw)


def is_open(ws: Workspace, info: ProposalInfo) -> bool:
    """True for what awaits a person (``gitpatch.review.queries.is_open``)."""
    from gitpatch.review.queries import is_open

    return is_open(ws.plumbing.context, info)
