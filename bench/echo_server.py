"""The anchor of the MCP rows: the SDK's own server with one ``echo`` tool, over stdio.

``python -m bench.echo_server``. Not a benchmark itself (``bench/run.py`` runs only
``bench_*.py``): ``bench_calls`` measures gitpatch's server against it in the same run.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("echo")


@server.tool()
def echo(text: str) -> str:
    """Return ``text`` unchanged."""
    return text


if __name__ == "__main__":
    server.run("stdio")
