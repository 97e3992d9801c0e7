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

__all__ = ["is_open", "open_workspace", "repository_config", "working_root"]


def working_root(directory: str | Path) -> Path | None:
    """The working tree's root of the repository at (or above) ``directory``; None if bare."""
    workdir = Store.open(directory).workdir
    return Path(workdir) if workdir else None


def repository_config(directory: str | Path) -> Config:
    """The ``.gitpatch.toml`` of the repository at ``directory`` (defaults when absent)."""
    return load(working_root(directory))


def open_workspace(
    directory: str | Path, mode: Mode | None = None, config: Config | None = None, **kw: Any
) -> Workspace:
    """A Workspace on the repository at ``directory`` in ``mode`` (default: the config's);
    the protected branches are the Workspace's own (``config.protected_names``)."""
    from gitpatch.porcelain.workspace import Workspace

    cfg = config if config is not None else repository_config(directory)
    return Workspace.open(directory, mode=mode or cfg.mode, **kw)


def is_open(ws: Workspace, info: ProposalInfo) -> bool:
    """True for what awaits a person (``gitpatch.review.lifecycle.is_open``)."""
    from gitpatch.review import lifecycle

    return lifecycle.is_open(ws.context, info)
