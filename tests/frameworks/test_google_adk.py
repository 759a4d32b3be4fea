"""Google ADK (`google-adk`): its `McpToolset` against `airlock serve --stdio`.

ADK turns each MCP tool's input schema into a Gemini `Schema`
(`_to_gemini_schema`, what it sends Gemini without the JSON-schema feature
flag): every bundled tool must convert, `json_query.json` staying an object
or a string. A scripted `BaseLlm` stands in for Gemini inside
ADK's own runner: it asks for one call of every bundled tool and reads what
ADK hands back, results and error results alike. Nothing leaves the machine.

ADK's MCP client gives a call 5 s by default (`StdioConnectionParams`'s
`timeout`), less than a `run_python` call may take: the toolset here sets
60 s, as book/src/clients/connecting.md advises.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.tools._gemini_schema_util import _to_gemini_schema
from google.adk.tools.mcp_tool import McpToolset, StdioConnectionParams
from google.genai import types
from mcp import StdioServerParameters

from conftest import BIN, BUNDLED, CALLS, server_env, write_granted_config

pytestmark = pytest.mark.anyio

def toolset(config: Path) -> McpToolset:
    server = StdioServerParameters(command=str(BIN), args=["--config", str(config), "serve", "--stdio"], env=server_env())
    return McpToolset(connection_params=StdioConnectionParams(server_params=server, timeout=60.0))


class ScriptedGemini(BaseLlm):
    """Asks for every call in CALLS at once, then records the responses."""

    model: str = "scripted"
    declarations: list[types.FunctionDeclaration] = []
    responses: dict[str, Any] = {}

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        answered = [p.function_response for c in llm_request.contents for p in c.parts or [] if p.function_response]
        if not answered:
            for tool in llm_request.config.tools or []:
                self.declarations.extend(tool.function_declarations or [])
            calls = [types.Part(function_call=types.FunctionCall(id=f"call-{name}", name=name, args=args)) for name, (args, _) in CALLS.items()]
            yield LlmResponse(content=types.Content(role="model", parts=calls))
            return
        for response in answered:
            self.responses[response.name] = response.response
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="done")]))


async def test_every_bundled_tool_converts_to_a_gemini_schema(tmp_path: Path) -> None:
    tools = toolset(write_granted_config(tmp_path))
    try:
        listed = {tool.name: tool for tool in await tools.get_tools()}
        assert sorted(listed) == BUNDLED
        for name, tool in listed.items():
            schema = _to_gemini_schema(tool.raw_mcp_tool.inputSchema)
            assert schema.type == types.Type.OBJECT, name
            assert set(schema.properties or {}) == set(tool.raw_mcp_tool.inputSchema["properties"]), name
            declaration = tool._get_declaration()
            assert declaration.name == name and len(declaration.description or "") <= 1024, name
        document = _to_gemini_schema(listed["json_query"].raw_mcp_tool.inputSchema).properties["json"]
        assert [s.type for s in document.any_of or []] == [types.Type.OBJECT, types.Type.STRING]
    finally:
        await tools.close()


async def test_an_adk_agent_calls_every_bundled_tool_and_reads_error_results(tmp_path: Path) -> None:
    tools = toolset(write_granted_config(tmp_path))
    model = ScriptedGemini()
    agent = LlmAgent(name="agent", model=model, instruction="Use the tools.", tools=[tools])
    runner = InMemoryRunner(agent=agent, app_name="airlock")
    try:
        session = await runner.session_service.create_session(app_name="airlock", user_id="u")
        message = types.Content(role="user", parts=[types.Part(text="go")])
        async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
            pass
    finally:
        await tools.close()
        await runner.close()
    assert sorted(d.name for d in model.declarations) == BUNDLED
    assert sorted(model.responses) == sorted(CALLS)
    for name, (_, succeeds) in CALLS.items():
        response = model.responses[name]
        text = json.dumps(response)
        assert response.get("isError", False) is not succeeds, f"{name}: {text}"
        if not succeeds:
            assert "declined" in text, f"{name}: {text}"
    assert '"text": "hi"' in json.dumps(model.responses["echo"]["structuredContent"])
    assert model.responses["json_query"]["structuredContent"]["values"] == [2]
    assert model.responses["run_python"]["structuredContent"]["result"] == 42
    assert "granted text" in json.dumps(model.responses["read_file"])
