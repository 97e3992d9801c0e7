"""The handlers ``gitpatch serve`` gives the MCP server, over one repository.

The edit tools and read_file go through ``_EditAdapter``, the one adapter between the MCP
arguments and the code that edits; list_proposals and show_proposal use the Workspace's
review API. The Workspace is opened on the first call, so starting the server stays cheap.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from gitpatch import tooldefs
from gitpatch.errors import InvalidArguments
from gitpatch.mcp_server import Handler, Reply, ToolSet

if TYPE_CHECKING:
    from gitpatch.results import ProposalResult
    from gitpatch.workspace import Workspace

__all__ = ["workspace_toolset"]

A = TypeVar("A", bound=BaseModel)


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start=first))


class _Repository:
    """Opens the Workspace once (lazily) for one repository and mode."""

    def __init__(self, path: str, mode: str | None) -> None:
        self.path = path
        self.mode = mode
        self._ws: Workspace | None = None
        self._lock = threading.Lock()

    def workspace(self) -> Workspace:
        with self._lock:
            if self._ws is None:
                from gitpatch._cli_common import Env

                env = Env(directory=Path(self.path))
                mode: Any = self.mode
                self._ws = env.workspace(mode)
            return self._ws


class _EditAdapter:
    """The edit tools and read_file over a Workspace."""

    def __init__(self, repo: _Repository) -> None:
        self.repo = repo

    @staticmethod
    def _edited(result: ProposalResult, path: str | None = None) -> Reply:
        files = [f.model_dump() for f in result.files]
        data = {
            "version": result.version,
            "proposal_id": result.proposal_id,
            "status": result.status,
            "branch": result.branch,
            "files": files,
            "path": path,
        }
        return Reply(True, f"{result.message}\nversion: {result.version}", data=data)

    def patch(self, args: tooldefs.PatchArgs) -> Reply:
        result = self.repo.workspace().patch(args.path, args.edits)
        return self._edited(result, result.files[0].path if result.files else args.path)

    def apply_patch(self, args: tooldefs.ApplyPatchArgs) -> Reply:
        return self._edited(self.repo.workspace().apply_patch(args.patch))

    def patch_resource(self, args: tooldefs.PatchResourceArgs) -> Reply:
        if args.team is not None:
            raise InvalidArguments(
                "team is only meaningful on a gitpatch service (gitpatch serve --http)",
                hint="Omit team: this server edits the repository it was started in.",
            )
        edits = [e.model_dump(exclude_none=True) for e in args.edits]
        result = self.repo.workspace().patch_resource(
            args.path, edits, expected_version=args.expected_version
        )
        path = result.files[0].path if result.files else args.path
        data = {
            "path": path,
            "id": path,
            "version": result.version,
            "proposal_id": result.proposal_id,
            "status": result.status,
        }
        return Reply(True, f"{result.message}\nversion: {result.version}", data=data)

    def read_file(self, args: tooldefs.ReadFileArgs) -> Reply:
        result = self.repo.workspace().read(args.path)
        lines = result.content.splitlines()
        start = (args.offset or 1) - 1
        shown = lines[start : start + args.limit if args.limit else None]
        data = {
            "path": result.path,
            "version": result.version,
            "offset": start + 1,
            "total_lines": len(lines),
            "lines": shown,
        }
        text = f"{_numbered(shown, start + 1)}\n(version: {result.version}, {len(lines)} lines)"
        return Reply(True, text, data=data)


def _review_handlers(repo: _Repository) -> dict[str, Handler]:
    def list_proposals(_args: BaseModel) -> Reply:
        items = [i for i in repo.workspace().proposals() if i.status in ("proposed", "applied")]
        open_items = [i for i in items if i.branch and repo.workspace().store.ref_target(i.branch)]
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
        data = detail.model_dump(mode="json")
        return Reply(True, f"{head}\n\n{detail.diff}", data=data)

    return {"list_proposals": list_proposals, "show_proposal": show_proposal}


def workspace_toolset(path: str, mode: str | None = None) -> ToolSet:
    """Every tool over the repository at ``path`` (``mode``: auto, review, or the config's)."""
    repo = _Repository(path, mode)
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
    return ToolSet(handlers, instructions)
