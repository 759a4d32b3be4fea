"""LangChain's MCP adapters (`langchain-mcp-adapters`) and LangGraph's
`ToolNode` against `airlock serve`.

A tool is invoked with a tool call, as an agent does, so the result is the
`ToolMessage` a model would read.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import convert_mcp_tool_to_langchain_tool, load_mcp_tools
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from mcp import ClientSession
from mcp.types import Tool as MCPTool

from conftest import BIN, BUNDLED, HttpServer, Setup, assert_names_available_tools, server_env

pytestmark = pytest.mark.anyio

TRANSPORTS = ["stdio", "http"]


# The snippet in book/src/clients/connecting.md (LangChain MCP adapters).
def airlock_client(setup: Setup) -> MultiServerMCPClient:
    return MultiServerMCPClient(
        {"airlock": {"command": str(BIN), "args": setup.serve_args(), "env": server_env(), "transport": "stdio"}}
    )


def airlock_http_client(url: str) -> MultiServerMCPClient:
    return MultiServerMCPClient({"airlock": {"url": url, "transport": "streamable_http"}})


@contextlib.asynccontextmanager
async def persistent_session(transport: str, setup: Setup, request: pytest.FixtureRequest) -> AsyncIterator[ClientSession]:
    """One session (one server process, on stdio) for every call made with
    the tools loaded from it."""
    if transport == "stdio":
        client = airlock_client(setup)
    else:
        http: HttpServer = request.getfixturevalue("http")
        client = airlock_http_client(http.url)
    async with client.session("airlock") as session:
        yield session


async def call(tool: BaseTool, args: dict[str, Any], call_id: str = "call_1") -> ToolMessage:
    """Invoke `tool` with a tool call, as an agent does: the answer is the
    `ToolMessage` the model reads."""
    message = await tool.ainvoke({"type": "tool_call", "name": tool.name, "args": args, "id": call_id})
    assert isinstance(message, ToolMessage), message
    return message


def text(message: ToolMessage) -> str:
    """The text the model reads from a `ToolMessage`."""
    if isinstance(message.content, str):
        return message.content
    return "".join(block["text"] if isinstance(block, dict) else str(block) for block in message.content)


def by_name(tools: list[BaseTool]) -> dict[str, BaseTool]:
    return {tool.name: tool for tool in tools}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_tools_load_as_langchain_tools_and_a_call_works(transport: str, setup: Setup, request: pytest.FixtureRequest) -> None:
    async with persistent_session(transport, setup, request) as session:
        tools = by_name(await load_mcp_tools(session))
        assert set(BUNDLED) <= set(tools), tools
        assert all(isinstance(tool, BaseTool) for tool in tools.values())
        assert tools["echo"].args == {"text": {"description": "The text to return.", "type": "string"}}
        message = await call(tools["echo"], {"text": "hello from langchain"})
        assert message.status == "success"
        assert "hello from langchain" in text(message)
        assert message.artifact == {"structured_content": {"text": "hello from langchain"}}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_error_results_reach_the_caller_as_readable_text(transport: str, setup: Setup, request: pytest.FixtureRequest) -> None:
    async with persistent_session(transport, setup, request) as session:
        tools = by_name(await load_mcp_tools(session))
        invalid = await call(tools["echo"], {"text": 5})
        assert invalid.status == "error"
        assert "error (invalid_arguments)" in text(invalid) and '5 is not of type "string"' in text(invalid), text(invalid)
        declined = await call(tools["create_transfer"], {"to": "acct-2", "amount": 10})
        assert declined.status == "error" and "error (declined)" in text(declined), text(declined)
        failed = await call(tools["hostile"], {"attack": "tool_error"})
        assert failed.status == "error" and text(failed) == "tool error (not_found): the thing was not found"


async def test_a_persistent_session_keeps_interpreter_sessions(setup: Setup) -> None:
    """With `client.session(...)`, one server serves every call, so a
    `run_python` session continues from one call to the next."""
    async with airlock_client(setup).session("airlock") as session:
        run_python = by_name(await load_mcp_tools(session))["run_python"]
        first = await call(run_python, {"code": "rows = [3, 1, 2]\nsorted(rows)", "session_id": "analysis-1"})
        assert first.artifact["structured_content"]["result"] == [1, 2, 3], first
        second = await call(run_python, {"code": "sum(rows)", "session_id": "analysis-1"})
        assert second.artifact["structured_content"]["result"] == 6, second


async def test_without_a_persistent_session_every_call_starts_a_server(setup: Setup) -> None:
    """`client.get_tools()` alone opens a new session (a new server process
    on stdio) for every call: the second call's session is a fresh one."""
    run_python = by_name(await airlock_client(setup).get_tools())["run_python"]
    await call(run_python, {"code": "rows = [3, 1, 2]", "session_id": "analysis-1"})
    second = await call(run_python, {"code": "sum(rows)", "session_id": "analysis-1"})
    content = second.artifact["structured_content"]
    assert content["result"] is None and content["error"]["name"] == "NameError", content


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_tool_node_turns_errors_and_unknown_tools_into_tool_messages(transport: str, setup: Setup, request: pytest.FixtureRequest) -> None:
    """LangGraph's `ToolNode` runs a batch with an error result and a tool
    the server does not know (a stale tool list: the tool was removed since
    it was loaded) without raising: each becomes an error `ToolMessage` with
    Airlock's text."""
    async with persistent_session(transport, setup, request) as session:
        tools = await load_mcp_tools(session)
        stale = MCPTool(name="ech", description="removed", inputSchema={"type": "object", "properties": {"text": {"type": "string"}}})
        node = ToolNode([*tools, convert_mcp_tool_to_langchain_tool(session, stale)])
        calls = [
            {"name": "echo", "args": {"text": "ok"}, "id": "call_ok", "type": "tool_call"},
            {"name": "echo", "args": {"text": 5}, "id": "call_invalid", "type": "tool_call"},
            {"name": "ech", "args": {"text": "hi"}, "id": "call_unknown", "type": "tool_call"},
            # A name the node was never given: LangGraph answers it itself.
            {"name": "nope", "args": {}, "id": "call_not_offered", "type": "tool_call"},
        ]
        graph = StateGraph(MessagesState)
        graph.add_node("tools", node)
        graph.add_edge(START, "tools")
        graph.add_edge("tools", END)
        out = await graph.compile().ainvoke({"messages": [AIMessage(content="", tool_calls=calls)]})
        messages = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
        assert messages["call_ok"].status == "success" and "ok" in text(messages["call_ok"])
        assert messages["call_invalid"].status == "error" and "error (invalid_arguments)" in text(messages["call_invalid"])
        assert messages["call_unknown"].status == "error"
        assert_names_available_tools(text(messages["call_unknown"]), "ech", closest="echo")
        assert messages["call_not_offered"].status == "error" and "nope is not a valid tool" in text(messages["call_not_offered"])
