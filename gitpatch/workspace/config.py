"""The repository's gitpatch config file, ``.gitpatch.toml`` at the working tree's root.

Read by the front ends (CLI, MCP server, hooks); the Workspace itself takes plain arguments.
Everything is optional: a missing file means the defaults written by ``gitpatch init``.
``git config gitpatch.protected`` wins over the file's ``protected`` (a bare remote has no
file, and its ``pre-receive`` hook must agree with the people pushing to it).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitpatch.errors import InvalidArguments
from gitpatch.store import Store
from gitpatch.workspace.sessions import DEFAULT_PROTECTED

if TYPE_CHECKING:  # the results' pydantic models cost the hooks' gate 80 ms to import
    from gitpatch.workspace.results import Mode

__all__ = ["FILENAME", "TEMPLATE", "Config", "load"]

FILENAME = ".gitpatch.toml"

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
        names = [
            part.strip()
            for value in store.config_values("gitpatch.protected")
            for part in value.split(",")
        ]
        if any(names):
            return [n for n in names if n]
        return list(self.protected if self.protected is not None else DEFAULT_PROTECTED)


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
