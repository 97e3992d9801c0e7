"""``gitpatch web``: a local review page where people read, approve and reject proposals.

``serve(repo)`` runs it on 127.0.0.1 and prints its address; ``create_app(repo, access)``
builds the Starlette application (tests drive it directly). Everything it changes goes through
the review API (``Workspace.approve``, ``reject``, ``undo``); agents have no route to it.
"""

from __future__ import annotations

from gitpatch.doors.web.app import create_app
from gitpatch.doors.web.security import Access
from gitpatch.doors.web.server import serve

__all__ = ["Access", "create_app", "serve"]
