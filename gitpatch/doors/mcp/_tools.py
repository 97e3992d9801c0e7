"""The handlers ``gitpatch serve`` gives the MCP server, over one repository.

The edit tools and read_file go through ``_EditAdapter``, the one adapter between the MCP
arguments and the tool layer (``gitpatch.tools``: the spec texts and codes, permissions);
list_proposals and show_proposal use the Workspace's review API. The Workspace is opened on
the first call, so starting the server stays cheap.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from gitpatch.doors.mcp._reply import Handler, Reply, ToolSet
from gitpatch.tools import definitions as tooldefs
from gitpatch.workspace.opening import is_open, open_workspace, repository_config

if TYPE_CHECKING:
    from gitpatch.tools import ToolResult
    from gitpatch.tools.policy import ToolPermissionPolicy
    from gitpatch.workspace.api import Workspace

__all__ = ["workspace_toolset"]


class _Repository:
    """Opens the Workspace once (lazily) for one repository and mode."""

    def __init__(self, path: str, mode: str | None, session: str | None = None) -> None:
        self.path = path
        self.mode = mode
        self.session = session
        self.agent: str | None = None
        self._ws: Workspace | None = None
        self._lock = threading.Lock()

    def workspace(self) -> Workspace:
        with self._lock:
            if self._ws is None:
                mode: Any = self.mode
                extra: dict[str, Any] = {"session": self.session} if self.session else {}
                if self.agent:
                    extra["agent"] = self.agent
                self._ws = open_workspace(self.path, mode, **extra)
            return self._ws

    def introduce(self, client: str) -> None:
        """The MCP client's name: it authors the agent commits (when known before opening)."""
        with self._lock:
            if self.agent is None and client.strip():
                self.agent = client.strip()

    def policy(self) -> ToolPermissionPolicy | None:
        """The ``[policy]`` of ``.gitpatch.toml`` with the git config rules (strictest wins);
        None when neither sets a rule (the tools then allow every edit)."""
        from gitpatch.tools.policy import CombinedPolicy, workspace_tool_policy
        from gitpatch.tools.storage.workspace import WorkspaceStorage

        cfg = repository_config(self.path)
        found: list[ToolPermissionPolicy] = []
        if cfg.require_approval or cfg.allow is not None or cfg.deny or cfg.ask:
            found.append(workspace_tool_policy(cfg.require_approval, cfg.allow, cfg.deny, cfg.ask))
        from_git = WorkspaceStorage.of(self.workspace()).config_policy()
        if from_git is not None:
            found.append(from_git)
        if len(found) < 2:
            return found[0] if found else None
        return CombinedPolicy(tuple(found))


def _reply(result: ToolResult) -> Reply:
    """A tool layer result as the server's reply (the text the model reads is ``str()``)."""
    if result.ok:
        return Reply(True, str(result), data=dict(result.data))
    return Reply(False, str(result), code=result.code or "internal_error")


class _EditAdapter:
    """The edit tools and read_file: ``gitpatch.tools`` over the repository's Workspace, with
    the policy of ``.gitpatch.toml`` combined with the git config's tool rules."""

    def __init__(self, source: _Repository) -> None:
        self.source = source
        self._tools: dict[str, Any] = {}

    def tool(self, name: str) -> Any:
        """The tool-layer tool ``name``, made once over the Workspace."""
        if name not in self._tools:
            from gitpatch import tools

            ws = self.source.workspace()
            make = {
                "patch": tools.patch_tool,
                "apply_patch": tools.apply_patch_tool,
                "patch_resource": tools.patch_resource_tool,
                "read_file": tools.read_tool,
            }[name]
            self._tools[name] = make(ws, ws, policy=self.source.policy())
        return self._tools[name]

    def patch(self, args: tooldefs.PatchArgs) -> Reply:
        return _reply(self.tool("patch")(path=args.path, edits=args.edits))

    def apply_patch(self, args: tooldefs.ApplyPatchArgs) -> Reply:
        return _reply(self.tool("apply_patch")(patch=args.patch))

    def patch_resource(self, args: tooldefs.PatchResourceArgs) -> Reply:
        edits = [e.model_dump(exclude_none=True) for e in args.edits]
        return _reply(
            self.tool("patch_resource")(
                path=args.path,
                edits=edits,
                team=args.team,
                expected_version=args.expected_version,
            )
        )

    def read_file(self, args: tooldefs.ReadFileArgs) -> Reply:
        return _reply(self.tool("read_file")(path=args.path, offset=args.offset, limit=args.limit))


def _review_handlers(repo: _Repository) -> dict[str, Handler]:
    def list_proposals(_args: BaseModel) -> Reply:
        ws = repo.workspace()
        open_items = [i for i in ws.proposals() if is_open(ws, i)]
        data = {"proposals": [i.model_dump(mode="json") for i in open_items]}
        lines = [
            f"{i.id}  {i.status}  {i.target.removeprefix('refs/heads/')}  {', '.join(i.files)}"
            for i in open_items
        ]
        return Reply(True, "\n".join(lines) or "No open proposals.", data=data)

    def show_proposal(args: BaseModel) -> Reply:
        assert isinstance(args, tooldefs.ShowProposalArgs)
        detail = repo.workspace().show(args.id)
        info = detail.info
        files = ", ".join(info.files)
        head = f"proposal {info.id}: {info.status}, target {info.target}, files {files}"
        # the published output keeps ``recorded`` (one text); ``records`` is for the web page
        data = detail.model_dump(mode="json", exclude={"records"})
        return Reply(True, f"{head}\n\n{detail.diff}{detail.recorded}", data=data)

    return {"list_proposals": list_proposals, "show_proposal": show_proposal}


def workspace_toolset(path: str, mode: str | None = None, session: str | None = None) -> ToolSet:
    """Every tool over the repository at ``path`` (``mode``: auto, review, or the config's;
    ``session``: the name auto mode's commits go under, default ``agent``)."""
    repo = _Repository(path, mode, session)
    edits = _EditAdapter(repo)
    handlers: dict[str, Handler] = {
        "patch": edits.patch,  # type: ignore[dict-item]
        "apply_patch": edits.apply_patch,  # type: ignore[dict-item]
        "patch_resource": edits.patch_resource,  # type: ignore[dict-item]
        "read_file": edits.read_file,  # type: ignore[dict-item]
        **_review_handlers(repo),
    }
    instructions = (
        "Edit files in this git repository with patch, apply_patch or patch_resource; read them "
        "with read_file. Every edit is one commit; in review mode it waits for a person "
        "(see list_proposals / show_proposal). You cannot approve or reject proposals."
    )
    return ToolSet(handlers, instructions, introduce=repo.introduce)
