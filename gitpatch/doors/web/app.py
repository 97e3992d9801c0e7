"""The review page as a Starlette application: HTML pages, a small JSON API, static files.

``create_app`` builds it for one repository and one ``Access`` (tokens and allowed hosts);
``gitpatch.doors.web.security.Guard`` wraps every route. Every request opens its own review-mode
``Workspace`` (one pygit2 Repository per thread), and every change goes through the review API:
``approve``, ``reject`` (whole or by hunk), ``amend``, ``comment`` and ``undo``.
``GitpatchError`` becomes an HTTP answer in one place, ``_failure``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from gitpatch.doors.web import views
from gitpatch.doors.web.security import Access, Guard
from gitpatch.errors import GitpatchError, InvalidArguments
from gitpatch.porcelain.opening import open_workspace
from gitpatch.porcelain.workspace import Workspace
from gitpatch.workspace.results import ProposalResult

__all__ = ["STATUSES", "create_app"]

#: The status filters the proposals page offers.
STATUSES = (
    "all",
    "open",
    "proposed",
    "applied",
    "approved",
    "rejected",
    "needs_revision",
    "checks_failed",
    "undone",
)
#: HTTP status per error code; anything else is a 400 (bad input) or, for internal errors, 500.
_HTTP = {
    "proposal_not_found": 404,
    "proposal_closed": 409,
    "proposal_rejected": 409,
    "merge_conflict": 409,
    "checks_failed": 409,
    "dirty_worktree": 409,
    "concurrent_update": 409,
    "resource_conflict": 409,
    "internal_error": 500,
    "repository_error": 500,
}
_HERE = Path(__file__).parent


def create_app(repo: str | Path, access: Access) -> Starlette:
    """The review page for the repository at ``repo``, guarded by ``access``.

    The repository is opened as every front end opens it (``gitpatch.porcelain.opening``): protected
    branches from git config, else ``.gitpatch.toml``, else main and master.
    """
    root = str(Path(repo).resolve())
    open_workspace(root, "review")  # fail now, not on the first request
    env = Environment(
        loader=PackageLoader("gitpatch.doors.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["age"] = _age
    env.filters["short"] = lambda ref: str(ref).removeprefix("refs/heads/")
    site = _Site(root, access, env)
    routes = [
        Route("/", site.index),
        Route("/fragment/proposals", site.fragment),
        Route("/p/{pid}", site.proposal),
        Route("/log", site.log),
        Route("/api/proposals", site.api_list),
        Route("/api/stamp", site.api_stamp),
        Route("/api/proposals/{pid}", site.api_show),
        Route("/api/proposals/{pid}/approve", site.api_approve, methods=["POST"]),
        Route("/api/proposals/{pid}/reject", site.api_reject, methods=["POST"]),
        Route("/api/proposals/{pid}/comment", site.api_comment, methods=["POST"]),
        Route("/api/proposals/{pid}/amend", site.api_amend, methods=["POST"]),
        Route("/api/sessions", site.api_sessions),
        Route("/api/sessions/{name}/approve", site.api_session_approve, methods=["POST"]),
        Route("/api/queue", site.api_queue, methods=["POST"]),
        Route("/api/sessions/{name}/reject", site.api_session_reject, methods=["POST"]),
        Route("/api/log", site.api_log),
        Route("/api/undo", site.api_undo, methods=["POST"]),
        Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(Guard, access=access)],
        exception_handlers={GitpatchError: site.failure},
    )


class _Site:
    """The route handlers, sharing the repository path, the access secrets and the templates."""

    def __init__(self, root: str, access: Access, env: Environment) -> None:
        self.root = root
        self.access = access
        self.env = env

    def _ws(self) -> Workspace:
        return open_workspace(self.root, "review")

    def _page(self, name: str, ws: Workspace, code: int = 200, **context: Any) -> HTMLResponse:
        html = self.env.get_template(name).render(
            csrf=self.access.csrf,
            repo=Path(self.root).name,
            branch=ws.branch.removeprefix("refs/heads/"),
            identity=views.identity(ws),
            **context,
        )
        return HTMLResponse(html, status_code=code)

    # -- pages -------------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        """The proposals page: every proposal and session, open ones first."""
        status = _status_filter(request)

        def build() -> Response:
            ws = self._ws()
            stamp = views.stamp(ws)  # first: a change made while the rows are read shows later
            rows = views.rows(ws, status)
            stacks = views.stacks(rows if status in ("all", "open") else views.rows(ws, "open"))
            return self._page(
                "index.html",
                ws,
                rows=rows,
                stacks=stacks,
                status=status,
                statuses=STATUSES,
                stamp=stamp,
            )

        return await run_in_threadpool(build)

    async def fragment(self, request: Request) -> Response:
        """Just the table rows, for the page's own updates."""
        status = _status_filter(request)

        def build() -> Response:
            rows = views.rows(self._ws(), status)
            return HTMLResponse(self.env.get_template("_rows.html").render(rows=rows))

        return await run_in_threadpool(build)

    async def proposal(self, request: Request) -> Response:
        """One proposal: message, note, diffs, recorded local work, Approve and Reject."""
        pid = request.path_params["pid"]

        def build() -> Response:
            ws = self._ws()
            stamp = views.stamp(ws)  # first: a verdict given while the page is built shows later
            return self._page("proposal.html", ws, d=views.detail(ws, pid), stamp=stamp)

        return await run_in_threadpool(build)

    async def log(self, request: Request) -> Response:
        """The gitpatch commits on the checked-out branch, with Undo."""

        def build() -> Response:
            ws = self._ws()
            return self._page("log.html", ws, entries=ws.log())

        return await run_in_threadpool(build)

    async def failure(self, request: Request, exc: Exception) -> Response:
        """The one place a ``GitpatchError`` becomes an HTTP answer (JSON or a page)."""
        assert isinstance(exc, GitpatchError)
        code = _HTTP.get(exc.code, 400)
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": exc.to_dict()}, status_code=code)
        return await run_in_threadpool(
            lambda: self._page("error.html", self._ws(), code=code, error=exc)
        )

    # -- the JSON API ------------------------------------------------------------------------

    async def api_list(self, request: Request) -> Response:
        """``GET /api/proposals``: the rows of the proposals page."""
        status = _status_filter(request)
        rows = await run_in_threadpool(lambda: views.rows(self._ws(), status))
        return JSONResponse({"proposals": [row.as_json() for row in rows]})

    async def api_stamp(self, request: Request) -> Response:
        """``GET /api/stamp``: a short value that changes whenever the list may have."""
        value = await run_in_threadpool(lambda: views.stamp(self._ws()))
        return JSONResponse({"stamp": value})

    async def api_show(self, request: Request) -> Response:
        """``GET /api/proposals/{id}``: info, diff, stats, note, records, what approval does."""
        pid = request.path_params["pid"]
        found = await run_in_threadpool(lambda: views.detail(self._ws(), pid))
        return JSONResponse(found.as_json())

    async def api_log(self, request: Request) -> Response:
        """``GET /api/log``: the gitpatch commits on the checked-out branch."""
        entries = await run_in_threadpool(lambda: self._ws().log())
        return JSONResponse({"log": [entry.model_dump() for entry in entries]})

    async def api_approve(self, request: Request) -> Response:
        """``POST /api/proposals/{id}/approve`` with ``{"by": name}``."""
        pid, body = request.path_params["pid"], await _body(request)
        by, skip, hunks = _text(body, "by"), _skip(body), _text(body, "hunks") or None
        return await self._act(lambda ws: ws.approve(pid, by, skip_checks=skip, hunks=hunks))

    async def api_reject(self, request: Request) -> Response:
        """``POST /api/proposals/{id}/reject`` with ``{"by": name, "reason": text}`` (and
        ``"hunks": "2"`` to refuse only those)."""
        pid, body = request.path_params["pid"], await _body(request)
        by, reason, hunks = _text(body, "by"), _text(body, "reason"), _text(body, "hunks") or None
        if not reason.strip():
            raise InvalidArguments(
                "a rejection needs a reason",
                hint='Send {"by": "Name", "reason": "why the change is wrong"}.',
            )
        return await self._act(lambda ws: ws.reject(pid, by, reason, hunks=hunks))

    async def api_amend(self, request: Request) -> Response:
        """``POST /api/proposals/{id}/amend`` with ``{"by": name, "hunk": "a.py:2", "text":
        lines}`` (an edit in place of one hunk) or ``{"by": name, "patch": diff}``."""
        pid, body = request.path_params["pid"], await _body(request)
        by, patch = _text(body, "by"), _text(body, "patch") or None
        hunk, text = _text(body, "hunk") or None, body.get("text")
        if patch is not None:
            return await self._act(lambda ws: ws.amend(pid, by, patch=patch))
        if not isinstance(text, str):
            raise InvalidArguments(
                "an edit needs the hunk and its new text",
                hint='Send {"by": "Name", "hunk": "a.py:2", "text": "the new lines"}.',
            )
        return await self._act(lambda ws: ws.amend(pid, by, hunk=hunk or "", text=text))

    async def api_comment(self, request: Request) -> Response:
        """``POST /api/proposals/{id}/comment`` with ``{"by": name, "text": words, "kind":
        "comment" | "request_changes"}``: the agent reads it in its next tool result."""
        pid, body = request.path_params["pid"], await _body(request)
        by, text = _text(body, "by"), _text(body, "text")
        kind = _text(body, "kind") or "comment"
        at = _text(body, "at") or None

        def run() -> dict[str, Any]:
            return {"comment": self._ws().comment(pid, by, text, kind=kind, at=at), "id": pid}

        return JSONResponse(await run_in_threadpool(run))

    async def api_sessions(self, request: Request) -> Response:
        """``GET /api/sessions``: each review-mode session's open proposals, bottom first."""
        found = await run_in_threadpool(lambda: views.stacks(views.rows(self._ws(), "open")))
        return JSONResponse({"sessions": [group.as_json() for group in found]})

    async def api_session_approve(self, request: Request) -> Response:
        """``POST /api/sessions/{name}/approve`` with ``{"by": name, "squash": bool}``: lands
        every open proposal of the session (one commit with ``squash``)."""
        name, body = request.path_params["name"], await _body(request)
        by, squash, skip = _text(body, "by"), bool(body.get("squash", False)), _skip(body)
        return await self._act(
            lambda ws: ws.approve(f"session/{name}", by, squash=squash, skip_checks=skip)
        )

    async def api_queue(self, request: Request) -> Response:
        """``POST /api/queue`` with ``{"by": name, "ids": [...], "skip_checks": reason?}``:
        approve them in order, each on the one before and checked on that result; each
        entry's outcome (approved, checks_failed, needs_revision, refused)."""
        body = await _body(request)
        by, skip, ids = _text(body, "by"), _skip(body), body.get("ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise InvalidArguments(
                "ids must be a list of proposal ids or session names",
                hint='Send {"by": "Name", "ids": ["ID1", "ID2"]}.',
            )

        def run() -> dict[str, Any]:
            ws = self._ws()
            done = ws.approve(ids, by, skip_checks=skip)
            target = next((d.result.target for d in done if d.result is not None), ws.target)
            landed = [d.model_dump(mode="json") for d in done]
            return {"queue": landed, "head": views.head(ws, target)}

        return JSONResponse(await run_in_threadpool(run))

    async def api_session_reject(self, request: Request) -> Response:
        """``POST /api/sessions/{name}/reject`` with ``{"by": name, "reason": text}``."""
        name, body = request.path_params["name"], await _body(request)
        by, reason = _text(body, "by"), _text(body, "reason")
        if not reason.strip():
            raise InvalidArguments(
                "a rejection needs a reason", hint='Send {"by": "Name", "reason": "why"}.'
            )
        return await self._act(lambda ws: ws.reject(f"session/{name}", by, reason))

    async def api_undo(self, request: Request) -> Response:
        """``POST /api/undo``: revert the newest gitpatch commit on the checked-out branch."""
        return await self._act(lambda ws: ws.undo())

    async def _act(self, step: Callable[[Workspace], ProposalResult]) -> Response:
        """Run one review step and answer with its result and the branch's new position."""

        def run() -> dict[str, Any]:
            ws = self._ws()
            result = step(ws)
            return {
                "result": result.model_dump(),
                "head": views.head(ws, result.target),
                "notices": ws.plumbing.set_aside(),  # a person's save its land set aside
            }

        return JSONResponse(await run_in_threadpool(run))


def _status_filter(request: Request) -> str:
    status = request.query_params.get("status", "all")
    if status not in STATUSES:
        raise InvalidArguments(
            f"unknown status filter {status!r}", hint=f"Use one of: {', '.join(STATUSES)}."
        )
    return status


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        body = json.loads(raw or b"{}")
    except ValueError as exc:
        raise InvalidArguments(
            "the request body is not JSON", hint='Send {"by": "Name"} as application/json.'
        ) from exc
    if not isinstance(body, dict):
        raise InvalidArguments("the request body must be a JSON object", hint='{"by": "Name"}')
    return body


def _skip(body: dict[str, Any]) -> str | None:
    """``skip_checks``: the person's reason to land without running the checks, or None."""
    return None if body.get("skip_checks") is None else _text(body, "skip_checks")


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key, "")
    if not isinstance(value, str):
        raise InvalidArguments(f"{key} must be a string", hint=f'Send "{key}": "text".')
    return value


def _age(seconds: float) -> str:
    """``42 s``, ``5 min``, ``3 h`` or ``2 d``."""
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{int(seconds // size)} {unit}"
    return f"{int(seconds)} s"
