"""The ``--http`` address of ``serve``: loopback unless told otherwise."""

from __future__ import annotations

from gitpatch.errors import InvalidArguments

__all__ = ["parse_listen"]


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
