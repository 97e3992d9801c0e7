"""Per-space settings: size limits and review mode, from ``DIR/spaces.toml``.

::

    [defaults]
    max_file_bytes = 1048576        # payload_too_large above this (one resource)
    max_space_bytes = 104857600     # storage_limit_reached above this (all resources of a space)
    mode = "auto"                   # or "review": changes wait on a branch for a person

    [space."teams/web"]
    mode = "review"
    max_space_bytes = 10485760

The file is optional (the defaults below apply) and re-read when it changes. Sizes count the
bytes of the current resources on the space's ``main`` (not history, which git compresses and
shares between versions).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal

from gitpatch.doors.hosted.watched import WatchedFile

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_SPACE_BYTES",
    "SpaceSettings",
    "SpacesConfig",
]

#: Default per-resource limit: 1 MiB.
DEFAULT_MAX_FILE_BYTES = 1024 * 1024
#: Default per-space limit: 100 MiB of current content.
DEFAULT_MAX_SPACE_BYTES = 100 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class SpaceSettings:
    """The limits and mode of one space."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_space_bytes: int = DEFAULT_MAX_SPACE_BYTES
    mode: Literal["auto", "review"] = "auto"


def _settings(table: Any, base: SpaceSettings, where: str) -> SpaceSettings:
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table")
    unknown = set(table) - {"max_file_bytes", "max_space_bytes", "mode"}
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    for key in ("max_file_bytes", "max_space_bytes"):
        if key in table and (not isinstance(table[key], int) or table[key] < 1):
            raise ValueError(f"{where}: {key} must be a positive integer")
    if table.get("mode", base.mode) not in ("auto", "review"):
        raise ValueError(f'{where}: mode must be "auto" or "review"')
    return dataclasses.replace(base, **table)


class SpacesConfig:
    """The settings of every space, from ``spaces.toml`` in the data directory."""

    def __init__(self, path: Path, overrides: SpaceSettings | None = None) -> None:
        self.path = path
        self.base = overrides or SpaceSettings()
        self._file = WatchedFile(path, self._parse)

    def _parse(self, data: dict[str, Any] | None) -> tuple[SpaceSettings, dict[str, SpaceSettings]]:
        """(the defaults, each named space's settings) of a parsed file (None: no file)."""
        if data is None:
            return self.base, {}
        defaults = _settings(data.get("defaults", {}), self.base, "[defaults]")
        spaces = {
            name: _settings(table, defaults, f'[space."{name}"]')
            for name, table in dict(data.get("space", {})).items()
        }
        return defaults, spaces

    def settings(self, space: str) -> SpaceSettings:
        """The settings of ``space`` (``users/ada``, ``teams/web``); a malformed file keeps
        the last good settings."""
        defaults, spaces = self._file.get()
        return spaces.get(space, defaults)

    def largest_file_limit(self) -> int:
        """The largest per-file limit of any space (it bounds an HTTP request's body)."""
        defaults, spaces = self._file.peek()
        return max([defaults.max_file_bytes, *(s.max_file_bytes for s in spaces.values())])
