"""The proposal lifecycle, above the write path (``gitpatch.workspace``).

- ``lifecycle``: approve, reject, list, show, undo and log what agents proposed;
- ``series``: review steps on a session's stack (what approving also lands, other sessions' work);
- ``lookup``: finding and describing proposals; ``feedback``: comments and notices to the agent;
- ``worktrees``: a session's own linked worktree.

The porcelain ``Workspace`` (``gitpatch.porcelain``) calls these; they take a ``Context``.
"""
