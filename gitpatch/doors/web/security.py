"""The rules that keep a local page able to move branches from being anyone else's tool.

One ASGI middleware in front of every route, static files included:

- ``Host`` must be ``127.0.0.1:PORT`` or ``localhost:PORT`` (a rebound DNS name pointing at
  127.0.0.1 carries its own host name and is refused);
- every request carries the session token: the ``X-Gitpatch-Token`` header (scripts), the
  HttpOnly SameSite=Strict cookie, or once in the URL (``?token=``, GET only), which sets the
  cookie and redirects to the same address without the token;
- a request that is not GET or HEAD must come from the page's own origin (``Origin``, and
  ``Sec-Fetch-Site`` when the browser sends it); when it is authenticated by the cookie it must
  also carry the CSRF token the page was served with (``X-CSRF-Token``).

Anything refused gets HTTP 403 before a route runs, so nothing happens. It does not decide
what a route may do: GET routes simply never change state.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["TOKEN_HEADER", "CSRF_HEADER", "Access", "Guard"]

TOKEN_HEADER = "x-gitpatch-token"
CSRF_HEADER = "x-csrf-token"
_SAFE = frozenset({"GET", "HEAD"})
#: Sent with every response: no framing, no sniffing, no referrer, nothing from elsewhere.
_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
)


@dataclass(frozen=True)
class Access:
    """The secrets and the addresses of one running page."""

    token: str
    csrf: str
    hosts: frozenset[str]
    cookie: str

    @classmethod
    def new(cls, port: int, hosts: Iterable[str] | None = None) -> Access:
        """Fresh random tokens for a page served on ``127.0.0.1:port``.

        ``hosts`` replaces the allowed ``Host`` values (tests use Starlette's ``testserver``).
        """
        allowed = frozenset(hosts) if hosts is not None else loopback_hosts(port)
        return cls(
            token=secrets.token_urlsafe(32),
            csrf=secrets.token_urlsafe(32),
            hosts=allowed,
            # Cookies ignore ports: two pages on two ports must not overwrite each other's.
            cookie=f"gitpatch_{port}",
        )

    @property
    def origins(self) -> frozenset[str]:
        """The ``Origin`` values the page's own requests carry."""
        return frozenset(f"http://{host}" for host in self.hosts)


def loopback_hosts(port: int) -> frozenset[str]:
    """The ``Host`` header values a browser sends for the page on ``port``."""
    return frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})


def _same(given: str | None, secret: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), secret.encode())


class Guard:
    """ASGI middleware enforcing the rules above, then passing the request on."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse, redirect (token in the URL) or serve with the security headers."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await _forbidden(scope, send, refusal)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if "token" in query and scope["method"] in _SAFE:
            await self._redirect(scope, send, query)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_HEADERS]}
            await send(message)

        await self.app(scope, receive, secured)

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> str | None:
        """Why the request is refused, or None."""
        access = self.access
        if headers.get("host") not in access.hosts:
            return "this page answers only at " + " or ".join(sorted(access.hosts))
        by_header = _same(headers.get(TOKEN_HEADER), access.token)
        by_cookie = _same(_cookie(headers, access.cookie), access.token)
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        by_url = scope["method"] in _SAFE and _same(query.get("token"), access.token)
        if not (by_header or by_cookie or by_url):
            return "the session token is missing or wrong: open the address gitpatch web printed"
        if scope["method"] in _SAFE:
            return None
        origin = headers.get("origin")
        if origin is not None and origin not in access.origins:
            return f"requests from {origin} are refused"
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            return "cross-site requests are refused"
        if by_header:
            return None  # no other site can send a custom header without a CORS preflight
        if origin is None:
            return "a browser request that changes something must say where it comes from"
        if not _same(headers.get(CSRF_HEADER), access.csrf):
            return "the CSRF token is missing or wrong: reload the page"
        return None

    async def _redirect(self, scope: Scope, send: Send, query: dict[str, str]) -> None:
        """Trade the token in the URL for the cookie, and drop it from the address bar."""
        rest = {k: v for k, v in query.items() if k != "token"}
        location = scope["path"] + (f"?{urlencode(rest)}" if rest else "")
        cookie = (
            f"{self.access.cookie}={self.access.token}; Path=/; HttpOnly; SameSite=Strict"
        ).encode("latin-1")
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [(b"location", location.encode()), (b"set-cookie", cookie), *_HEADERS],
            }
        )
        await send({"type": "http.response.body", "body": b""})


def _cookie(headers: dict[str, str], name: str) -> str | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except CookieError:  # a malformed Cookie header is the same as none
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


async def _forbidden(scope: Scope, send: Send, reason: str) -> None:
    body = {"error": {"code": "forbidden", "message": reason}}
    if scope["path"].startswith("/api/"):
        payload, kind = json.dumps(body).encode(), b"application/json"
    else:
        payload, kind = f"403 Forbidden: {reason}\n".encode(), b"text/plain; charset=utf-8"
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [(b"content-type", kind), *_HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": payload})
