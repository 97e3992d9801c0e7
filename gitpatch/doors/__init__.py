"""The adapters people and agents use, each a thin layer over the Workspace and the tools.

- ``cli``: the ``gitpatch`` command (click); ``mcp``: the MCP server (stdio, streamable HTTP);
- ``hosted``: the hosted service's spaces, credentials and limits; ``web``: the review page;
- ``demo``: ``make demo``.

Each maps ``GitpatchError`` to its medium in one place. Only this layer imports click or mcp.
"""
