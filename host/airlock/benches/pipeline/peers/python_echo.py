"""A peer for `make bench`: the official MCP Python SDK's `MCPServer` with
one `echo` tool that returns its `text`, on stdio. What most MCP tools run
on today; no sandbox, no policy, no audit.

    .venv/bin/python host/airlock/benches/pipeline/peers/python_echo.py
"""

from mcp.server.mcpserver import MCPServer

server = MCPServer("python-echo")


@server.tool()
def echo(text: str) -> str:
    """Returns its text."""
    return text


if __name__ == "__main__":
    server.run("stdio")
