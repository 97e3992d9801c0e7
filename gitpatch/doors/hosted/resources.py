"""The service's resource tools over spaces, for one caller's credential.

``patch_resource`` is the tool layer's (``gitpatch.tools.patch_resource_tool``) on the space's
storage; ``read_resource``, ``create_resource``, ``update_resource`` (whole content, binary as
base64), ``grep_resource`` and ``list_resources`` are its companions. Each call decides where
it goes and whether it may (``access.locate``) once, at its start, and keeps that decision
until it returns: a credential revoked meanwhile cannot half-apply a call. Every call returns a
``ToolResult`` (errors through ``gitpatch.tools.error_result``, the one place); results carry
the spec's integer ``version`` and the ``commit`` it names. No MCP or HTTP here.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from gitpatch.core.model import Proposal, WriteFile
from gitpatch.doors.hosted.access import Location, locate
from gitpatch.doors.hosted.credentials import Credential
from gitpatch.doors.hosted.grepping import MAX_GREP_MATCHES, as_text, compile_pattern, grep
from gitpatch.doors.hosted.maintenance import Maintenance
from gitpatch.doors.hosted.spaces import BRANCH, Space, Spaces, SpaceStorage, check_path_limits
from gitpatch.errors import GitpatchError, InvalidArguments
from gitpatch.tools import ToolResult, error_result, patch_resource_tool
from gitpatch.tools.storage.base import Applied, FileRead, Stat, Target, resolve_plain

__all__ = ["MAX_GREP_MATCHES", "STORAGE_REFUSED", "ResourceService"]

_log = logging.getLogger("gitpatch.doors.hosted")

#: Called after every change a call made (the space and what was applied), e.g. to push.
ChangeHook = Callable[[Space, Applied], None]


def _decode(content: str, encoding: str) -> bytes:
    if encoding == "utf-8":
        return content.encode("utf-8", "surrogatepass")
    try:
        return base64.b64decode(content.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise InvalidArguments(
            "content is not valid base64",
            hint="Encode binary content as standard base64 (RFC 4648), or pass "
            'encoding="utf-8" with the text itself.',
        ) from None


class _AsCaller:
    """A space's storage for one call: each change's commit message names the caller (the
    user or organization and the credential's fingerprint, never the token)."""

    root = ""

    def __init__(self, storage: SpaceStorage, cred: Credential) -> None:
        self.storage = storage
        self.who = f"{cred.user or cred.organization} (credential {cred.fingerprint})"
        #: What the call's change came to (its commit is the result's, found without a walk).
        self.applied: Applied | None = None

    def resolve(self, path: str, cwd: str | None = None) -> Target:
        """See ``SpaceStorage.resolve``; the target writes through this view."""
        return check_path_limits(resolve_plain(self, path, None, None))

    def read(self, key: str) -> FileRead:
        """See ``SpaceStorage.read``."""
        return self.storage.read(key)

    def read_bytes(self, key: str) -> bytes:
        """See ``SpaceStorage.read_bytes``."""
        return self.storage.read_bytes(key)

    def stat(self, key: str) -> Stat | None:
        """See ``SpaceStorage.stat``."""
        return self.storage.stat(key)

    def list(self, prefix: str = "") -> list[str]:
        """See ``SpaceStorage.list``."""
        return self.storage.list(prefix)

    def apply(self, proposal: Proposal, **options: Any) -> Applied:
        """``SpaceStorage.apply`` with the caller named in the commit message."""
        what = ", ".join(proposal.paths)
        message = f"{proposal.tool or 'change'}: {what}\n\nRequested by {self.who}."
        applied = self.storage.apply(dataclasses.replace(proposal, message=message), **options)
        self.applied = applied
        return applied


class ResourceService:
    """The six resource tools over the spaces of one data directory."""

    def __init__(self, spaces: Spaces, on_change: ChangeHook | None = None) -> None:
        self.spaces = spaces
        self.on_change = on_change
        self.maintenance = Maintenance()

    def _where(
        self, cred: Credential, path: str, team: str | None, write: bool
    ) -> tuple[Location, Space]:
        loc = locate(cred, path, team, write=write)
        return loc, self.spaces.get(loc.space)

    def _result(self, space: Space, text: str, data: dict[str, Any]) -> ToolResult:
        commit = data.get("commit")
        if commit is None and data.get("proposal_id"):
            found = space.workspace().plumbing.store.ref_target(
                f"refs/heads/gitpatch/{data['proposal_id']}"
            )
            commit = None if found is None else str(found)
        if commit is None and data.get("version"):
            commit = space.storage.commit_of(int(data["version"]))
        data["commit"] = commit
        if "version:" not in text.lower():
            text = f"{text}\nversion: {data.get('version')}"
        return ToolResult(text, ok=True, data=data)

    # -- patch_resource (the tool layer's) -----------------------------------------------------

    def patch_resource(
        self,
        cred: Credential,
        path: str,
        edits: list[dict[str, Any]],
        team: str | None = None,
        expected_version: int | None = None,
    ) -> ToolResult:
        """Apply edit objects to one text resource (patch-resource.md)."""
        try:
            loc, space = self._where(cred, path, team, True)
        except GitpatchError as exc:
            return error_result("patch_resource", exc)
        view = _AsCaller(space.storage, cred)
        tool = patch_resource_tool(view, view)
        # the space's storage queues the write itself (``SpaceStorage.apply``)
        result = tool(path=loc.path, edits=edits, expected_version=expected_version)
        if not result.ok:
            return _storage_refusal("patch_resource", result)
        data = dict(result.data)
        data["path"] = _shown(path, loc, str(data.get("path") or loc.path))
        made = view.applied
        if made is not None and not made.review and "commit" not in data:
            data["commit"] = made.versions.get(made.branch or BRANCH)
        out = self._result(space, result.text, data)
        self._changed(space, data)
        return out

    # -- whole resources -----------------------------------------------------------------------

    def _write(
        self,
        tool: str,
        cred: Credential,
        path: str,
        data: Callable[[], bytes],
        create: bool,
        team: str | None,
        expected_version: int | None = None,
    ) -> ToolResult:
        try:
            loc, space = self._where(cred, path, team, True)
            target = space.storage.resolve(loc.path)
            proposal = Proposal(
                (WriteFile(target.key, data(), create),), "patch_resource", tool=tool
            )
            applied = _AsCaller(space.storage, cred).apply(
                proposal, expected_version=expected_version
            )
        except (GitpatchError, OSError) as exc:
            return _storage_refusal(tool, error_result(tool, exc))
        verb = "Created" if create else "Replaced"
        shown = _shown(path, loc, target.key)
        out: dict[str, Any] = {
            "path": shown,
            "id": applied.ids.get(target.key),
            "version": applied.version,
            "commit": applied.versions.get(applied.branch or BRANCH),
        }
        if applied.review:
            out["proposal_id"] = applied.proposal_id
            verb = f"Proposed ({'create' if create else 'replace'}, awaiting review)"
        result = self._result(space, f"{verb} {shown}.", out)
        self._changed(space, out, applied)
        return result

    def create_resource(
        self,
        cred: Credential,
        path: str,
        content: str,
        team: str | None = None,
        encoding: str = "utf-8",
    ) -> ToolResult:
        """Create a new resource (``resource_exists`` if the path is taken)."""
        return self._write(
            "create_resource", cred, path, lambda: _decode(content, encoding), True, team
        )

    def update_resource(
        self,
        cred: Credential,
        path: str,
        content: str,
        expected_version: int | None = None,
        team: str | None = None,
        encoding: str = "utf-8",
    ) -> ToolResult:
        """Replace a resource's whole content (text, or binary as base64)."""
        return self._write(
            "update_resource",
            cred,
            path,
            lambda: _decode(content, encoding),
            False,
            team,
            expected_version,
        )

    # -- reading ------------------------------------------------------------------------------

    def read_resource(self, cred: Credential, path: str, team: str | None = None) -> ToolResult:
        """A resource's content (text, or base64 for binary), version, commit and id."""
        try:
            loc, space = self._where(cred, path, team, False)
            target = space.storage.resolve(loc.path)
            found = space.storage.read(target.key)
        except GitpatchError as exc:
            return error_result("read_resource", exc)
        text = as_text(found.data)
        shown = _shown(path, loc, target.key)
        data: dict[str, Any] = {
            "path": shown,
            "id": found.id,
            "version": found.version,
            "encoding": "utf-8" if text is not None else "base64",
            "content": text if text is not None else base64.b64encode(found.data).decode(),
            "size": len(found.data),
        }
        shown = text if text is not None else f"(binary, {len(found.data)} bytes, base64 below)\n"
        body = shown if text is not None else shown + data["content"]
        result = self._result(space, f"{shown} (id {found.id})", data)
        return ToolResult(f"{result.text}\n\n{body}", ok=True, data=result.data)

    def list_resources(
        self, cred: Credential, prefix: str | None = None, team: str | None = None
    ) -> ToolResult:
        """Every resource path of the space (below ``prefix``), with the space's version."""
        try:
            loc, space = self._where(cred, prefix or "", team, False)
            base = space.storage.resolve(loc.path).key if loc.path.strip("/") else ""
            paths = space.storage.list(base)
        except GitpatchError as exc:
            return error_result("list_resources", exc)
        data = {"resources": paths, "version": space.storage.version()}
        text = "\n".join(paths) if paths else "No resources."
        return self._result(space, text, data)

    def grep_resource(
        self,
        cred: Credential,
        pattern: str,
        path: str | None = None,
        team: str | None = None,
    ) -> ToolResult:
        """Lines matching the regular expression ``pattern`` in the text resources at or
        below ``path``, with line numbers, all read at one version."""
        try:
            compile_pattern(pattern)  # a bad pattern is refused before the path is looked at
            loc, space = self._where(cred, path or "", team, False)
            base = space.storage.resolve(loc.path).key if loc.path.strip("/") else ""
            head = space.head()
            found = (
                ([], False)
                if head is None
                else grep(space.workspace().plumbing.store, head, pattern, base)
            )
            matches, truncated = found
        except GitpatchError as exc:
            return error_result("grep_resource", exc)
        data: dict[str, Any] = {
            "matches": matches,
            "truncated": truncated,
            "version": space.storage.version() if space.exists() else 0,
        }
        text = "\n".join(f"{m['path']}:{m['line']}:{m['text']}" for m in matches)
        return self._result(space, text or "No matches.", data)

    # -- hooks ---------------------------------------------------------------------------------

    def _changed(self, space: Space, data: dict[str, Any], applied: Applied | None = None) -> None:
        self.maintenance.changed(space)
        if self.on_change is None:
            return
        if applied is None:
            applied = Applied(
                version=data["version"], files=(), proposal_id=data.get("proposal_id")
            )
        self.on_change(space, applied)


def _shown(given: str, loc: Location, key: str) -> str:
    """The normalised path a result names: the key in the space, with the ``team/<name>/``
    prefix when the caller addressed the team that way."""
    prefixed = isinstance(given, str) and given.startswith("team/") and loc.team is not None
    return f"team/{loc.team}/{key}" if prefixed else key


#: What every write the disk refused answers, whatever step failed (blob, tree, commit, ref).
STORAGE_REFUSED = (
    "the service could not save this change: its storage refused the write (full or failing); "
    "nothing was changed"
)


def _storage_refusal(tool: str, result: ToolResult) -> ToolResult:
    """A refused write (``filesystem_error``) as one stable text without internals (object
    ids, internal steps), and an unexpected failure as ``internal_error`` saying no more;
    what happened goes to the server's log."""
    if not result.ok and result.code == "internal_error":
        _log.error("%s failed unexpectedly: %s", tool, result.text)
        text = f"{tool} failed unexpectedly; nothing was changed"
        return ToolResult(text, ok=False, code="internal_error", data={"code": "internal_error"})
    if result.ok or result.code != "filesystem_error":
        return result
    _log.warning("%s: the disk refused a write: %s", tool, result.text)
    hint = "Retry later; if it persists, tell the service's operator."
    data = {"code": "filesystem_error", "message": STORAGE_REFUSED, "hint": hint}
    return ToolResult(f"{STORAGE_REFUSED}\n{hint}", ok=False, code="filesystem_error", data=data)
