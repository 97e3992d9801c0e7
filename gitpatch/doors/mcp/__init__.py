"""The MCP front end: gitpatch's agent tools over the official MCP SDK (``MCPServer``).

``build_server(toolset)`` makes a server for any ``ToolSet`` (a handler per tool name), so the
same construction serves stdio (``gitpatch serve``) and, later, streamable HTTP. The tools
are ``patch``, ``apply_patch``, ``patch_resource``, ``read_file``, ``list_proposals``,
``show_proposal`` and ``checkpoint`` (``run_command`` too with ``serve --allow-run``); there is
deliberately no approve or reject tool: only people approve.

How outcomes reach the client (``_to_result`` and ``_ArgumentValidator``, the one place):
- success: a result with the text the model reads and ``structuredContent`` matching the
  tool's ``outputSchema``;
- a domain refusal (any gitpatch error code): ``isError: true``, text ``<code>: <message>``
  then the hint, the code also in ``_meta.code``, and NO structured content (strict clients
  validate it against the output schema even on errors);
- malformed arguments (schema violations, unknown tool fields, ``invalid_arguments``):
  JSON-RPC ``invalid_params`` (-32602) with the field errors, checked by a middleware before
  the SDK's own validation (which would make them isError results); the handler takes the
  middleware's validated arguments, not validating them again;
- anything unexpected: JSON-RPC ``internal_error`` without internals (logged).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import inspect
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, ValidationError

from gitpatch.core.budget import Budget, checkpoint
from gitpatch.doors.mcp._reply import Admitted, Handler, Reply, ToolSet
from gitpatch.doors.terms import in_terms
from gitpatch.errors import GitpatchError
from gitpatch.tools import definitions as tooldefs

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

    from gitpatch.tools import ToolResult

__all__ = [
    "OUTPUTS",
    "Admitted",
    "Reply",
    "ToolSet",
    "budget_admission",
    "build_server",
    "serve_http",
    "serve_stdio",
    "workspace_tools",
]

_log = logging.getLogger("gitpatch.mcp")

#: Entered around each tool call (by tool name) on the event loop; raising a gitpatch error
#: refuses the call. The context it sets (a budget, ``gitpatch.core.budget``) goes with the
#: call into its worker thread. What it yields may be an ``Admitted``.
Admit = Callable[[str], AbstractAsyncContextManager[object]]


async def _in_thread(
    run: Callable[..., CallToolResult], *args: Any, on_cancel: Callable[[], None] | None
) -> CallToolResult:
    """``run(*args)`` in a worker thread; on cancellation ``on_cancel()`` first, then the wait
    for the thread (a job cancelled before its thread took it never runs). No task watches for
    the cancellation: the wait itself is cancellable."""
    if on_cancel is None:
        return await anyio.to_thread.run_sync(run, *args)
    lock = threading.Lock()
    state = {"started": False, "skipped": False}
    finished = threading.Event()

    def job() -> CallToolResult | None:
        with lock:
            if state["skipped"]:  # its call was cancelled before a thread took it
                return None
            state["started"] = True
        try:
            return run(*args)
        finally:
            finished.set()

    try:
        result = await anyio.to_thread.run_sync(job, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        on_cancel()
        with lock:
            state["skipped"] = not state["started"]
        if not state["skipped"]:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(finished.wait)
        raise
    assert result is not None  # only a job skipped after its call was cancelled has none
    return result


# -- output models (the published outputSchema of each tool) ----------------------------------


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Open(BaseModel):
    """Outputs of the tool layer: the listed fields, and possibly more (additionalProperties)."""

    model_config = ConfigDict(extra="allow")


class EditOutput(_Open):
    """A landed or proposed edit: the commit (version) holding it, and for a review proposal
    its id and branch; patch adds path, id and matches, apply_patch the files."""

    version: str
    status: str | None = None
    proposal_id: str | None = None
    branch: str | None = None
    path: str | None = None
    id: str | None = None
    files: list[dict[str, Any]] | None = None


class PatchResourceOutput(_Open):
    """patch_resource's result: the spec's path, id and version (a commit id here)."""

    path: str
    id: str | None
    version: str
    proposal_id: str | None = None


class ReadOutput(_Open):
    """Some lines of a file, its version and resource id."""

    path: str
    version: str
    id: str | None = None
    content: str
    start_line: int
    end_line: int
    total_lines: int
    #: The line to pass as ``offset`` to read on (absent at the end of the file).
    next_offset: int | None = None
    #: Lines longer than a result holds, cut (only their start is in ``content``).
    cut_lines: list[int] | None = None


class ProposalsOutput(_Out):
    """Open proposals and sessions, and the session's own closed ones (with their verdicts);
    ``notices``: what happened to the session's work since its previous call."""

    proposals: list[dict[str, Any]]
    notices: list[str] = []


class ProposalOutput(_Out):
    """One proposal: info, diff and stats; ``recorded``: a person's uncommitted work that
    approval would commit with it (see ``ProposalDetail``)."""

    info: dict[str, Any]
    diff: str
    stats: dict[str, int]
    recorded: str = ""
    recorded_files: list[str] = []
    #: Every hunk with its stable id (``PATH:N``), number, lines and verdict.
    hunks: list[dict[str, Any]] = []
    #: The person's own edits of the proposal: where, and the diff from your version.
    amendments: list[dict[str, Any]] = []
    notices: list[str] = []


class ChecksOutput(_Out):
    """The project's checks on your work: ``passed``, the ``tree`` checked, ``cached`` when
    an earlier run's result was reused, and each check's ``runs`` (name, command, exit_code,
    seconds, output tail, timed_out)."""

    tree: str
    commit: str
    passed: bool
    cached: bool = False
    skipped: str = ""
    runs: list[dict[str, Any]] = []
    batch: str = ""


class CheckpointOutput(_Open):
    """A checkpoint: whether it recorded anything, the proposal it made, the files, what it
    left out and where the session's worktree is."""

    recorded: bool
    message: str
    worktree: str
    proposal_id: str = ""
    version: str = ""
    left_out: list[str] = []
    notices: list[str] = []


class RunCommandOutput(_Open):
    """A command run in the session's worktree: its exit status (None: stopped at the
    timeout), its output (head and tail), and the checkpoint after it."""

    exit_code: int | None
    output: str
    worktree: str
    checkpoint: dict[str, Any]
    notices: list[str] = []


OUTPUTS: dict[str, type[BaseModel]] = {
    "patch": EditOutput,
    "apply_patch": EditOutput,
    "patch_resource": PatchResourceOutput,
    "read_file": ReadOutput,
    "list_proposals": ProposalsOutput,
    "show_proposal": ProposalOutput,
    "run_checks": ChecksOutput,
    "checkpoint": CheckpointOutput,
    "run_command": RunCommandOutput,
}


# -- errors to the medium: the one place --------------------------------------------------------


def _refusal(
    code: str, text: str, hint: str | None, notices: tuple[str, ...] = ()
) -> CallToolResult:
    body = text if text.startswith(f"{code}:") else f"{code}: {text}"
    if hint and hint not in body:
        body += f"\n{hint}"
    body = "\n".join([*notices, body])
    return CallToolResult(
        content=[TextContent(type="text", text=body)], is_error=True, _meta={"code": code}
    )


def _to_result(
    tool: str,
    outcome: ToolResult | GitpatchError,
    outputs: Mapping[str, type[BaseModel]] | None = None,
) -> CallToolResult:
    """A tool's result (or a gitpatch error the door met) as an MCP tool result (or a
    JSON-RPC error): the one place results take this door's shape."""
    if isinstance(outcome, GitpatchError):
        outcome = Reply.refusal(outcome)
    if not outcome.ok:
        # the library's Python words as this door's tools and commands (gitpatch.doors.terms);
        # never on a success, whose text may be a file's content
        hint = in_terms(outcome.hint, "mcp") if outcome.hint else outcome.hint
        outcome = dataclasses.replace(outcome, text=in_terms(outcome.text, "mcp"), hint=hint)
        code = outcome.code or "internal_error"
        if code == "invalid_arguments":  # the spec: malformed arguments are protocol errors
            raise MCPError(INVALID_PARAMS, f"invalid_arguments: {outcome.text}", data=outcome.hint)
        if code == "internal_error":  # a stable text with no internals (logged by the tools)
            raise MCPError(INTERNAL_ERROR, f"internal_error: {outcome.text}")
        return _refusal(code, outcome.text, outcome.hint, outcome.notices)
    model = (OUTPUTS if outputs is None else outputs)[tool]
    data = model.model_validate(outcome.data or {}).model_dump(mode="json", exclude_unset=False)
    text = "\n".join([*outcome.notices, outcome.text])
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _invalid_params(tool: str, exc: ValidationError) -> MCPError:
    errors = [
        {"field": ".".join(str(p) for p in err["loc"]) or "(arguments)", "message": err["msg"]}
        for err in exc.errors(include_url=False, include_input=False, include_context=False)
    ]
    fields = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
    return MCPError(INVALID_PARAMS, f"invalid arguments for {tool}: {fields}", data=errors)


#: The arguments ``_ArgumentValidator`` validated for the tool call under way (tool name,
#: model): the handler takes them instead of validating the same arguments again.
_VALIDATED: contextvars.ContextVar[tuple[str, BaseModel] | None] = contextvars.ContextVar(
    "gitpatch_validated", default=None
)


class _ArgumentValidator:
    """Middleware: ``tools/call`` arguments are validated against the tool's model first, so
    a malformed call is JSON-RPC invalid_params (-32602), never an isError result."""

    def __init__(
        self,
        models: Mapping[str, type[BaseModel]],
        on_client: Callable[[str | None], None] | None = None,
    ) -> None:
        self.models = models
        self.on_client = on_client

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if ctx.method == "tools/call" and self.on_client is not None:
            params = ctx.session.client_params
            self.on_client(params.client_info.name if params is not None else None)
        if ctx.method == "tools/call" and isinstance(ctx.params, Mapping):
            name = str(ctx.params.get("name"))
            model = self.models.get(name)
            arguments = ctx.params.get("arguments")
            if model is not None:
                try:
                    parsed = model.model_validate(arguments if arguments is not None else {})
                except ValidationError as exc:
                    raise _invalid_params(name, exc) from None
                token = _VALIDATED.set((name, parsed))  # the handler takes these, as they are
                try:
                    return await call_next(ctx)
                finally:
                    _VALIDATED.reset(token)
        return await call_next(ctx)


# -- the server ----------------------------------------------------------------------------------


def _tool_function(
    tool: tooldefs.ToolDef,
    handler: Handler,
    outputs: Mapping[str, type[BaseModel]],
    offload: bool = False,
    admit: Admit | None = None,
) -> Callable[..., Awaitable[CallToolResult]]:
    """A function the SDK can register: its signature is the argument model's fields, so the
    published inputSchema is the model's. With ``offload`` the handler runs in a worker thread
    (the caller's context variables, such as its access token, go with it); ``admit`` (see
    ``build_server``) decides on the event loop, before a thread is taken."""
    model = tool.args

    def run(arguments: dict[str, Any], validated: BaseModel | None) -> CallToolResult:
        try:
            checkpoint()  # the call's CPU time counts from here, in the thread that runs it
            args = validated if validated is not None else model.model_validate(arguments)
            return _to_result(tool.name, handler(args), outputs)
        except GitpatchError as exc:
            return _to_result(tool.name, exc, outputs)
        except MCPError:
            raise
        except Exception:
            _log.exception("tool %s failed unexpectedly", tool.name)
            raise MCPError(INTERNAL_ERROR, "internal_error: an unexpected error occurred") from None

    # On stdio (one client) the handler runs on the event loop: a thread hop costs more than a
    # typical call there. A service shared by many callers offloads every call, so one slow
    # call (a big patch, a grep over many files) never holds up the others' requests.
    async def call(**arguments: Any) -> CallToolResult:
        found = _VALIDATED.get()
        validated = found[1] if found is not None and found[0] == tool.name else None
        try:
            async with admit(tool.name) if admit is not None else contextlib.nullcontext() as got:
                if offload:
                    stop = got.on_cancel if isinstance(got, Admitted) else None
                    return await _in_thread(run, arguments, validated, on_cancel=stop)
                return run(arguments, validated)
        except GitpatchError as exc:
            return _to_result(tool.name, exc, outputs)

    params = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if info.is_required() else info.default,
            annotation=Annotated[info.annotation, info],
        )
        for name, info in model.model_fields.items()
    ]
    out = Annotated[CallToolResult, outputs[tool.name]]
    call.__signature__ = inspect.Signature(params, return_annotation=out)  # type: ignore[attr-defined]
    call.__annotations__ = {}
    call.__name__ = tool.name
    return call


def build_server(
    toolset: ToolSet,
    *,
    name: str = "gitpatch",
    offload: bool = False,
    admit: Admit | None = None,
    **server_options: Any,
) -> MCPServer:
    """An ``MCPServer`` serving ``toolset`` (any transport); ``offload`` runs each call in a
    worker thread; ``admit(tool)`` is entered around each call on the event loop (it may
    refuse with a gitpatch error); ``server_options`` go to ``MCPServer`` (``token_verifier``,
    ``auth``, ... for HTTP)."""
    from gitpatch import __version__

    tools = tooldefs.TOOLS if toolset.tools is None else toolset.tools
    outputs = OUTPUTS if toolset.outputs is None else toolset.outputs
    describe = tooldefs.description if toolset.describe is None else toolset.describe
    served = [t for t in tools if t.name in toolset.handlers]
    server = MCPServer(
        name,
        version=__version__,
        instructions=toolset.instructions or None,
        middleware=[_ArgumentValidator({t.name: t.args for t in served}, toolset.on_client)],
        **server_options,
    )
    for tool in served:
        server.add_tool(
            _tool_function(tool, toolset.handlers[tool.name], outputs, offload, admit),
            name=tool.name,
            description=describe(tool.name),
            annotations=ToolAnnotations(
                read_only_hint=tool.read_only,
                destructive_hint=tool.name in toolset.destructive,
                idempotent_hint=tool.read_only if tool.idempotent is None else tool.idempotent,
                open_world_hint=False,
            ),
            structured_output=True,
        )
    return server


def budget_admission(cpu_seconds: float | None, wall_seconds: float | None) -> Admit:
    """An ``admit`` that runs each call under a ``Budget`` of its own (``gitpatch.core.budget``):
    a call past it answers ``budget_exceeded`` and changes nothing."""

    @contextlib.asynccontextmanager
    async def admit(tool: str) -> AsyncIterator[object]:
        with Budget(cpu_seconds, wall_seconds).applied() as budget:
            yield budget

    return admit


def workspace_tools(
    path: str,
    mode: str | None = None,
    session: str | None = None,
    max_file_bytes: int | None = None,
    *,
    allow_run: bool = False,
) -> ToolSet:
    """Every tool over the repository at ``path`` (``mode``: auto, review, or the config's;
    ``session``: the session name, else the client's name, else ``agent``); an edit whose
    result is a file over ``max_file_bytes`` (default ``MAX_FILE_BYTES``) is refused;
    ``allow_run`` adds ``run_command``."""
    from gitpatch.doors.mcp._tools import workspace_toolset

    return workspace_toolset(path, mode, session, max_file_bytes, allow_run=allow_run)


def serve_stdio(
    path: str,
    mode: str | None = None,
    session: str | None = None,
    max_file_bytes: int | None = None,
    budget: tuple[float | None, float | None] = (None, None),
    *,
    allow_run: bool = False,
) -> None:
    """Serve the repository at ``path`` over stdio until the client disconnects; ``session``
    names the agent's session (default: the client's name, else ``agent``); see
    ``workspace_tools`` for ``max_file_bytes`` and ``allow_run``; ``budget``: the CPU and wall
    seconds each call may take (none by default: one local client, whose calls are the user's
    own work)."""
    toolset = workspace_tools(path, mode, session, max_file_bytes, allow_run=allow_run)
    limited = budget != (None, None)
    server = build_server(toolset, admit=budget_admission(*budget) if limited else None)
    try:
        server.run("stdio")
    finally:
        for close in toolset.closers:
            close()


def serve_http(
    data: Path,
    credentials: Path,
    host: str,
    port: int,
    *,
    on_change: Callable[..., None] | None = None,
    ready: Callable[[str], None] | None = None,
    allowed: tuple[str, ...] = (),
    workers: int = 1,
    routed: bool = False,
    header_timeout: float = 10.0,
    per_address: int = 256,
) -> None:
    """Serve the resource service for the spaces under ``data`` at ``http://host:port/mcp``
    (and each space at ``/s/<space>/mcp``) until interrupted, in ``workers`` processes (see
    ``_http``); port 0 takes a free one, and ``ready(url)`` is called once the socket listens.
    Request bodies over the largest per-file limit (as base64, plus room for the envelope) get
    HTTP 413 before they are parsed. Host and Origin headers are checked on every bind
    (``allowed`` adds names). ``routed``: one shard of several, only ``/s/<space>/mcp``.
    Connections (``_guard``): ``header_timeout`` seconds to send a request head, at most
    ``per_address`` connections per client address, a reserve of descriptors kept free."""
    from gitpatch.doors.mcp._http import serve

    serve(
        data,
        credentials,
        host,
        port,
        on_change=on_change,
        ready=ready,
        allowed=allowed,
        workers=workers,
        build_server=build_server,
        routed=routed,
        header_timeout=header_timeout,
        per_address=per_address,
    )
