"""The OpenAI Agents SDK (`openai-agents`) against `airlock serve`.

A scripted `Model` stands in for the LLM: it asks for the tool calls a test
gives it, then records the input the SDK sends it on the next turn. That
input is exactly what a real model would read, so the tests assert on the
`function_call_output` items the SDK built from Airlock's results.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Agent, Runner, set_tracing_disabled
from agents.exceptions import ModelBehaviorError
from agents.items import ModelResponse
from agents.mcp import MCPServer, MCPServerStdio, MCPServerStreamableHttp, MCPUtil
from agents.models.interface import Model
from agents.usage import Usage
from mcp.types import Tool as MCPTool
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from conftest import BIN, BUNDLED, HttpServer, Setup, assert_names_available_tools, server_env

pytestmark = [
    pytest.mark.anyio,
    # Raised inside the SDK's own HTTP transport (it still calls the mcp 1.x
    # `streamablehttp_client`), not by these tests.
    pytest.mark.filterwarnings("ignore:Use `streamable_http_client` instead:DeprecationWarning"),
]

# Tracing would try to export spans to OpenAI.
set_tracing_disabled(True)

TRANSPORTS = ["stdio", "http"]


class ScriptedModel(Model):
    """Turn 1: ask for `calls` (name, arguments). Turn 2: record what the SDK
    sends back and finish with a plain message."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]]) -> None:
        self.calls = calls
        self.turns: list[list[Any]] = []
        self.tools: list[Any] = []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **kwargs) -> ModelResponse:  # type: ignore[override]
        self.turns.append(list(input) if not isinstance(input, str) else [input])
        self.tools = list(tools)
        if len(self.turns) == 1:
            output: list[Any] = [
                ResponseFunctionToolCall(type="function_call", call_id=f"call_{i}", name=name, arguments=json.dumps(args))
                for i, (name, args) in enumerate(self.calls)
            ]
        else:
            text = ResponseOutputText(type="output_text", text="done", annotations=[], logprobs=[])
            output = [ResponseOutputMessage(id="msg_1", type="message", role="assistant", status="completed", content=[text])]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the tests run the agent without streaming")

    def outputs(self) -> list[str]:
        """The text of every tool result the model was given, in call order."""
        assert len(self.turns) >= 2, f"the agent never came back to the model: {self.turns}"
        items = [item for item in self.turns[1] if isinstance(item, dict) and item.get("type") == "function_call_output"]
        by_id = {item["call_id"]: output_text(item["output"]) for item in items}
        assert len(by_id) == len(self.calls), items
        return [by_id[f"call_{i}"] for i in range(len(self.calls))]


def output_text(output: Any) -> str:
    """A `function_call_output`'s output: a string or a list of content items."""
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        return str(output.get("text", output))
    return "".join(part.get("text", "") for part in output)


# The snippet in book/src/clients/connecting.md (OpenAI Agents SDK).
def airlock_stdio(setup: Setup, timeout: float | None = 60) -> MCPServerStdio:
    """Airlock over stdio, with the client timeout raised from the SDK's 5 s
    default (an interpreter call may take up to 30 s)."""
    return MCPServerStdio(
        params={"command": str(BIN), "args": setup.serve_args(), "env": server_env()},
        client_session_timeout_seconds=timeout,
        cache_tools_list=True,
    )


def airlock_http(url: str, timeout: float | None = 60) -> MCPServerStreamableHttp:
    return MCPServerStreamableHttp(
        params={"url": url},
        client_session_timeout_seconds=timeout,
        cache_tools_list=True,
    )


@contextlib.asynccontextmanager
async def connected(transport: str, setup: Setup, request: pytest.FixtureRequest, timeout: float | None = 60) -> AsyncIterator[MCPServer]:
    if transport == "stdio":
        server: MCPServer = airlock_stdio(setup, timeout)
    else:
        http: HttpServer = request.getfixturevalue("http")
        server = airlock_http(http.url, timeout)
    async with server:
        yield server


async def run_calls(server: MCPServer, calls: list[tuple[str, dict[str, Any]]], **agent_args: Any) -> ScriptedModel:
    model = ScriptedModel(calls)
    agent = Agent(name="assistant", model=model, mcp_servers=[server], **agent_args)
    result = await Runner.run(agent, "go", max_turns=3)
    assert result.final_output == "done"
    return model


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_lists_the_bundled_tools_as_function_tools(transport: str, setup: Setup, request: pytest.FixtureRequest) -> None:
    async with connected(transport, setup, request) as server:
        names = {tool.name for tool in await server.list_tools()}
        assert set(BUNDLED) <= names, names
        model = await run_calls(server, [("echo", {"text": "hi"})])
        offered = {tool.name: tool for tool in model.tools}
        assert set(BUNDLED) <= set(offered)
        assert offered["echo"].params_json_schema["required"] == ["text"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_call_reaches_the_model(transport: str, setup: Setup, request: pytest.FixtureRequest) -> None:
    async with connected(transport, setup, request) as server:
        model = await run_calls(server, [("echo", {"text": "hello from the agents sdk"})])
        [text] = model.outputs()
        assert "hello from the agents sdk" in text


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_error_results_reach_the_model_with_airlocks_message(transport: str, setup: Setup, request: pytest.FixtureRequest) -> None:
    calls = [
        ("echo", {"text": 5}),
        # A side effect: the default policy asks, and this client cannot confirm.
        ("create_transfer", {"to": "acct-2", "amount": 10}),
        ("hostile", {"attack": "tool_error"}),
    ]
    async with connected(transport, setup, request) as server:
        model = await run_calls(server, calls)
        invalid, declined, tool_error = model.outputs()
        assert "error (invalid_arguments)" in invalid and '5 is not of type "string"' in invalid, invalid
        assert "error (declined)" in declined, declined
        assert tool_error == "tool error (not_found): the thing was not found", tool_error


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_unknown_tool_names_the_available_ones(transport: str, setup: Setup, request: pytest.FixtureRequest) -> None:
    """A model that calls a name the SDK does not offer gets the SDK's own
    error, without a call to the server. A name the server does not know
    reaches it when the SDK's tool list is stale (`cache_tools_list=True`
    and a tool removed since): Airlock's answer is an error result, and the
    model reads it (a JSON-RPC error would be hidden behind a generic text)."""
    async with connected(transport, setup, request) as server:
        stale = MCPTool(name="ech", description="removed", inputSchema={"type": "object", "properties": {"text": {"type": "string"}}})
        tool = MCPUtil.to_function_tool(stale, server, convert_schemas_to_strict=False)
        model = ScriptedModel([("ech", {"text": "hi"})])
        result = await Runner.run(Agent(name="assistant", model=model, tools=[tool]), "go", max_turns=3)
        assert result.final_output == "done"
        [text] = model.outputs()
        assert_names_available_tools(text, "ech", closest="echo")


async def test_a_name_the_agent_does_not_offer_ends_the_run(setup: Setup) -> None:
    """The SDK answers a made-up name itself: the run ends with
    `ModelBehaviorError`, and the server is never asked."""
    async with airlock_stdio(setup) as server:
        with pytest.raises(ModelBehaviorError, match="Tool nope not found"):
            await run_calls(server, [("nope", {})])


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_call_longer_than_the_default_client_timeout_completes_with_the_snippet(transport: str, setup: Setup, request: pytest.FixtureRequest) -> None:
    """The SDK's default `client_session_timeout_seconds` is 5 s; the
    book's snippet (book/src/clients/connecting.md) sets 60. `hostile`'s
    `sleep` takes 7 s."""
    async with connected(transport, setup, request, timeout=60) as server:
        model = await run_calls(server, [("hostile", {"attack": "sleep", "ms": 7000})])
        [text] = model.outputs()
        assert json.loads(text) == {"slept_ms": 7000}, text


async def test_the_default_client_timeout_gives_up_on_a_longer_call(setup: Setup) -> None:
    """Why the snippet raises the timeout: the same 7 s call with the SDK's
    default (5 s) cannot have an answer before the client gives up, and the
    model is told to try again, which would time out the same way."""
    server = MCPServerStdio(params={"command": str(BIN), "args": setup.serve_args(), "env": server_env()})
    assert server.client_session_timeout_seconds == 5
    async with server:
        model = await run_calls(server, [("hostile", {"attack": "sleep", "ms": 7000})])
        [text] = model.outputs()
        # The SDK replaces the client-side timeout with a generic text.
        assert text == "An error occurred while running the tool. Please try again.", text
