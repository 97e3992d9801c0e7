"""What every tool shares: its namespace, policy checks, serialisation, async cancellation.

A tool is made once (``patch_tool(reader=..., writer=...)``) and called many times. Each call
runs under the instance's lock (one read-edit-write at a time), resolves its paths, checks
permissions and plan mode before anything is parsed or read, and returns a ``ToolResult``;
every exception is turned into one by ``gitpatch.tools._errors``.

``await tool.acall(...)`` runs the call in a worker thread. A cancellation that arrives before
the storage opens its writer stops the call with nothing written; one that arrives after waits
until the write settled (the commit, the working-tree files), then propagates.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from gitpatch.core.model import Proposal
from gitpatch.core.paths import Address, normalize_proposal
from gitpatch.errors import ApprovalRequired, GitpatchError, InvalidArguments, UnsavedChanges
from gitpatch.tools._errors import Cancelled, error_result
from gitpatch.tools._result import ToolResult
from gitpatch.tools.policy import (
    PLAN_MODES,
    CombinedPolicy,
    ToolOperation,
    ToolPermissionPolicy,
    approval_required,
    check,
    check_plan_mode,
)
from gitpatch.tools.storage.base import Applied, Namespace, Target
from gitpatch.tools.storage.mounts import MountedFilesystem, namespace_of
from gitpatch.tools.storage.workspace import WorkspaceStorage

__all__ = ["ApprovalPending", "Cancelled", "Tool", "UnsavedPaths"]

#: Reports the paths (as the texts show them) an editor holds unsaved edits for.
UnsavedPaths = Callable[[], Iterable[str]]

#: ``run``'s signature (bound: without ``self``) per tool class.
_SIGNATURES: dict[type[Tool], inspect.Signature] = {}


def _bad_arguments(tool: str, exc: TypeError) -> InvalidArguments:
    why = str(exc).removeprefix("run() ").replace("keyword argument", "argument")
    return InvalidArguments(
        f"{tool}: {why}", hint=f"Call {tool} with its documented parameters (names as given)."
    )


class _CallState:
    """One async call: cancelled before the writer opened, or writing (then it settles)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._shown: dict[str, str] = {}
        self.cancelled = False
        self.writing = False

    def before_write(self) -> None:
        """Called right before the writer opens: stop if cancelled, else mark the write."""
        with self._lock:
            if self.cancelled:
                raise Cancelled("cancelled before writing")
            self.writing = True

    def cancel(self) -> None:
        """Record a cancellation (it stops the call only before the write began)."""
        with self._lock:
            self.cancelled = True


def _config_policy(namespace: Namespace) -> ToolPermissionPolicy | None:
    """The rules of the git config of every Workspace in the namespace (strictest wins)."""
    storages = (
        namespace.mounts.values() if isinstance(namespace, MountedFilesystem) else [namespace]
    )
    found = [
        rules
        for s in storages
        if isinstance(s, WorkspaceStorage) and (rules := s.config_policy()) is not None
    ]
    if not found:
        return None
    return found[0] if len(found) == 1 else CombinedPolicy(tuple(found))


class Tool:
    """Base of the spec tools: subclasses set ``name`` and implement ``run``."""

    name = "tool"

    def __init__(
        self,
        reader: Any,
        writer: Any,
        cwd: str | None = None,
        policy: ToolPermissionPolicy | None = None,
        *,
        plan_mode: str = "none",
        session: str | None = None,
        unsaved: UnsavedPaths | None = None,
    ) -> None:
        self.namespace: Namespace = namespace_of(reader, writer)
        self.cwd = cwd
        self.policy = policy if policy is not None else _config_policy(self.namespace)
        if plan_mode not in PLAN_MODES:
            raise ValueError(f"plan_mode must be one of {', '.join(PLAN_MODES)}")
        self.plan_mode = plan_mode
        self.session = session
        self.unsaved = unsaved
        self._lock = threading.Lock()
        self._digest = ""

    # -- calling -----------------------------------------------------------------------------

    def __call__(self, **arguments: Any) -> ToolResult:
        """Run the tool; never raises (errors come back as results with a code)."""
        return self._call(arguments, None)

    def invoke(self, call: str, **arguments: Any) -> ToolResult:
        """Run the tool as ``__call__`` does, recording ``call`` (a digest of the harness's
        tool call) with the change it makes, so a retry of that very call is recognised."""
        return self._call(arguments, None, call)

    async def acall(self, **arguments: Any) -> ToolResult:
        """Run the tool in a worker thread; see the module docstring for cancellation."""
        state = _CallState()
        future = asyncio.ensure_future(asyncio.to_thread(self._call, arguments, state))
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            state.cancel()
            while not future.done():
                try:
                    await asyncio.shield(future)
                except asyncio.CancelledError:
                    continue
            raise

    def _call(
        self, arguments: dict[str, Any], state: _CallState | None, call: str = ""
    ) -> ToolResult:
        before_write = state.before_write if state is not None else None
        try:
            self._signature().bind(**arguments)
        except TypeError as exc:
            return error_result(self.name, _bad_arguments(self.name, exc))
        shown: dict[str, str] = {}
        try:
            with self._lock:
                self._shown = shown
                self._digest = call
                return self.run(before_write=before_write, **arguments)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            return error_result(self.name, exc, shown)

    def _signature(self) -> inspect.Signature:
        """``run``'s signature, worked out once per tool class (it checks every call's
        arguments; the service makes a tool per call, so once per instance is too often)."""
        kind = type(self)
        sig = _SIGNATURES.get(kind)
        if sig is None:
            sig = _SIGNATURES[kind] = inspect.signature(self.run)
        return sig

    def run(self, *args: Any, **arguments: Any) -> ToolResult:
        """Do the work (``before_write`` plus the tool's arguments); may raise (``__call__`` maps
        errors)."""
        raise NotImplementedError

    # -- helpers for subclasses --------------------------------------------------------------

    def resolve(self, path: object, namespace: Namespace | None = None) -> Target:
        """The target ``path`` names in this tool's namespace (or ``namespace``); unsafe paths
        raise. Errors of this call then show the target by the caller's path."""
        space = namespace or self.namespace
        target = space.resolve(path, None if namespace else self.cwd)  # type: ignore[arg-type]
        self._shown[target.key] = target.shown
        return target

    def authorize(self, operation: ToolOperation, target: Target) -> bool:
        """Policy, plan mode and unsaved buffers for one target; True when approval is needed."""
        # no plan mode and no policy (checked when the tool was made): nothing to ask
        if operation is not ToolOperation.READ_FILE and self.plan_mode != "none":
            address: Address | None = target.address
            check_plan_mode(self.plan_mode, self.session, self.name, address, target.shown)
        ask = self.policy is not None and check(self.policy, self.name, operation, target.shown)
        if operation is not ToolOperation.READ_FILE:
            self._refuse_unsaved(target)
        return ask

    def _refuse_unsaved(self, target: Target) -> None:
        if self.unsaved is None:
            return
        dirty = {str(p) for p in self.unsaved()}
        if target.shown in dirty or target.key in dirty:
            raise UnsavedChanges(
                f"`{target.shown}` has unsaved changes in the editor",
                hint="Ask the user to save or discard the editor's changes, then read the file "
                "again before editing it.",
                details={"path": target.shown},
            )

    def approval(self, shown: str) -> GitpatchError:
        """The spec's approval-required error for ``shown``."""
        return approval_required(self.name, shown)

    def submit(
        self,
        proposal: Proposal,
        checks: Sequence[tuple[ToolOperation, Target]],
        before_write: Callable[[], None] | None,
        expected_version: str | int | None = None,
        checked: bool | None = None,
    ) -> Applied:
        """Check every (operation, target) (unless ``checked`` is the answer of an earlier
        ``authorize``), then apply ``proposal`` (written in keys) on the targets' one storage; a
        change needing approval is kept for review where the storage can (a Workspace) and
        reported as ``approval_required``."""
        if self._digest:
            proposal = dataclasses.replace(proposal, call=self._digest)
        keys = {t.key for _, t in checks}
        if all(t.address is None for _, t in checks) and set(proposal.paths) <= keys:
            # its paths are the keys ``resolve`` normalised: marked, never normalised again
            proposal = normalize_proposal(proposal, resolved=True)
        storages = {id(t.storage): t.storage for _, t in checks}
        if len(storages) != 1:
            raise InvalidArguments(
                f"one {self.name} call cannot change files in several mounts "
                f"({', '.join(sorted({t.shown for _, t in checks}))})",
                hint="Split the change: one call per mount.",
            )
        if checked is None:
            asks = [t.shown for op, t in checks if self.authorize(op, t)]
        else:
            asks = [checks[0][1].shown] if checked else []
        (storage,) = storages.values()
        if not asks:
            return storage.apply(
                proposal, expected_version=expected_version, before_write=before_write
            )
        error = self.approval(asks[0])
        scratch = any(t.address is not None for _, t in checks)
        if not isinstance(storage, WorkspaceStorage) or scratch:
            raise error  # nothing can hold the change for a person: nothing is kept
        kept = storage.apply(
            proposal, expected_version=expected_version, review=True, before_write=before_write
        )
        raise ApprovalPending(error, kept)


class ApprovalPending(ApprovalRequired):
    """``approval_required`` with the proposal kept for a person (its id on the next line)."""

    def __init__(self, error: GitpatchError, kept: Applied) -> None:
        branch = (kept.branch or "").removeprefix("refs/heads/")
        hint = (
            f"Proposal {kept.proposal_id} is kept for review on {branch}; nothing on disk "
            "changes until a person approves it. Do not retry this change."
        )
        details = {
            **error.details,
            "proposal_id": kept.proposal_id,
            "branch": kept.branch,
            "version": kept.version,
        }
        super().__init__(error.message, hint, details)
