"""The ``--http`` address of ``serve``: loopback unless told otherwise."""

from __future__ import annotations

from gitpatch.errors import InvalidArguments

__all__ = ["allowed_hosts", "parse_listen", "url_host"]

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_WILDCARDS = ("0.0.0.0", "::", "")


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6, ``PORT`` alone for 127.0.0.1) as a pair."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or int(port) > 65535:
        raise InvalidArguments(
            f"--http {text!r} is not HOST:PORT",
            hint="Example: --http 127.0.0.1:8765 (port 0 picks a free one).",
        )
    return host, int(port)


def url_host(host: str) -> str:
    """``host`` as it appears in a URL or a Host header (IPv6 in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def allowed_hosts(host: str, extra: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """The Host and Origin values the service accepts when bound to ``host``: the loopback
    names, the bound address itself (unless it is a wildcard), and each ``--allowed-host``
    (a name, or name:port). Checking them on every bind, not only on loopback, is what
    stops a DNS-rebinding page from reaching the service through a browser."""
    names = [*_LOOPBACK_NAMES]
    if host not in _WILDCARDS:
        names.append(url_host(host))
    hosts: list[str] = []
    origins: list[str] = []
    for name in [*names, *extra]:
        with_port = name.rpartition(":")[2].isdigit() and not name.endswith("]")
        hosts += [name] if with_port else [name, f"{name}:*"]
        for scheme in ("http", "https"):
            origins += (
                [f"{scheme}://{name}"]
                if with_port
                else [
                    f"{scheme}://{name}",
                    f"{scheme}://{name}:*",
                ]
            )
    return hosts, origins
