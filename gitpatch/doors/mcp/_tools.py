"""The handlers ``gitpatch serve`` gives the MCP server, over one repository.

The edit tools and read_file go through ``_EditAdapter``, the one adapter between the MCP
arguments and the tool layer (``gitpatch.tools``: the spec texts and codes, permissions);
list_proposals and show_proposal use the Workspace's review API. The Workspace is opened on
the first call, so starting the server stays cheap.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from gitpatch.doors.mcp._reply import Handler, Reply, ToolSet
from gitpatch.errors import GitpatchError
from gitpatch.porcelain.opening import is_open, open_workspace, repository_config
from gitpatch.tools import definitions as tooldefs

if TYPE_CHECKING:
    from gitpatch.porcelain.workspace import Workspace
    from gitpatch.tools import ToolResult
    from gitpatch.tools.policy import ToolPermissionPolicy
    from gitpatch.workspace.results import ProposalInfo

__all__ = ["workspace_toolset"]


class _Repository:
    """Opens the Workspace once (lazily) for one repository, mode and session.

    The session is ``serve --session NAME`` as given, else the MCP client's ``clientInfo``
    name (``client``, set by the server before each call), else ``agent``; the last two are
    made unique among live connections (``claim_session``), and released at ``close``.
    """

    def __init__(self, path: str, mode: str | None, session: str | None = None) -> None:
        self.path = path
        self.mode = mode
        self.session = session
        self.client: str | None = None
        self._ws: Workspace | None = None
        self._lock = threading.Lock()
        self._release: list[Callable[[], None]] = []

    def workspace(self) -> Workspace:
        with self._lock:
            if self._ws is None:
                mode: Any = self.mode
                extra: dict[str, Any] = {"agent": self.client} if self.client else {}
                self._ws = open_workspace(self.path, mode, name=self._session_name(), **extra)
            return self._ws

    def claim(self) -> None:
        """Hold an explicit session name now, refusing one a live connection holds."""
        if self.session is not None and not self._release:
            from gitpatch.porcelain.opening import git_dir
            from gitpatch.workspace.sessions import claim_session

            _name, release = claim_session(git_dir(self.path), self.session, exact=True)
            self._release.append(release)

    def _session_name(self) -> str:
        if self.session is not None:
            self.claim()
            return self.session
        from gitpatch.porcelain.opening import git_dir
        from gitpatch.workspace.sessions import claim_session, session_name

        name, release = claim_session(git_dir(self.path), session_name(self.client))
        self._release.append(release)
        return name

    def close(self) -> None:
        """Free the session name for the next connection."""
        while self._release:
            self._release.pop()()

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
    the policy of ``.gitpatch.toml`` combined with the git config's tool rules.

    A call identical to the last edit that succeeded, while nothing moved since (the view's
    head is still the version it returned), is a harness retry: it gets the original result,
    marked already applied, and changes nothing.
    """

    def __init__(self, source: _Repository) -> None:
        self.source = source
        self._tools: dict[str, Any] = {}
        self._last: tuple[str, Reply] | None = None

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

    def _edit(self, name: str, args: BaseModel, **call: Any) -> Reply:
        text = json.dumps([name, args.model_dump(mode="json")], sort_keys=True)
        key = hashlib.sha256(text.encode()).hexdigest()[:32]
        replay = self._replayed(key, name, args)
        if replay is not None:
            return replay
        reply = _reply(self.tool(name).invoke(key, **call))
        if reply.ok:
            self._last = (key, reply)
        return reply

    def _replayed(self, key: str, name: str, args: BaseModel) -> Reply | None:
        """The original result of the call ``key`` when it is the last change and nothing
        moved since: from this connection, else rebuilt from the proposal's note (a
        restarted server)."""
        ws = self.source.workspace()
        if self._last is not None and self._last[0] == key:
            reply = self._last[1]
            if reply.data is not None and ws.version() == reply.data.get("version"):
                return _already(reply.text, reply.data)
        found = ws.replayed(key)
        if found is None:
            return None
        data: dict[str, Any] = {"version": found.version, "status": found.status}
        data |= {"proposal_id": found.proposal_id, "branch": found.branch}
        if name == "patch_resource" or name == "patch":
            data |= {"path": getattr(args, "path", ""), "id": None}
        return _already(found.message, data)

    def patch(self, args: tooldefs.PatchArgs) -> Reply:
        return self._edit("patch", args, path=args.path, edits=args.edits, revises=args.revises)

    def apply_patch(self, args: tooldefs.ApplyPatchArgs) -> Reply:
        return self._edit("apply_patch", args, patch=args.patch, revises=args.revises)

    def patch_resource(self, args: tooldefs.PatchResourceArgs) -> Reply:
        edits = [e.model_dump(exclude_none=True) for e in args.edits]
        return self._edit(
            "patch_resource",
            args,
            path=args.path,
            edits=edits,
            team=args.team,
            expected_version=args.expected_version,
            revises=args.revises,
        )

    def read_file(self, args: tooldefs.ReadFileArgs) -> Reply:
        return _reply(self.tool("read_file")(path=args.path, offset=args.offset, limit=args.limit))


def _already(text: str, data: dict[str, Any]) -> Reply:
    """A retried call's original result, marked as such: nothing was changed again."""
    head = (
        "Already applied: this identical call succeeded before and nothing changed since, "
        f"so nothing was changed again. The original result:\n{text}"
    )
    return Reply(True, head, data={**data, "already_applied": True})


def _describe(info: ProposalInfo) -> str:
    """One proposal as the agent reads it in a list: id, status, files, and the feedback."""
    line = f"{info.id}  {info.status}  {info.target.removeprefix('refs/heads/')}  "
    line += ", ".join(info.files)
    if info.decided_by or info.reason:
        line += f"\n    {info.status} by {info.decided_by or '?'} at {info.decided_at or '?'}"
        line += f": {info.reason}" if info.reason else ""
    for c in info.comments:
        line += f"\n    {c.by} ({c.kind}, {c.at}): {c.text}"
    if info.revises:
        line += f"\n    revises {info.revises}"
    if info.revised_by:
        line += f"\n    revised by {info.revised_by}"
    if info.lands:
        line += f"\n    approving it also lands {', '.join(info.lands)} (beneath it)"
    for flag in info.overlaps:
        line += f"\n    also changed by another session: {flag}"
    return line


def _review_handlers(repo: _Repository) -> dict[str, Handler]:
    def list_proposals(_args: BaseModel) -> Reply:
        ws = repo.workspace()
        mine = ws.session
        items = [
            i for i in ws.proposals() if is_open(ws, i) or (mine is not None and i.session == mine)
        ]
        data = {"proposals": [i.model_dump(mode="json") for i in items]}
        lines = [_describe(i) for i in items]
        return Reply(True, "\n".join(lines) or "No open proposals.", data=data)

    def show_proposal(args: BaseModel) -> Reply:
        assert isinstance(args, tooldefs.ShowProposalArgs)
        detail = repo.workspace().show(args.id)
        # the published output keeps ``recorded`` (one text); ``records``, the commit message
        # and the raw note are for the review page
        data = detail.model_dump(mode="json", exclude={"records", "message", "note"})
        return Reply(
            True, f"proposal {_describe(detail.info)}\n\n{detail.diff}{detail.recorded}", data=data
        )

    return {"list_proposals": list_proposals, "show_proposal": show_proposal}


def _workbench_handlers(repo: _Repository, allow_run: bool) -> dict[str, Handler]:
    """``checkpoint``, and ``run_command`` when a person allowed it (``serve --allow-run``)."""

    def checkpoint(args: BaseModel) -> Reply:
        assert isinstance(args, tooldefs.CheckpointArgs)
        result = repo.workspace().checkpoint(args.command)
        text = "\n".join(x for x in (result.made, result.message) if x)
        return Reply(True, text, data=result.model_dump(mode="json"))

    def run_command(args: BaseModel) -> Reply:
        assert isinstance(args, tooldefs.RunCommandArgs)
        ran = repo.workspace().run_command(args.command, float(args.timeout_seconds))
        status = (
            f"Exit status: {ran.exit_code}"
            if ran.exit_code is not None
            else f"Stopped after {args.timeout_seconds} s (the timeout): its process group "
            "was killed."
        )
        text = "\n".join(
            x
            for x in (ran.made, status, "Output:", ran.output.rstrip(), ran.checkpoint.message)
            if x
        )
        data = {
            "exit_code": ran.exit_code,
            "output": ran.output,
            "worktree": ran.worktree,
            "checkpoint": ran.checkpoint.model_dump(mode="json"),
        }
        return Reply(True, text, data=data)

    handlers: dict[str, Handler] = {"checkpoint": checkpoint}
    if allow_run:
        handlers["run_command"] = run_command
    return handlers


def _with_notices(repo: _Repository, name: str, handler: Handler, told: set[str]) -> Handler:
    """``handler`` whose reply starts with the session's notices (verdicts, re-bases,
    comments, other sessions' work on the same files) and, after an edit, flags those files."""

    def overlaps() -> list[str]:
        fresh = [f for f in repo.workspace().overlaps() if f not in told]
        told.update(fresh)
        return fresh

    def run(args: BaseModel) -> Reply:
        lines = repo.workspace().notices()
        try:
            reply = handler(args)
        except GitpatchError as exc:
            reply = Reply(False, exc.message, exc.code, hint=exc.hint)
        # looked for once, after the call: an edit's own files are flagged at once
        lines += [f"Another session also changes {f}." for f in overlaps()]
        if not lines:
            return reply
        data = reply.data
        if data is not None:
            data = {**data, "notices": lines}
        return dataclasses.replace(reply, data=data, notices=tuple(lines))

    return run


def workspace_toolset(
    path: str, mode: str | None = None, session: str | None = None, *, allow_run: bool = False
) -> ToolSet:
    """Every tool over the repository at ``path`` (``mode``: auto, review, or the config's;
    ``session``: the session name, else the client's name, else ``agent``; ``allow_run``:
    also ``run_command``, which runs the agent's shell commands in its session's worktree)."""
    repo = _Repository(path, mode, session)
    repo.claim()  # a name in use elsewhere is refused before the client connects
    edits = _EditAdapter(repo)
    handlers: dict[str, Handler] = {
        "patch": edits.patch,  # type: ignore[dict-item]
        "apply_patch": edits.apply_patch,  # type: ignore[dict-item]
        "patch_resource": edits.patch_resource,  # type: ignore[dict-item]
        "read_file": edits.read_file,  # type: ignore[dict-item]
        **_review_handlers(repo),
        **_workbench_handlers(repo, allow_run),
    }
    told: set[str] = set()
    handlers = {n: _with_notices(repo, n, h, told) for n, h in handlers.items()}
    instructions = (
        "Edit files in this git repository with patch, apply_patch or patch_resource; read them "
        "with read_file. Every edit is one commit; in review mode it waits for a person "
        "(see list_proposals / show_proposal), your later calls see your pending proposals, "
        "and a rejected one can be revised (revises: its id). You cannot approve or reject."
    )

    def client(name: str | None) -> None:
        if repo.client is None and name:
            repo.client = name

    if allow_run:
        instructions += (
            " run_command runs a shell command in your session's worktree and checkpoints "
            "what it changed for review."
        )
    tools = (*tooldefs.TOOLS, tooldefs.RUN_TOOL) if allow_run else None
    return ToolSet(handlers, instructions, closers=[repo.close], on_client=client, tools=tools)
