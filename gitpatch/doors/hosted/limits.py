"""Per-space settings: size limits and review mode, from ``DIR/spaces.toml``.

::

    [defaults]
    max_file_bytes = 1048576        # payload_too_large above this (one resource)
    max_space_bytes = 104857600     # storage_limit_reached above this (all resources of a space)
    max_disk_bytes = 1073741824     # storage_limit_reached when the repository (history
                                    # included) takes more than this on disk
    pack_every_changes = 256        # pack and prune the space after this many changes
    mode = "auto"                   # or "review": changes wait on a branch for a person

    [space."teams/web"]
    mode = "review"
    max_space_bytes = 10485760

    [calls]                         # per credential (see ``CallLimits``)
    max_sessions = 16
    max_concurrent_calls = 8
    max_heavy_calls = 1             # of those, how many past 50 ms of CPU run at once
    max_tool_calls = 10000          # the tool-invocation allowance: calls per window
    tool_call_window_seconds = 3600
    session_idle_seconds = 600

    [calls."3f1c0a9e7b2d"]          # one credential, by its fingerprint
    max_tool_calls = 100

The file is optional (the defaults below apply) and re-read when it changes.
``max_space_bytes`` counts the bytes of the current resources on the space's ``main``;
``max_disk_bytes`` what the repository really takes on disk, history included (measured by
``gitpatch.doors.hosted.maintenance``, which also packs it every ``pack_every_changes``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal

from gitpatch.doors.hosted.watched import WatchedFile

__all__ = [
    "MAX_EDITS_PER_CALL",
    "CallLimits",
    "DEFAULT_MAX_DISK_BYTES",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_SPACE_BYTES",
    "SpaceSettings",
    "SpacesConfig",
]

#: Default per-resource limit: 1 MiB.
DEFAULT_MAX_FILE_BYTES = 1024 * 1024
#: Default per-space limit: 100 MiB of current content.
DEFAULT_MAX_SPACE_BYTES = 100 * 1024 * 1024
#: Default quota on what a space's repository takes on disk, history included: 1 GiB.
DEFAULT_MAX_DISK_BYTES = 1024 * 1024 * 1024
#: patch_resource takes at most this many edits in one call (the input schema's maxItems).
MAX_EDITS_PER_CALL = 1000


@dataclasses.dataclass(frozen=True)
class CallLimits:
    """What one credential may hold and do: open MCP sessions, tool calls in flight at once
    (more are refused), heavy calls running at once (more wait, within their wall budget:
    ``gitpatch.doors.hosted.calls``), tool calls per window (the spec's tool-invocation
    allowance), and how long an unused session stays open."""

    max_sessions: int = 16
    max_concurrent_calls: int = 8
    max_heavy_calls: int = 1
    max_tool_calls: int = 10000
    tool_call_window_seconds: int = 3600
    session_idle_seconds: int = 600


def _call_limits(table: Any, base: CallLimits, where: str) -> CallLimits:
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table")
    fields = {f.name for f in dataclasses.fields(CallLimits)}
    values = {k: v for k, v in table.items() if not isinstance(v, dict)}
    unknown = set(values) - fields
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    for key, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{where}: {key} must be a positive integer")
    return dataclasses.replace(base, **values)


@dataclasses.dataclass(frozen=True)
class SpaceSettings:
    """The limits and mode of one space."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_space_bytes: int = DEFAULT_MAX_SPACE_BYTES
    max_disk_bytes: int = DEFAULT_MAX_DISK_BYTES
    pack_every_changes: int = 256
    mode: Literal["auto", "review"] = "auto"


def _settings(table: Any, base: SpaceSettings, where: str) -> SpaceSettings:
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table")
    sizes = ("max_file_bytes", "max_space_bytes", "max_disk_bytes", "pack_every_changes")
    unknown = set(table) - {*sizes, "mode"}
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    for key in sizes:
        if key in table and (not isinstance(table[key], int) or table[key] < 1):
            raise ValueError(f"{where}: {key} must be a positive integer")
    if table.get("mode", base.mode) not in ("auto", "review"):
        raise ValueError(f'{where}: mode must be "auto" or "review"')
    return dataclasses.replace(base, **table)


@dataclasses.dataclass(frozen=True)
class _Parsed:
    """One reading of ``spaces.toml``."""

    defaults: SpaceSettings
    spaces: dict[str, SpaceSettings]
    calls: CallLimits
    callers: dict[str, CallLimits]


class SpacesConfig:
    """The settings of every space, from ``spaces.toml`` in the data directory."""

    def __init__(self, path: Path, overrides: SpaceSettings | None = None) -> None:
        self.path = path
        self.base = overrides or SpaceSettings()
        self._file = WatchedFile(path, self._parse)

    def _parse(self, data: dict[str, Any] | None) -> _Parsed:
        """The defaults, each named space's settings and the call limits of a parsed file
        (None: no file)."""
        if data is None:
            return _Parsed(self.base, {}, CallLimits(), {})
        defaults = _settings(data.get("defaults", {}), self.base, "[defaults]")
        spaces = {
            name: _settings(table, defaults, f'[space."{name}"]')
            for name, table in dict(data.get("space", {})).items()
        }
        calls = _call_limits(data.get("calls", {}), CallLimits(), "[calls]")
        callers = {
            name: _call_limits(table, calls, f'[calls."{name}"]')
            for name, table in dict(data.get("calls", {})).items()
            if isinstance(table, dict)
        }
        return _Parsed(defaults, spaces, calls, callers)

    def settings(self, space: str) -> SpaceSettings:
        """The settings of ``space`` (``users/ada``, ``teams/web``); a malformed file keeps
        the last good settings."""
        parsed = self._file.get()
        return parsed.spaces.get(space, parsed.defaults)

    def call_limits(self, fingerprint: str) -> CallLimits:
        """The call limits of the credential with ``fingerprint``; a malformed file keeps the
        last good limits."""
        parsed = self._file.get()
        return parsed.callers.get(fingerprint, parsed.calls)

    def largest_file_limit(self) -> int:
        """The largest per-file limit of any space (it bounds an HTTP request's body), from
        the file as it is now."""
        parsed = self._file.get()
        return max(
            [parsed.defaults.max_file_bytes, *(s.max_file_bytes for s in parsed.spaces.values())]
        )
