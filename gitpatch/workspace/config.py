"""The repository's settings: git config and ``.gitpatch.toml`` at the working tree's root.

``settings`` is the ONE resolver, used by ``Workspace.open`` (so by Python, the CLI and the MCP
server alike) and by the tool storages: git config wins over the file, which wins over the
defaults written by ``gitpatch init`` (``protected``: ``gitpatch.protected`` over the file's
list; ``dirty``: ``gitpatch.uncommitted``; ``mode`` and the ``[policy]`` rules come from the
file, the tool rules of git config, ``gitpatch.tool*``, apply together with the latter, the
strictest winning). Everything is optional: a missing file means the defaults. A bare remote
has no file, and its ``pre-receive`` hook must agree with the people pushing to it, hence
git config first (``protected_names``).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitpatch.errors import InvalidArguments
from gitpatch.store import Store

if TYPE_CHECKING:  # the results' pydantic models cost the hooks' gate 80 ms to import
    from gitpatch.workspace.results import Mode

__all__ = [
    "DEFAULT_PROTECTED",
    "FILENAME",
    "TEMPLATE",
    "Config",
    "Settings",
    "load",
    "protected_names",
    "settings",
]

FILENAME = ".gitpatch.toml"
#: The protected branches when neither git config nor the file names any.
DEFAULT_PROTECTED = ("main", "master")

TEMPLATE = """\
# gitpatch configuration (written by `gitpatch init`; every value shown is the default).
# The CLI, `gitpatch serve` and the git hooks read this file from the repository root.

[review]
# Branches agent commits never reach without a person's approval. Agents working on one
# land on a session branch gitpatch/session/<name>; `gitpatch approve <name>` merges it.
# `git config --add gitpatch.protected NAME` wins over this list (a bare remote has no file).
protected = ["main", "master"]

# "auto": each edit lands at once (on a session branch when the branch is protected).
# "review": each edit waits on gitpatch/<id> until `gitpatch approve <id>`.
mode = "auto"

[policy]
# Globs matched against the path as the tools show it (`/workspace/private.txt`, `**/*.lock`).
# deny refuses, ask turns the edit into a review proposal, allow (when set) is the only
# paths agents may edit.
require_approval_for_side_effects = false
allow = []
deny = []
ask = []
"""


@dataclass(frozen=True)
class Config:
    """The settings of one repository (defaults when there is no file)."""

    mode: Mode = "auto"
    protected: tuple[str, ...] | None = None
    require_approval: bool = False
    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    path: Path | None = field(default=None, compare=False)

    def protected_for(self, store: Store) -> list[str]:
        """Protected branch names: git config, else this file, else main and master."""
        return _protected(store, self.protected)


@dataclass(frozen=True)
class Settings:
    """One repository's settings as every door resolves them (module docstring): ``file`` is
    ``.gitpatch.toml`` as read (its ``[policy]`` rules included)."""

    mode: Mode
    protected: tuple[str, ...]
    dirty: str
    file: Config


def settings(store: Store) -> Settings:
    """The settings of the repository ``store`` opens (its working tree's ``.gitpatch.toml``
    and git config; a bare repository has no file)."""
    file = load(store.workdir)
    return Settings(
        mode=file.mode,
        protected=tuple(file.protected_for(store)),
        dirty=store.config_get("gitpatch.uncommitted") or "carry",
        file=file,
    )


def protected_names(store: Store) -> list[str]:
    """The repository's protected branch names: git config ``gitpatch.protected``
    (multi-valued or comma-separated), else ``.gitpatch.toml`` at the working tree's root,
    else main and master. A bare repository has no file."""
    named = _git_config_names(store)
    return named or _protected(store, load(store.workdir).protected)


def _git_config_names(store: Store) -> list[str]:
    values = store.config_values("gitpatch.protected")
    return [name for value in values for part in value.split(",") if (name := part.strip())]


def _protected(store: Store, from_file: tuple[str, ...] | None) -> list[str]:
    """Git config's names, else ``from_file`` (the file's list), else the defaults; the file
    is read only when git config names none (a bare remote's hooks never need it)."""
    named = _git_config_names(store)
    return named or list(from_file if from_file is not None else DEFAULT_PROTECTED)


def _strings(table: dict[str, Any], key: str, where: Path) -> tuple[str, ...] | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidArguments(
            f"{where}: {key} must be a list of strings",
            hint=f'Write it as {key} = ["main"].',
            details={"file": str(where), "key": key},
        )
    return tuple(value)


def load(root: str | Path | None) -> Config:
    """The config at ``root/.gitpatch.toml``; defaults when ``root`` is None or has no file."""
    if root is None:
        return Config()
    path = Path(root) / FILENAME
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Config()
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidArguments(
            f"cannot read {path}: {exc}",
            hint="Fix the file (see `gitpatch init --force` for a fresh one).",
            details={"file": str(path)},
        ) from exc
    review = data.get("review") or {}
    policy = data.get("policy") or {}
    mode = review.get("mode", "auto")
    if mode not in ("auto", "review"):
        raise InvalidArguments(
            f"{path}: mode must be 'auto' or 'review', not {mode!r}",
            hint='Write mode = "auto" or mode = "review".',
            details={"file": str(path), "key": "mode"},
        )
    return Config(
        mode=mode,
        protected=_strings(review, "protected", path),
        require_approval=bool(policy.get("require_approval_for_side_effects", False)),
        allow=_strings(policy, "allow", path) or None,
        deny=_strings(policy, "deny", path) or (),
        ask=_strings(policy, "ask", path) or (),
        path=path,
    )
