"""The ``patch_resource`` tool (spec: patch-resource.md): edit objects on one text resource."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from gitpatch import engine
from gitpatch.core.model import Proposal
from gitpatch.errors import PayloadTooLarge, TeamNotFound
from gitpatch.formats import patch_resource as edit_objects
from gitpatch.tools._base import Tool
from gitpatch.tools._result import ToolResult, change_lines, done, plural, where_data
from gitpatch.tools.policy import ToolOperation
from gitpatch.tools.storage.base import Namespace, Target
from gitpatch.tools.storage.mounts import namespace_of

__all__ = ["PatchResourceTool", "SpaceResolver"]

#: The service's hook: the namespace holding ``team``'s resources (a storage, a Workspace or a
#: ``MountedFilesystem``); raise ``TeamNotFound``, ``Forbidden``, ... when the caller may not
#: use it.
SpaceResolver = Callable[[str], Any]


class PatchResourceTool(Tool):
    """Anchored, line-range and insertion edits on one resource, with ``expected_version``."""

    name = "patch_resource"

    def __init__(
        self,
        *args: Any,
        spaces: SpaceResolver | None = None,
        max_file_bytes: int | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(*args, **kw)
        self.spaces = spaces
        self.max_file_bytes = max_file_bytes

    def run(
        self,
        before_write: Callable[[], None] | None = None,
        *,
        path: str,
        edits: list[dict[str, Any]],
        team: str | None = None,
        expected_version: str | int | None = None,
        revises: str | None = None,
    ) -> ToolResult:
        """Resolve (in ``team``'s space when given), check MODIFY_FILE, apply all or none;
        ``revises``: the id of the proposal this change revises."""
        namespace = self._space(team)
        target = self.resolve(path, namespace if team else None)
        checks = [(ToolOperation.MODIFY_FILE, target)]
        ask = self.authorize(*checks[0])
        proposal = edit_objects.parse(target.key, edits)
        proposal = dataclasses.replace(proposal, tool="patch_resource", revises=revises)
        if self.max_file_bytes is not None:
            self._check_size(target, proposal)
        applied = self.submit(proposal, checks, before_write, expected_version, checked=ask)
        data: dict[str, Any] = {
            "path": target.shown,
            "id": applied.ids.get(target.key),
            "version": applied.version,
        }
        count = len(proposal.operations[0].edits)  # type: ignore[union-attr]
        first = f"{done(applied)} {plural(count, 'edit')} to {target.shown}."
        lines = [first, f"id: {data['id']}", *change_lines(applied, lambda _k: target.shown)]
        if applied.review:
            data["proposal_id"] = applied.proposal_id
        data |= where_data(applied, lambda _k: target.shown)
        return ToolResult("\n".join(lines), ok=True, data=data)

    def _check_size(self, target: Target, proposal: Proposal) -> None:
        """``payload_too_large`` when the edited file would pass ``max_file_bytes``: the edits
        are tried on the current content first (pure), so nothing is written."""
        found = target.storage.read(target.key)
        result = engine.apply(proposal, {target.key: found.data})
        size = max((len(c.content or b"") for c in result.changes), default=0)
        limit = self.max_file_bytes or 0
        if size > limit:
            raise PayloadTooLarge(
                f"{target.shown} would be {size} bytes, over the per-file limit of {limit} bytes",
                hint="Patching does not raise the limit: make the file smaller or split it.",
                details={"path": target.shown, "size": size, "limit": limit},
            )

    def _space(self, team: str | None) -> Namespace:
        if team is None:
            return self.namespace
        if not isinstance(team, str) or not team.strip():
            raise TeamNotFound(
                "team must be a non-empty team name", hint="Omit team, or name a team."
            )
        if self.spaces is None:
            raise TeamNotFound(
                f"team {team!r}: this patch_resource has no team spaces (no service is "
                "configured), so only the workspace's own files can be edited",
                hint="Omit team to edit the workspace's files.",
                details={"team": team},
            )
        try:
            found = self.spaces(team)
        except (KeyError, LookupError):
            raise TeamNotFound(
                f"no team {team!r} is bound to this credential",
                hint="Check the team name, or omit team to edit your own space.",
                details={"team": team},
            ) from None
        return namespace_of(found, found)
