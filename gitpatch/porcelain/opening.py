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
    "open_workspace",
    "repository_config",
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

    chosen = mode or (config.mode if config is not None else None)
    return Workspace.open(directory, mode=chosen, **kw)


def is_open(ws: Workspace, info: ProposalInfo) -> bool:
    """True for what awaits a person (``gitpatch.review.queries.is_open``)."""
    from gitpatch.review.queries import is_open

    return is_open(ws.context, info)
