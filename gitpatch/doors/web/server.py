"""``serve``: run the review page on 127.0.0.1 until interrupted.

The socket is bound before the application is built, so the tokens and the allowed ``Host``
values know the real port even when the system picks it (``port=0``). The page's address, with
its token, is the first line written to stdout, so a script (or a test) can read it and go.
"""

from __future__ import annotations

import os
import socket
import sys
import webbrowser
from pathlib import Path
from typing import TextIO

import uvicorn

from gitpatch.doors.web.app import create_app
from gitpatch.doors.web.security import Access

__all__ = ["HOST", "serve"]

#: The only address the page is served on.
HOST = "127.0.0.1"


def serve(
    repo_path: str | Path,
    *,
    port: int = 0,
    open_browser: bool = True,
    out: TextIO | None = None,
    log_level: str = "warning",
) -> None:
    """Serve the review page for ``repo_path`` on ``127.0.0.1:port`` (0: any free port).

    Prints ``http://127.0.0.1:PORT/?token=...`` as the first line of ``out`` (stdout), opens
    it in a browser unless ``open_browser`` is false, and returns when the server stops
    (Ctrl-C or SIGTERM).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
        sock.listen(128)
        bound = int(sock.getsockname()[1])
        access = Access.new(bound)
        app = create_app(repo_path, access)
        url = f"http://{HOST}:{bound}/?token={access.token}"
        stream = out if out is not None else sys.stdout
        stream.write(url + "\n")
        stream.flush()
        if open_browser:
            _open_browser(url)
        config = uvicorn.Config(app, log_level=log_level, access_log=False, lifespan="off")
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()


def _open_browser(url: str) -> None:
    """Open ``url`` in a graphical browser; without a display, say so on stderr instead.

    Python's ``webbrowser`` falls back to console browsers (lynx, w3m), which would take the
    terminal the server runs in.
    """
    graphical = sys.platform in ("darwin", "win32") or any(
        os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY")
    )
    if not (graphical and webbrowser.open(url)):
        print("open the address above in a browser to review", file=sys.stderr)
