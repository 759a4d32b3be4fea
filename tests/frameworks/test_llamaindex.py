"""LlamaIndex (`llama-index-tools-mcp`): `McpToolSpec` over `BasicMCPClient`.

Every bundled tool is listed, turned into a `FunctionTool` (LlamaIndex
builds a pydantic model from the input schema) and converted with
`to_openai_tool()`, which refuses a description over 1024 characters; each
is then called through MCP, and error results are read. No LLM, nothing
leaves the machine.

Runs in a venv of its own (`.venv-llamaindex`, llamaindex-requirements.txt):
llama-index-tools-mcp needs mcp 2.x, the other framework tests mcp<2.

`BasicMCPClient` over stdio starts a new server for every call, so a
`run_python` session is lost between calls; over HTTP one server keeps it
(book/src/clients/connecting.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.tools.mcp import BasicMCPClient, McpToolSpec

from conftest import BIN, BUNDLED, CALLS, Setup, http_server, server_env, write_granted_config

pytestmark = pytest.mark.anyio

CALL_TIMEOUT_SECS = 60


def stdio_client(config: Path) -> BasicMCPClient:
    args = ["--config", str(config), "serve", "--stdio"]
    return BasicMCPClient(str(BIN), args=args, env=server_env(), timeout=CALL_TIMEOUT_SECS)


async def test_every_bundled_tool_converts_and_is_called(tmp_path: Path) -> None:
    client = stdio_client(write_granted_config(tmp_path))
    listed = {tool.metadata.name: tool for tool in await McpToolSpec(client=client).to_tool_list_async()}
    assert sorted(listed) == BUNDLED
    raw = {tool.name: tool for tool in (await client.list_tools()).tools}
    for name, tool in listed.items():
        function = tool.metadata.to_openai_tool()["function"]
        assert function["name"] == name
        assert set(function["parameters"]["properties"]) == set(raw[name].input_schema["properties"]), name
    document = listed["json_query"].metadata.to_openai_tool()["function"]["parameters"]["properties"]["json"]
    assert {"object", "string"} <= {option.get("type") for option in document["anyOf"]}, document

    for name, (args, succeeds) in CALLS.items():
        output = await listed[name].acall(**args)
        result = output.raw_output
        assert result.is_error is not succeeds, f"{name}: {result}"
        if not succeeds:
            assert "declined" in result.content[0].text, f"{name}: {result}"
    result = (await listed["json_query"].acall(**CALLS["json_query"][0])).raw_output
    assert result.structured_content["values"] == [2], "an object argument reaches Airlock as an object"

    invalid = (await listed["echo"].acall()).raw_output
    assert invalid.is_error and "invalid_arguments" in invalid.content[0].text, invalid


async def test_a_session_is_lost_over_stdio_and_kept_over_http(tmp_path: Path) -> None:
    config = write_granted_config(tmp_path)
    stdio = stdio_client(config)
    await stdio.call_tool("run_python", {"code": "x = 41", "session_id": "s"})
    lost = await stdio.call_tool("run_python", {"code": "x + 1", "session_id": "s"})
    assert "NameError" in str(lost.structured_content or lost.content), lost

    with http_server(Setup(dir=tmp_path, config=config)) as server:
        http = BasicMCPClient(server.url, timeout=CALL_TIMEOUT_SECS)
        await http.call_tool("run_python", {"code": "x = 41", "session_id": "s"})
        kept = await http.call_tool("run_python", {"code": "x + 1", "session_id": "s"})
        assert not kept.is_error and kept.structured_content["result"] == 42, kept
