"""Pydantic AI (`pydantic-ai-slim[mcp]`, `MCPToolset` on FastMCP's client)
against `airlock serve`.

A `FunctionModel` stands in for the LLM: it asks for the tool calls a test
gives it, then records the messages the agent sends it on the next turn,
which are what a real model would read.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from conftest import BIN, BUNDLED, HttpServer, Setup, assert_names_available_tools, server_env

pytestmark = pytest.mark.anyio

TRANSPORTS = ["stdio", "http"]


# The snippet in book/src/clients/connecting.md (Pydantic AI).
def airlock_stdio(setup: Setup) -> MCPToolset[Any]:
    return MCPToolset(StdioTransport(str(BIN), setup.serve_args(), env=server_env()))


def airlock_toolset(transport: str, setup: Setup, request: pytest.FixtureRequest) -> MCPToolset[Any]:
    if transport == "stdio":
        return airlock_stdio(setup)
    http: HttpServer = request.getfixturevalue("http")
    return MCPToolset(http.url)


class Script:
    """Turn 1: ask for `calls`. Turn 2: record the request and finish."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]]) -> None:
        self.calls = calls
        self.requests: list[ModelRequest] = []
        self.info: AgentInfo | None = None

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.info = info
        self.requests = [m for m in messages if isinstance(m, ModelRequest)]
        if len(self.requests) == 1:
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f"call_{i}") for i, (name, args) in enumerate(self.calls)])
        return ModelResponse(parts=[TextPart("done")])

    def answers(self) -> list[ToolReturnPart | RetryPromptPart]:
        """What the model was given for each of its calls, in call order."""
        assert len(self.requests) >= 2, "the agent never came back to the model"
        parts = [p for p in self.requests[1].parts if isinstance(p, (ToolReturnPart, RetryPromptPart))]
        return sorted(parts, key=lambda p: p.tool_call_id)


def said(part: ToolReturnPart | RetryPromptPart) -> str:
    """The text the model reads for one tool call."""
    return part.model_response() if isinstance(part, RetryPromptPart) else part.model_response_str()


def error_text(part: ToolReturnPart | RetryPromptPart) -> str:
    """The message of a retried call, which the model reads as `{"error": message}`."""
    assert isinstance(part, ToolReturnPart) and part.outcome == "retried", part
    return json.loads(said(part))["error"]


async def run(toolset: MCPToolset[Any], calls: list[tuple[str, dict[str, Any]]]) -> Script:
    script = Script(calls)
    agent = Agent(FunctionModel(script), toolsets=[toolset])
    async with agent:  # one server for the whole conversation
        result = await agent.run("go")
    assert result.output == "done"
    return script


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_lists_tools_and_a_call_reaches_the_model(transport: str, setup: Setup, request: pytest.FixtureRequest) -> None:
    toolset = airlock_toolset(transport, setup, request)
    script = await run(toolset, [("echo", {"text": "hello from pydantic ai"})])
    assert script.info is not None
    offered = {tool.name: tool for tool in script.info.function_tools}
    assert set(BUNDLED) <= set(offered), offered
    assert offered["echo"].parameters_json_schema["required"] == ["text"]
    [answer] = script.answers()
    assert isinstance(answer, ToolReturnPart), answer
    assert answer.content == {"text": "hello from pydantic ai"}
    assert "hello from pydantic ai" in answer.model_response_str()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_error_results_reach_the_model_with_airlocks_message(transport: str, setup: Setup, request: pytest.FixtureRequest) -> None:
    """The default `tool_error_behavior='retry'` turns an error result into a
    retried tool return: the model reads `{"error": "<Airlock's message>"}`."""
    calls = [
        ("echo", {"text": 5}),
        ("create_transfer", {"to": "acct-2", "amount": 10}),
        ("hostile", {"attack": "tool_error"}),
    ]
    script = await run(airlock_toolset(transport, setup, request), calls)
    invalid, declined, failed = (error_text(part) for part in script.answers())
    assert invalid.startswith("error (invalid_arguments)") and '5 is not of type "string"' in invalid, invalid
    assert declined.startswith("error (declined)"), declined
    assert failed == "tool error (not_found): the thing was not found", failed


async def test_an_unknown_tool_names_the_available_ones(setup: Setup) -> None:
    """A name the server does not know (a stale tool list) is Airlock's
    error result, which the toolset raises as the retry the model reads."""
    toolset = airlock_stdio(setup)
    async with toolset:
        with pytest.raises(ModelRetry) as raised:
            await toolset.direct_call_tool("ech", {"text": "hi"})
    assert_names_available_tools(raised.value.message, "ech", closest="echo")


async def test_a_name_the_agent_does_not_offer_is_answered_by_the_agent(setup: Setup) -> None:
    """The agent answers a made-up name itself, without a call to the server."""
    script = await run(airlock_stdio(setup), [("nope", {})])
    [answer] = script.answers()
    assert error_text(answer).startswith("Unknown tool name: 'nope'. Available tools: "), answer


async def test_a_conversation_keeps_one_server_and_its_sessions(setup: Setup) -> None:
    """`async with agent:` keeps one server for the whole run, so a
    `run_python` session continues across the model's calls."""
    calls = [("run_python", {"code": "rows = [3, 1, 2]", "session_id": "s1"})]
    toolset = airlock_stdio(setup)
    agent = Agent(FunctionModel(Script(calls)), toolsets=[toolset])
    async with agent:
        await agent.run("first")
        second = Script([("run_python", {"code": "sum(rows)", "session_id": "s1"})])
        result = await agent.run("second", model=FunctionModel(second))
    assert result.output == "done"
    [answer] = second.answers()
    assert isinstance(answer, ToolReturnPart) and answer.content["result"] == 6, answer
    assert json.loads(answer.model_response_str())["result"] == 6
