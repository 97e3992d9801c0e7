"""``gitpatch serve --http``: the resource tools over MCP streamable HTTP with bearer tokens.

``gitpatch.doors.mcp.serve_http`` runs it: the server is ``build_server`` (one place for
results, -32602 and internal errors) given the service's six tools, a ``TokenVerifier``
over the credentials file and ``AuthSettings`` requiring the ``read`` scope: no token or an
unknown one is HTTP 401, a token without ``read`` 403. Each tool call takes the caller's
credential from the verified token (``get_access_token``), once, and hands it to
``gitpatch.doors.hosted.ResourceService``. Request bodies above the largest per-file limit
(base64-sized, plus room for the envelope) are refused with HTTP 413 before they are parsed.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from importlib import resources
from typing import Any, Literal

import anyio
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp_types import INVALID_REQUEST
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gitpatch.doors.hosted import Credential, CredentialFile, ResourceService
from gitpatch.doors.hosted.access import ROUTED_SPACE, routed_space
from gitpatch.doors.hosted.calls import CANCELLED, CallGate, Request
from gitpatch.doors.hosted.limits import MAX_EDITS_PER_CALL
from gitpatch.doors.hosted.listen import url_host
from gitpatch.doors.hosted.quota import Quotas
from gitpatch.doors.mcp._guard import CLIENT_GONE
from gitpatch.doors.mcp._reply import Admitted, Handler, ToolSet
from gitpatch.errors import CallLimitReached, InternalError
from gitpatch.formats.patch_resource import ResourceEdit
from gitpatch.tools import ToolResult
from gitpatch.tools import definitions as tooldefs

__all__ = [
    "BodyLimit",
    "ClientWatch",
    "CredentialVerifier",
    "SessionLimit",
    "SessionIdFilter",
    "SpaceRoute",
    "auth_options",
    "call_admission",
    "service_toolset",
]

_log = logging.getLogger("gitpatch.doors.hosted")


# -- arguments -----------------------------------------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_PATH = "The resource's path in the space (a team/<name>/ prefix names a team)."
_TEAM = "The team that owns it. Omit to target the represented user's space."
_VERSION = "The version you last read; a change since then is a resource_conflict."


class PatchResourceArgs(_Args):
    """Arguments of patch_resource (patch-resource.md)."""

    path: str = Field(description=_PATH)
    edits: list[ResourceEdit] = Field(
        description=f"The edits to apply, in order (at most {MAX_EDITS_PER_CALL}).",
        max_length=MAX_EDITS_PER_CALL,
    )
    team: str | None = Field(default=None, description=_TEAM)
    expected_version: int | None = Field(default=None, ge=1, description=_VERSION)


class ReadResourceArgs(_Args):
    """Arguments of read_resource."""

    path: str = Field(description=_PATH)
    team: str | None = Field(default=None, description=_TEAM)


class CreateResourceArgs(_Args):
    """Arguments of create_resource."""

    path: str = Field(description=_PATH)
    content: str = Field(description="The whole content (text, or base64 with encoding).")
    team: str | None = Field(default=None, description=_TEAM)
    encoding: Literal["utf-8", "base64"] = Field(
        default="utf-8", description='"base64" for binary content.'
    )


class UpdateResourceArgs(CreateResourceArgs):
    """Arguments of update_resource."""

    expected_version: int | None = Field(default=None, ge=1, description=_VERSION)


class GrepResourceArgs(_Args):
    """Arguments of grep_resource."""

    pattern: str = Field(
        description="A regular expression (RE2 syntax: no backreferences or lookaround), "
        "matched per line."
    )
    path: str | None = Field(default=None, description="A resource or a folder to search.")
    team: str | None = Field(default=None, description=_TEAM)


class ListResourcesArgs(_Args):
    """Arguments of list_resources."""

    prefix: str | None = Field(default=None, description="Only paths below this folder.")
    team: str | None = Field(default=None, description=_TEAM)


# -- outputs -------------------------------------------------------------------------------------


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


class ChangeOutput(_Out):
    """A change: the resource, its id, the space's new version and the commit it names; in a
    review space the proposal waiting for a person."""

    path: str
    id: str | None = None
    version: int
    commit: str | None = None
    proposal_id: str | None = None


class ReadOutput(_Out):
    """A resource's content (utf-8 text, or base64), version, commit and id."""

    path: str
    id: str
    version: int
    commit: str | None = None
    encoding: Literal["utf-8", "base64"]
    content: str
    size: int


class GrepOutput(_Out):
    """Matching lines (path, line number, text), all at one version."""

    matches: list[dict[str, Any]]
    truncated: bool
    version: int
    commit: str | None = None


class ListOutput(_Out):
    """The resource paths of the space at one version."""

    resources: list[str]
    version: int
    commit: str | None = None


TOOLS: tuple[tooldefs.ToolDef, ...] = (
    tooldefs.ToolDef("patch_resource", PatchResourceArgs, read_only=False),
    tooldefs.ToolDef("read_resource", ReadResourceArgs, read_only=True),
    tooldefs.ToolDef("create_resource", CreateResourceArgs, read_only=False),
    tooldefs.ToolDef("update_resource", UpdateResourceArgs, read_only=False),
    tooldefs.ToolDef("grep_resource", GrepResourceArgs, read_only=True),
    tooldefs.ToolDef("list_resources", ListResourcesArgs, read_only=True),
)
OUTPUTS: dict[str, type[BaseModel]] = {
    "patch_resource": ChangeOutput,
    "read_resource": ReadOutput,
    "create_resource": ChangeOutput,
    "update_resource": ChangeOutput,
    "grep_resource": GrepOutput,
    "list_resources": ListOutput,
}


def describe(name: str) -> str:
    """The checked-in description of service tool ``name`` (gitpatch/tools/docs/service/)."""
    docs = resources.files("gitpatch.tools") / "docs" / "service" / f"{name}.md"
    return docs.read_text(encoding="utf-8")


# -- tokens --------------------------------------------------------------------------------------


class CredentialToken(AccessToken):
    """A verified token with the credential it stood for when the request arrived."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    credential: Credential


class CredentialVerifier:
    """The SDK's ``TokenVerifier`` over a credentials file (re-read when it changes)."""

    def __init__(self, credentials: CredentialFile) -> None:
        self.credentials = credentials

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's credential as an ``AccessToken``, or None (HTTP 401)."""
        cred = self.credentials.lookup(token)
        if cred is None:
            return None
        return CredentialToken(
            token=token,
            client_id=cred.fingerprint,
            scopes=list(cred.scopes),
            subject=cred.user or cred.organization,
            credential=cred,
        )


def _caller() -> Credential:
    token = get_access_token()
    if not isinstance(token, CredentialToken):  # the auth middleware guarantees one
        raise InternalError("no verified credential for this call")
    return token.credential


# -- the tool set --------------------------------------------------------------------------------


def _handler(call: Callable[[Credential, Any], ToolResult]) -> Handler:
    def handle(args: BaseModel) -> ToolResult:
        result = call(_caller(), args)
        if result.ok or result.hint is not None:
            return result
        # the hint apart too: an invalid_arguments refusal carries it as the JSON-RPC data
        return dataclasses.replace(result, hint=result.data.get("hint"))

    return handle


def service_toolset(service: ResourceService) -> ToolSet:
    """The six resource tools, each for the calling credential."""
    s = service
    handlers: dict[str, Handler] = {
        "patch_resource": _handler(
            lambda c, a: s.patch_resource(
                c,
                a.path,
                [e.model_dump(exclude_none=True) for e in a.edits],
                a.team,
                a.expected_version,
            )
        ),
        "read_resource": _handler(lambda c, a: s.read_resource(c, a.path, a.team)),
        "create_resource": _handler(
            lambda c, a: s.create_resource(c, a.path, a.content, a.team, a.encoding)
        ),
        "update_resource": _handler(
            lambda c, a: s.update_resource(
                c, a.path, a.content, a.expected_version, a.team, a.encoding
            )
        ),
        "grep_resource": _handler(lambda c, a: s.grep_resource(c, a.pattern, a.path, a.team)),
        "list_resources": _handler(lambda c, a: s.list_resources(c, a.prefix, a.team)),
    }
    instructions = (
        "Resources live in your personal space or a team's space (set team, or prefix the path "
        "with team/<name>/). Read with read_resource / grep_resource / list_resources; change "
        "text in place with patch_resource, or whole content with create_resource / "
        "update_resource. Pass the version you read as expected_version to refuse a change "
        "made meanwhile."
    )
    return ToolSet(handlers, instructions, tools=TOOLS, outputs=OUTPUTS, describe=describe)


def auth_options(credentials: CredentialFile, host: str, port: int) -> dict[str, Any]:
    """``MCPServer`` options for bearer tokens from ``credentials`` requiring ``read``."""
    url = f"http://{url_host(host)}:{port}"
    auth = AuthSettings(
        issuer_url=url,  # type: ignore[arg-type]
        resource_server_url=f"{url}/mcp",  # type: ignore[arg-type]
        required_scopes=["read"],
        validate_token_resource=False,
    )
    return {"token_verifier": CredentialVerifier(credentials), "auth": auth}


# -- per-credential limits -----------------------------------------------------------------------


def call_admission(
    quotas: Quotas, gate: CallGate
) -> Callable[[str], AbstractAsyncContextManager[object]]:
    """``build_server``'s ``admit``: each tool call counts against its credential's allowance
    and concurrent-call limit (``Quotas.call``), decided before a worker thread is taken, then
    runs under its credential's budget, a heavy call in one of its credential's heavy-call
    slots, stopped if its client goes away (``CallGate.call``, ``ClientWatch``)."""

    @contextlib.asynccontextmanager
    async def admit(tool: str) -> AsyncIterator[object]:
        cred = _caller()
        with quotas.call(cred.fingerprint):
            request = _REQUEST.get()
            async with gate.call(
                cred.fingerprint, cred.cpu_seconds, cred.wall_seconds, request
            ) as budget:
                yield Admitted(lambda: budget.stop(CANCELLED))

    return admit


_REQUEST: contextvars.ContextVar[Request | None] = contextvars.ContextVar(
    "gitpatch_request", default=None
)


class ClientWatch:
    """ASGI middleware: a POST whose client goes away (closes the connection) before it is
    answered stops the calls it carries (``Request.went_away``): they end at their next
    checkpoint, their slots freed, instead of running on for nobody. The request is known to
    its calls through a context variable, which the SDK hands on with each message. The
    connection's loss is told by the server's protocol (``_guard.CLIENT_GONE``), or by the
    body's ``http.disconnect`` when it comes while the body is read."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        request = Request()
        token = _REQUEST.set(request)
        scope[CLIENT_GONE] = request.went_away

        async def inner() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect":
                request.went_away()
            return message

        try:
            await self.app(scope, inner, send)
        finally:
            _REQUEST.reset(token)


def _http_error(status: int, message: str) -> JSONResponse:
    """A JSON-RPC error without request id, as the SDK answers refused HTTP requests."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}
    return JSONResponse(body, status_code=status)


class SessionLimit:
    """ASGI middleware before the SDK's app: a credential may hold at most its limit of open
    MCP sessions (HTTP 429 with a JSON-RPC error past it). It watches which session each
    opening request created, which requests use it, and when the client closes it (DELETE)
    or the server no longer knows it (404); idle sessions expire in ``Quotas`` at the same
    age the SDK closes them. Requests without a known token pass through (the SDK answers
    401)."""

    def __init__(self, app: ASGIApp, quotas: Quotas, credentials: CredentialFile) -> None:
        self.app, self.quotas, self.credentials = app, quotas, credentials

    def _owner(self, scope: Scope) -> str | None:
        cred = bearer_credential(self.credentials, scope)
        return None if cred is None else cred.fingerprint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        owner = self._owner(scope) if scope["type"] == "http" else None
        if owner is None:
            await self.app(scope, receive, send)
            return
        session = Headers(scope=scope).get("mcp-session-id")
        if session is None:
            await self._open(owner, scope, receive, send)
            return
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        with self.quotas.using(session):
            await self.app(scope, receive, watch)
        if status == 404 or (scope["method"] == "DELETE" and status < 400):
            self.quotas.closed(session)

    async def _open(self, owner: str, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            key = self.quotas.reserve(owner)
        except CallLimitReached as exc:
            await _http_error(429, f"{exc.code}: {exc.message}")(scope, receive, send)
            return
        created: str | None = None

        async def watch(message: Message) -> None:
            nonlocal created
            if message["type"] == "http.response.start" and message["status"] < 400:
                created = Headers(raw=message["headers"]).get("mcp-session-id")
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if created is not None:
                self.quotas.opened(key, created)
            else:
                self.quotas.closed(key)


class SpaceRoute:
    """ASGI middleware, first in line: ``/s/users/<user>/mcp`` and ``/s/teams/<team>/mcp`` are
    the service's ``/mcp`` for one space, which every call of the request must address
    (``ROUTED_SPACE``, checked by ``access.locate``: ``wrong_space`` otherwise). A router that
    hashes the URL path sends every request for a space to one host, personal and team spaces
    alike. With ``required`` (one shard of several: ``serve --routed``) plain ``/mcp`` is HTTP
    404, so a client that skipped the router's map cannot create a space on the wrong host."""

    def __init__(self, app: ASGIApp, required: bool) -> None:
        self.app, self.required = app, required

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        space = routed_space(scope["path"]) if scope["type"] == "http" else None
        if space is None:
            if self.required and scope["type"] == "http" and scope["path"].rstrip("/") == "/mcp":
                message = (
                    "wrong_space: this host keeps a shard of the spaces; use the URL of one "
                    "space, /s/users/<user>/mcp or /s/teams/<team>/mcp"
                )
                await _http_error(404, message)(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        token = ROUTED_SPACE.set(space)
        try:
            await self.app({**scope, "path": "/mcp", "raw_path": b"/mcp"}, receive, send)
        finally:
            ROUTED_SPACE.reset(token)


#: Where a request's scope keeps its bearer token's credential once looked up.
_CREDENTIAL = "gitpatch.credential"


def bearer_credential(credentials: CredentialFile, scope: Scope) -> Credential | None:
    """The credential of the request's bearer token, or None (no token, or an unknown one);
    looked up once per request (kept in its scope for the next middleware)."""
    if _CREDENTIAL in scope:
        found: Credential | None = scope[_CREDENTIAL]
        return found
    auth = Headers(scope=scope).get("authorization", "")
    scheme, _, token = auth.partition(" ")
    found = None
    if scheme.lower() == "bearer" and token.strip():
        found = credentials.lookup(token.strip())
    scope[_CREDENTIAL] = found
    return found


class BodyLimit:
    """ASGI middleware: a request body over ``limit()`` bytes is HTTP 413 before anything
    parses it. ``limit`` is asked per request, so raising ``max_file_bytes`` in spaces.toml
    raises the cap without a restart. The body is read here (at most the limit) and handed on,
    only for a known bearer token: any other request goes on unread (the SDK answers 401), so
    a client without credentials cannot hold a connection open by sending a slow body; a body
    that sends nothing for ``idle`` seconds is HTTP 408."""

    def __init__(
        self, app: ASGIApp, limit: Callable[[], int], credentials: CredentialFile, idle: float
    ) -> None:
        self.app, self.limit, self.credentials, self.idle = app, limit, credentials, idle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in ("POST", "PUT")
            or bearer_credential(self.credentials, scope) is None
        ):
            await self.app(scope, receive, send)
            return
        limit = self.limit()
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await self._refuse(limit, scope, receive, send)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = None
            with anyio.move_on_after(self.idle):
                message = await receive()
            if message is None:
                await _http_error(408, "the request body stalled")(scope, receive, send)
                return
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = bool(message.get("more_body"))
            if size > limit:
                await self._refuse(limit, scope, receive, send)
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    @staticmethod
    async def _refuse(limit: int, scope: Scope, receive: Receive, send: Send) -> None:
        message = (
            f"payload_too_large: the request body is over this service's limit of {limit} bytes"
        )
        body = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": INVALID_REQUEST, "message": message},
        }
        await JSONResponse(body, status_code=413)(scope, receive, send)


_LONG_ID = re.compile(r"\b[0-9a-f]{32,}\b")


class SessionIdFilter(logging.Filter):
    """Shortens every long hex id in a log record (MCP session ids, token hashes) to its first
    8 digits: a session id in a log is a bearer of that session for whoever reads the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record's message; never drops a record."""
        message = record.getMessage()
        shortened = _LONG_ID.sub(lambda m: m.group(0)[:8] + "...", message)
        if shortened != message:
            record.msg, record.args = shortened, None
        return True
