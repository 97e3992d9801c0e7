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
    from gitpatch.workspace.results import ProposalDetail, ProposalInfo

__all__ = ["MAX_FILE_BYTES", "workspace_toolset"]

#: The largest file an edit over stdio may write unless ``serve --max-file-bytes`` says
#: otherwise: GitHub's per-file limit, so what an agent writes can still be pushed.
MAX_FILE_BYTES = 100 * 1024 * 1024


class _Repository:
    """Opens the Workspace once (lazily) for one repository, mode and session.

    The session is ``serve --session NAME`` as given, else the MCP client's ``clientInfo``
    name (``client``, set by the server before each call), else ``agent``; the last two are
    made unique among live connections (``claim_session``), and released at ``close``.
    """

    def __init__(
        self,
        path: str,
        mode: str | None,
        session: str | None = None,
        max_file_bytes: int | None = None,
    ) -> None:
        self.path = path
        self.mode = mode
        self.session = session
        self.max_file_bytes = max_file_bytes
        self.client: str | None = None
        self._ws: Workspace | None = None
        self._lock = threading.Lock()
        self._release: list[Callable[[], None]] = []

    def workspace(self) -> Workspace:
        with self._lock:
            if self._ws is None:
                mode: Any = self.mode
                extra: dict[str, Any] = {"agent": self.client} if self.client else {}
                extra["max_file_bytes"] = self.max_file_bytes
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
        """The tool rules of the repository's settings (``.gitpatch.toml``'s ``[policy]`` and
        git config's, strictest wins), as every Workspace storage takes them; None when
        neither sets a rule (the tools then allow every edit)."""
        from gitpatch.tools.storage.workspace import WorkspaceStorage

        return WorkspaceStorage.of(self.workspace()).config_policy()


class _EditAdapter:
    """The edit tools and read_file: ``gitpatch.tools`` over the repository's Workspace, with
    the policy of ``.gitpatch.toml`` combined with the git config's tool rules.

    A call identical to the last edit that succeeded, while nothing moved since (the view's
    head is still the version it returned), is a harness retry: the tool layer answers it with
    the original result (kept in the proposal's note, so a restarted server knows it too),
    marked already applied here, and nothing changes.
    """

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

    def _edit(self, name: str, args: BaseModel, **call: Any) -> ToolResult:
        text = json.dumps([name, args.model_dump(mode="json")], sort_keys=True)
        key = hashlib.sha256(text.encode()).hexdigest()[:32]
        result: ToolResult = self.tool(name).invoke(key, **call)
        if result.ok and result.data.get("already_applied"):
            return _already(result.text, result.data)
        return result

    def patch(self, args: tooldefs.PatchArgs) -> ToolResult:
        return self._edit("patch", args, path=args.path, edits=args.edits, revises=args.revises)

    def apply_patch(self, args: tooldefs.ApplyPatchArgs) -> ToolResult:
        return self._edit("apply_patch", args, patch=args.patch, revises=args.revises)

    def patch_resource(self, args: tooldefs.PatchResourceArgs) -> ToolResult:
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

    def read_file(self, args: tooldefs.ReadFileArgs) -> ToolResult:
        result: ToolResult = self.tool("read_file")(
            path=args.path, offset=args.offset, limit=args.limit
        )
        return result


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
        on = f" on {c.path} line {c.line} ({c.line_text!r})" if c.path else ""
        line += f"\n    {c.by} ({c.kind}, {c.at}){on}: {c.text}"
    if info.revises:
        line += f"\n    revises {info.revises}"
    if info.revised_by:
        line += f"\n    revised by {info.revised_by}"
    if info.lands and info.id == info.session:  # a session: its own proposals, all of them
        line += f"\n    approving the session lands its proposals {', '.join(info.lands)}"
    elif info.lands:
        line += f"\n    approving it also lands {', '.join(info.lands)} (beneath it)"
    for clash in info.conflicts:
        sides = "; ".join(f"{k}: {v!r}" for k, v in clash.items() if k != "path")
        line += f"\n    conflicts in {clash.get('path')}: {sides}"
    for flag in info.overlaps:
        line += f"\n    also changed by another session: {flag}"
    return line


def _hunk_lines(detail: ProposalDetail) -> str:
    """The hunks' ids and verdicts, and the person's edits, after the diff."""
    lines = [
        f"hunk {h.number} ({h.id}): {h.verdict}"
        + (f" by {h.by}" if h.by and h.verdict != "open" else "")
        + (f": {h.reason}" if h.reason else "")
        for h in detail.hunks
    ]
    lines += [f"edited by {a.by} at {a.at}: {'; '.join(a.where)}" for a in detail.amendments]
    return "\n\n" + "\n".join(lines) if lines else ""


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
        text = f"proposal {_describe(detail.info)}\n\n{detail.diff}{detail.recorded}"
        return Reply(True, text + _hunk_lines(detail), data=data)

    def run_checks(_args: BaseModel) -> Reply:
        report = repo.workspace().check()
        lines = [report.summary()]
        failed = report.failure()
        if failed is not None:
            lines.append(f"exit code {failed.exit_code}; the output ends:\n{failed.output}")
        return Reply(True, "\n".join(lines), data=report.model_dump(mode="json"))

    return {
        "list_proposals": list_proposals,
        "show_proposal": show_proposal,
        "run_checks": run_checks,
    }


def _workbench_handlers(repo: _Repository, allow_run: bool) -> dict[str, Handler]:
    """``checkpoint``, and ``run_command`` when a person allowed it (``serve --allow-run``)."""

    def checkpoint(args: BaseModel) -> Reply:
        assert isinstance(args, tooldefs.CheckpointArgs)
        result = repo.workspace().checkpoint(args.command)
        text = "\n".join(x for x in (result.made, result.message) if x)
        return Reply(True, text, data=result.model_dump(mode="json"))

    def run_command(args: BaseModel) -> Reply:
        assert isinstance(args, tooldefs.RunCommandArgs)
        ran = repo.workspace().run(args.command, timeout=float(args.timeout_seconds))
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


def _with_notices(repo: _Repository, name: str, handler: Handler) -> Handler:
    """``handler`` whose reply starts with the session's notices (verdicts, re-bases,
    comments, other sessions' work on the same files) and, after an edit that made one of its
    files overlap another session's work, ends with that warning. Each line is told once,
    also across restarts (``ws.plumbing.notices`` / ``new_overlaps``). A person's save the
    call set aside (its land, or its recovery of a killed one) ends it too, in every tool and
    without a session (``ws.plumbing.set_aside``)."""

    def run(args: BaseModel) -> ToolResult:
        ws = repo.workspace()
        if name == "run_command":  # minutes long: the Workspace's calls are not held off
            return told(ws, args)
        with ws.plumbing.call():  # one call: recovery runs once, not once per verb
            return told(ws, args)

    def told(ws: Workspace, args: BaseModel) -> ToolResult:
        lines = ws.plumbing.notices()
        try:
            reply = handler(args)
        except GitpatchError as exc:
            reply = Reply.refusal(exc)
        # looked for once, after the call: an edit's own files are flagged at once, at the end
        touched = _touched(reply) if reply.ok and name in _EDITS else set()
        after: list[str] = []
        for flag in ws.plumbing.new_overlaps():
            caused = any(f" {path} " in flag for path in touched)  # the clash names its file
            (after if caused else lines).append(f"{flag}.")
        after += ws.plumbing.set_aside()  # a person's save this call's land set aside
        if not lines and not after:
            return reply
        data = {**reply.data, "notices": lines + after}
        text = "\n".join([reply.text, *after])
        return dataclasses.replace(reply, text=text, data=data, notices=tuple(lines))

    return run


def _touched(reply: ToolResult) -> set[str]:
    """The paths a successful edit's result names (``path``, or each of ``files``)."""
    data = reply.data
    found = {str(data["path"])} if data.get("path") else set()
    for f in data.get("files") or ():
        found.update(str(f[k]) for k in ("path", "moved_from") if f.get(k))
    return found


_EDITS = frozenset({"patch", "apply_patch", "patch_resource"})


def workspace_toolset(
    path: str,
    mode: str | None = None,
    session: str | None = None,
    max_file_bytes: int | None = None,
    *,
    allow_run: bool = False,
) -> ToolSet:
    """Every tool over the repository at ``path`` (``mode``: auto, review, or the config's;
    ``session``: the session name, else the client's name, else ``agent``); an edit writing
    a file over ``max_file_bytes`` (default ``MAX_FILE_BYTES``) is ``payload_too_large``;
    ``allow_run``: also ``run_command``, which runs the agent's shell commands in its
    session's worktree."""
    repo = _Repository(path, mode, session, max_file_bytes or MAX_FILE_BYTES)
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
    handlers = {n: _with_notices(repo, n, h) for n, h in handlers.items()}
    instructions = (
        "Edit files in this git repository with patch, apply_patch or patch_resource; read them "
        "with read_file. Every edit is one commit; in review mode it waits for a person "
        "(see list_proposals / show_proposal), your later calls see your pending proposals, "
        "and a rejected one can be revised (revises: its id). You cannot approve or reject. "
        f"An edit may leave a file of at most {repo.max_file_bytes} bytes (payload_too_large "
        f"above); read_file returns at most {tooldefs.READ_MAX_BYTES} bytes per call (pass "
        "offset to read on)."
    )

    def client(name: str | None) -> None:
        if repo.client is None and name:
            repo.client = name

    if allow_run:
        instructions += (
            " run_command runs a shell command in your session's worktree and checkpoints "
            "what it changed for review."
        )
    # an edit lands on files in auto mode; in review mode it only adds a proposal branch
    lands = (mode or repository_config(path).mode) == "auto"
    return ToolSet(
        handlers,
        instructions,
        closers=[repo.close],
        on_client=client,
        destructive=_EDITS if lands else frozenset(),
        tools=(*tooldefs.TOOLS, tooldefs.RUN_TOOL) if allow_run else None,
    )
