"""End-to-end: the official MCP Python SDK against `airlock serve`.

Every behaviour is checked over stdio and over streamable HTTP, and on both
protocol generations: "legacy" (the initialize handshake, 2025-11-25, where
the server asks for confirmation with elicitation/create) and "auto" (the SDK
probes server/discover and lands on 2026-07-28, where confirmation is an
"input required" result the SDK answers and retries).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp.shared.exceptions import MCPError

from conftest import (
    BIN,
    CALL_TIMEOUT,
    OTHER_TOKEN,
    TOKEN,
    TOOLS_DIR,
    Setup,
    connect,
    copy_tool,
    http_server,
    raw_session_stdio,
    server_env,
    write_config,
)

pytestmark = pytest.mark.anyio

TRANSPORTS = ["stdio", "http"]
MODES = ["legacy", "auto"]
both = pytest.mark.parametrize("transport", TRANSPORTS)
generations = pytest.mark.parametrize("mode", MODES)

HOST_ONLY_KEYS = {"timeout_ms", "fuel", "memory_mib", "concurrency_safe", "side_effect", "dirs", "env", "digest", "sha256", "grants", "limits"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def kind_of(result: types.CallToolResult) -> str:
    """The error kind Airlock puts in an error result's `_meta`."""
    assert result.meta is not None, result
    return result.meta["airlock/kind"]


def text_of(result: types.CallToolResult) -> str:
    assert result.content and result.content[0].type == "text", result
    return result.content[0].text


class Elicitations:
    """An elicitation callback that records what it was asked."""

    def __init__(self, answer: str = "accept", allow: bool = True) -> None:
        self.answer = answer
        self.allow = allow
        self.messages: list[str] = []
        self.schemas: list[dict[str, Any]] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.messages.append(params.message)
        self.schemas.append(params.requested_schema.model_dump(by_alias=True, exclude_none=True) if hasattr(params.requested_schema, "model_dump") else dict(params.requested_schema))
        if self.answer == "accept":
            return types.ElicitResult(action="accept", content={"allow": self.allow})
        return types.ElicitResult(action=self.answer)


# -- tools/list ---------------------------------------------------------------


@both
@generations
async def test_list_tools_from_the_projection(transport: str, mode: str, setup: Setup) -> None:
    async with connect(transport, mode, setup) as client:
        listed = await client.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert {"echo", "json_query", "hostile", "create_transfer"} <= tools.keys()
    echo = tools["echo"]
    assert echo.description
    assert echo.input_schema["type"] == "object"
    assert "text" in echo.input_schema["properties"]
    assert echo.output_schema and echo.output_schema["type"] == "object"
    assert echo.annotations.read_only_hint is True
    assert echo.annotations.destructive_hint is False
    transfer = tools["create_transfer"]
    assert transfer.annotations.read_only_hint is False
    assert transfer.annotations.destructive_hint is True
    # The trust boundary: nothing host-side reaches the client.
    for tool in listed.tools:
        dumped = tool.model_dump(by_alias=True, exclude_none=True)
        assert set(dumped) <= {"name", "title", "description", "inputSchema", "outputSchema", "annotations", "icons", "_meta"}, dumped
        assert not HOST_ONLY_KEYS & set(dumped), dumped


@both
@generations
async def test_each_tool_carries_its_revision_in_meta(transport: str, mode: str, setup: Setup) -> None:
    """`_meta["airlock/revision"]`: one digest of the component and of what
    the model sees of the tool, stable from one list to the next."""
    async with connect(transport, mode, setup) as client:
        first = await client.list_tools()
        again = await client.list_tools()
    revisions = {tool.name: (tool.meta or {}).get("airlock/revision") for tool in first.tools}
    for name, revision in revisions.items():
        assert isinstance(revision, str) and revision.startswith("sha256:") and len(revision) == 71, (name, revision)
    assert len(set(revisions.values())) == len(revisions), "each tool has its own"
    assert revisions == {tool.name: tool.meta["airlock/revision"] for tool in again.tools}


# -- tools/call ---------------------------------------------------------------


@both
@generations
async def test_call_ok(transport: str, mode: str, setup: Setup) -> None:
    async with connect(transport, mode, setup) as client:
        result = await client.call_tool("echo", {"text": "héllo"})
    assert not result.is_error
    assert json.loads(text_of(result)) == {"text": "héllo"}
    assert result.structured_content == {"text": "héllo"}


@both
@generations
async def test_invalid_arguments_are_an_error_result(transport: str, mode: str, setup: Setup) -> None:
    async with connect(transport, mode, setup) as client:
        result = await client.call_tool("echo", {"text": 5})
        assert result.is_error
        assert text_of(result).startswith("error (invalid_arguments):"), text_of(result)
        assert kind_of(result) == "invalid_arguments"
        # The session is still usable.
        assert not (await client.call_tool("echo", {"text": "after"})).is_error


@both
@generations
async def test_unknown_tool_is_an_error_result_naming_the_tools(transport: str, mode: str, setup: Setup) -> None:
    async with connect(transport, mode, setup) as client:
        result = await client.call_tool("ehco", {"text": "hi"})
        assert result.is_error and kind_of(result) == "unknown_tool", result
        text = text_of(result)
        assert text.startswith("error (unknown_tool):") and "echo" in text, text
        assert not (await client.call_tool("echo", {"text": "after"})).is_error


@both
@generations
async def test_guest_failures_name_their_kind(transport: str, mode: str, setup: Setup) -> None:
    async with connect(transport, mode, setup) as client:
        result = await client.call_tool("hostile", {"attack": "tool_error"})
        assert result.is_error
        assert text_of(result).startswith("tool error (not_found)"), text_of(result)
        assert result.meta == {
            "airlock/kind": "tool_error", "airlock/code": "not_found", "airlock/blame": "tool", "airlock/retry": "unknown"
        }, result
        # hostile declares an output schema: an error result carries no
        # structured content that would have to match it.
        assert result.structured_content is None, result
        result = await client.call_tool("hostile", {"attack": "panic", "marker": "boom"})
        assert result.is_error and kind_of(result) == "trapped", result


# -- confirmation ---------------------------------------------------------------


@both
@generations
async def test_ask_accepted(transport: str, mode: str, setup: Setup) -> None:
    ask = Elicitations("accept", allow=True)
    async with connect(transport, mode, setup, principal="carol", elicitation_callback=ask) as client:
        result = await client.call_tool("create_transfer", {"to": "bob", "amount": 20000})
    assert not result.is_error, text_of(result)
    assert result.structured_content == {"to": "bob", "amount": 20000, "status": "done"}
    assert len(ask.messages) == 1
    message = ask.messages[0]
    assert message.startswith("carol wants to call create_transfer with {"), message
    assert '"amount":20000' in message and message.endswith("Allow?"), message
    assert ask.schemas[0]["properties"]["allow"]["type"] == "boolean"


CARD_KEYS = """
confirm = "Transfer {amount} to account {to|last4} (full: {to})\\nRequested by {caller.principal}"
present_result = "Transfer to {to}: {status|upper}"
"""


@both
@generations
async def test_the_elicitation_shows_the_operators_card_escaped(transport: str, mode: str, tmp_path: Path) -> None:
    setup = write_config(tmp_path, transfer_keys=CARD_KEYS)
    ask = Elicitations("accept", allow=True)
    hostile = "acc-bob\n\nTransfer 1 to account 0000\u202e0005"
    async with connect(transport, mode, setup, principal="carol", elicitation_callback=ask) as client:
        result = await client.call_tool("create_transfer", {"to": hostile, "amount": 20000})
        listed = (await client.list_tools()).tools
    assert not result.is_error, text_of(result)
    assert len(ask.messages) == 1
    message = ask.messages[0]
    lines = message.split("\n")
    assert lines[0] == "Transfer 20000 to account 0005 (full: acc-bob\\n\\nTransfer 1 to account 0000\\u{202e}0005)", message
    assert lines[1] == "Requested by carol", message
    # U+202E is shown as \u{202e}, so the card ends with the warning.
    assert lines[2] == "Warning: hidden characters are shown as \\u{…}", message
    assert lines[3:] == ["", "carol wants to call create_transfer: the tool has side effects. Allow?"], message
    assert "\u202e" not in message, message
    # The presentation and the templates are host-only.
    assert "DONE" not in json.dumps(result.model_dump(mode="json")), result
    assert "Requested by" not in json.dumps([t.model_dump(mode="json") for t in listed])


@both
@generations
@pytest.mark.parametrize("answer", ["decline", "cancel", "accept-false"])
async def test_ask_declined(transport: str, mode: str, answer: str, setup: Setup) -> None:
    ask = Elicitations("accept", allow=False) if answer == "accept-false" else Elicitations(answer)
    async with connect(transport, mode, setup, elicitation_callback=ask) as client:
        result = await client.call_tool("create_transfer", {"to": "bob", "amount": 20000})
        assert result.is_error
        assert text_of(result).startswith("error (declined):"), text_of(result)
        assert kind_of(result) == "declined"
        assert len(ask.messages) == 1
        # Declining one call does not approve or block the next.
        assert not (await client.call_tool("echo", {"text": "after"})).is_error


@both
@generations
async def test_ask_without_elicitation_capability_is_declined(transport: str, mode: str, setup: Setup) -> None:
    async with connect(transport, mode, setup) as client:
        result = await client.call_tool("create_transfer", {"to": "bob", "amount": 20000})
    assert result.is_error
    assert text_of(result).startswith("error (declined):"), text_of(result)


# -- cancellation ---------------------------------------------------------------


# Less than half the hostile fixture's deadline (conftest: 120 s), which is
# how long a sleep that nothing cancelled holds the exclusive tool.
SLEEP_BOUND_S = 55.0


def cancelled_sleeps(setup: Setup) -> list[dict[str, Any]]:
    return [r for r in setup.audit() if r["tool"] == "hostile" and r["outcome"] == "cancelled"]


@both
@generations
async def test_cancel_interrupts_the_guest(transport: str, mode: str, tmp: Path) -> None:
    setup = write_config(tmp, audit=True)
    async with connect(transport, mode, setup) as client:
        started = time.monotonic()
        # The SDK abandons the call after 1 s and sends notifications/cancelled
        # (on a 2026-07-28 HTTP connection it aborts the request's POST instead).
        with pytest.raises(MCPError) as caught:
            await client.call_tool("hostile", {"attack": "sleep", "ms": 60_000}, read_timeout_seconds=1.0)
        assert caught.value.code == -32001, caught.value  # REQUEST_TIMEOUT, raised by the client
        # hostile runs exclusively: this call only starts once the sleeping
        # guest is gone, which without cancellation would take a minute.
        t0 = time.monotonic()
        result = await client.call_tool("hostile", {"attack": "ok"}, read_timeout_seconds=CALL_TIMEOUT)
        next_call = time.monotonic() - t0
    assert not result.is_error, text_of(result)
    assert result.structured_content == {"value": 1}
    # Without cancellation the sleep would hold the tool for its whole
    # deadline (120 s): half of it tells the two apart on any machine.
    assert next_call < SLEEP_BOUND_S, f"the next call took {next_call:.1f}s: the cancelled guest kept running"
    assert time.monotonic() - started < 2 * SLEEP_BOUND_S
    # The audit log says why the sleep ended, and when.
    (record,) = cancelled_sleeps(setup)
    assert record["duration_us"] < SLEEP_BOUND_S * 1_000_000, record


def test_http_dropped_stream_cancels_the_call(tmp: Path) -> None:
    """A legacy (session) client that drops the response stream of a call
    cancels it: the exclusive tool is free again at once."""
    setup = write_config(tmp, audit=True)
    with http_server(setup) as server:
        opened = post(server.url)
        session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        post(server.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **session)
        sleep = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hostile", "arguments": {"attack": "sleep", "ms": 60_000}}}
        with httpx2.Client(timeout=CALL_TIMEOUT) as http:
            with http.stream("POST", server.url, json=sleep, headers={**POST_HEADERS, **session}) as response:
                assert response.status_code == 200
                time.sleep(0.5)  # the guest is asleep now; hang up
        t0 = time.monotonic()
        ok = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "hostile", "arguments": {"attack": "ok"}}}
        answer = post(server.url, ok, **session)
        assert answer.status_code == 200 and '"value":1' in answer.text, answer.text
        assert time.monotonic() - t0 < SLEEP_BOUND_S
        deadline = time.monotonic() + SLEEP_BOUND_S
        while not cancelled_sleeps(setup) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert cancelled_sleeps(setup), setup.audit()


# -- the official low-level session API ---------------------------------------------------------------


async def test_client_session_over_stdio(setup: Setup) -> None:
    async with raw_session_stdio(setup) as session:
        assert session.protocol_version == "2025-11-25"
        assert session.server_capabilities.tools.list_changed is True
        assert session.server_info.name == "airlock"
        listed = await session.list_tools()
        assert "echo" in {t.name for t in listed.tools}
        result = await session.call_tool("echo", {"text": "hi"})
        assert result.structured_content == {"text": "hi"}


async def test_guest_output_never_reaches_stdout(setup: Setup) -> None:
    # A tool that floods its stdout: the protocol stream must stay valid
    # JSON-RPC (the SDK would fail to parse anything else).
    async with raw_session_stdio(setup) as session:
        result = await session.call_tool("hostile", {"attack": "stdout_flood", "bytes": 1_000_000})
        assert result is not None
        assert not (await session.call_tool("echo", {"text": "still fine"})).is_error


# -- HTTP: authentication, origins, hosts ---------------------------------------------------------------

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
POST_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def post(url: str, body: dict[str, Any] = INIT, **headers: str) -> httpx2.Response:
    return httpx2.post(url, json=body, headers={**POST_HEADERS, **headers}, timeout=CALL_TIMEOUT)


def test_http_refuses_requests_without_a_valid_token(tmp: Path) -> None:
    setup = write_config(tmp, tokens=True)
    with http_server(setup) as server:
        for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": f"Basic {TOKEN}"}):
            response = post(server.url, **headers)
            assert response.status_code == 401, (headers, response.text)
            assert response.headers["www-authenticate"].startswith("Bearer"), response.headers
        assert post(server.url, Authorization=f"Bearer {TOKEN}").status_code == 200


def test_http_refuses_bad_origins_and_hosts(tmp: Path) -> None:
    setup = write_config(tmp, origins=("https://app.example.com",))
    with http_server(setup) as server:
        assert post(server.url, Origin="https://evil.example.com").status_code == 403
        assert post(server.url, Origin="null").status_code == 403
        assert post(server.url, Host="evil.example.com").status_code == 403
        assert post(server.url, Host=f"attacker.test:{server.host_port.rsplit(':', 1)[1]}").status_code == 403
        assert post(server.url, Origin="https://app.example.com").status_code == 200
        assert post(server.url, Origin=f"http://{server.host_port}").status_code == 200
        assert post(server.url, Host=f"localhost:{server.host_port.rsplit(':', 1)[1]}").status_code == 200
        assert post(server.url).status_code == 200


def test_http_refuses_a_public_address_without_tokens(setup: Setup) -> None:
    done = subprocess.run(
        [str(BIN), *setup.args(), "serve", "--http", "0.0.0.0:0"], capture_output=True, text=True, timeout=60, env=server_env()
    )
    assert done.returncode == 2, done
    assert "not a loopback address" in done.stderr and "token" in done.stderr, done.stderr


@generations
async def test_http_token_decides_the_principal(mode: str, tmp: Path) -> None:
    setup = write_config(tmp, tokens=True)
    ask = Elicitations("accept", allow=False)
    with http_server(setup, principal="nobody") as server:
        async with connect("http", mode, setup, server=server, token=OTHER_TOKEN, elicitation_callback=ask) as client:
            await client.call_tool("create_transfer", {"to": "x", "amount": 1})
    assert ask.messages and ask.messages[0].startswith("bob wants to call create_transfer"), ask.messages


def test_http_sessions_belong_to_their_principal(tmp: Path) -> None:
    setup = write_config(tmp, tokens=True)
    with http_server(setup) as server:
        opened = post(server.url, Authorization=f"Bearer {TOKEN}")
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        stolen = post(server.url, listing, Authorization=f"Bearer {OTHER_TOKEN}", **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
        assert stolen.status_code == 404, stolen.text
        own = post(server.url, listing, Authorization=f"Bearer {TOKEN}", **{"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"})
        assert own.status_code == 200 and "echo" in own.text, own.text


def test_http_caps_the_request_body(tmp: Path) -> None:
    with http_server(write_config(tmp)) as server:
        body = dict(INIT, params={**INIT["params"], "padding": "x" * (5 << 20)})
        assert post(server.url, body).status_code == 413


# -- hot reload ---------------------------------------------------------------


@both
@generations
async def test_list_changed_after_a_tool_is_added(transport: str, mode: str, tmp: Path) -> None:
    tool_dir = tmp / "tools"
    tool_dir.mkdir()
    shutil.copyfile(TOOLS_DIR / "echo.wasm", tool_dir / "echo.wasm")
    setup = write_config(tmp, tool_dir=tool_dir)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with connect(transport, mode, setup, "--watch", message_handler=on_message) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "json_query" not in names and "echo" in names
        if mode == "legacy":
            copy_tool(TOOLS_DIR / "json_query.wasm", tool_dir)
            with anyio.fail_after(60):
                await changed.wait()
        else:
            async with client.listen(tools_list_changed=True) as subscription:
                assert subscription.honored.tools_list_changed
                copy_tool(TOOLS_DIR / "json_query.wasm", tool_dir)
                with anyio.fail_after(60):
                    event = await subscription.__anext__()
                assert type(event).__name__ == "ToolsListChanged", event
        names = {t.name for t in (await client.list_tools()).tools}
        assert "json_query" in names, names
        result = await client.call_tool("json_query", {"json": {"a": [1, 2]}, "query": "a[1]"})
        assert not result.is_error, text_of(result)


@pytest.mark.parametrize("transport", ["stdio"])
async def test_a_failed_reload_keeps_the_old_tools(transport: str, tmp: Path) -> None:
    tool_dir = tmp / "tools"
    tool_dir.mkdir()
    shutil.copyfile(TOOLS_DIR / "echo.wasm", tool_dir / "echo.wasm")
    setup = write_config(tmp, tool_dir=tool_dir)
    async with connect(transport, "legacy", setup, "--watch") as client:
        (tool_dir / "broken.wasm").write_bytes(b"\0asm not really")
        await anyio.sleep(2.0)
        assert "echo" in {t.name for t in (await client.list_tools()).tools}
        assert not (await client.call_tool("echo", {"text": "still here"})).is_error


# -- latency ---------------------------------------------------------------


def test_stdio_latency_bench_runs() -> None:
    """Keeps `bench_stdio.py` working; run it directly for real numbers
    (`-n 500`). Prints p50/p99 with `pytest -s`."""
    import bench_stdio

    stats = bench_stdio.run(50)
    for name in ("sdk", "raw"):
        assert stats[name]["n"] == 50
        # Generous: a loaded CI machine, but never a stuck server.
        assert stats[name]["p50"] < 250.0, stats


# -- model-written code and network grants --------------------------------------

INTERPRETERS = """
[tools.run_python]
side_effect = false
timeout_ms = 30000
memory_mib = 512

[tools.run_python.sessions]
max_live = 4
idle_secs = 60

[tools.http_fetch]
side_effect = false
"""


@generations
async def test_interpreter_sessions_belong_to_their_principal(mode: str, tmp: Path) -> None:
    setup = write_config(tmp, tokens=True)
    setup.config.write_text(setup.config.read_text() + INTERPRETERS)
    with http_server(setup) as server:
        async with connect("http", mode, setup, server=server, token=TOKEN) as alice:
            first = await alice.call_tool("run_python", {"code": "rows = [3, 1, 2]\nsorted(rows)", "session_id": "s1"})
            assert first.structured_content["result"] == [1, 2, 3], first
            again = await alice.call_tool("run_python", {"code": "sum(rows)", "session_id": "s1"})
            assert again.structured_content["result"] == 6, again
            # The argument's deprecated name still reaches the same session
            # (the schema lists it, marked deprecated, so that clients which
            # check arguments pass it on); both names naming different
            # sessions are refused.
            listed = {tool.name: tool for tool in (await alice.list_tools()).tools}
            old_name = listed["run_python"].input_schema["properties"]["session"]
            assert old_name["deprecated"] is True and old_name["description"].startswith("Deprecated"), old_name
            assert "session" not in listed["run_python"].input_schema.get("required", [])
            old = await alice.call_tool("run_python", {"code": "sum(rows)", "session": "s1"})
            assert old.structured_content["result"] == 6, old
            both = await alice.call_tool("run_python", {"code": "1", "session_id": "s1", "session": "s2"})
            assert both.is_error and "send only `session_id`" in text_of(both), both
            fresh = await alice.call_tool("run_python", {"code": "rows"})
            assert "NameError" in json.dumps(fresh.structured_content), fresh
        async with connect("http", mode, setup, server=server, token=OTHER_TOKEN) as bob:
            other = await bob.call_tool("run_python", {"code": "rows", "session_id": "s1"})
            assert "NameError" in json.dumps(other.structured_content), "another principal must not see alice's session"


@both
async def test_http_fetch_without_a_grant_is_a_readable_refusal(transport: str, setup: Setup) -> None:
    setup.config.write_text(setup.config.read_text() + INTERPRETERS)
    async with connect(transport, "legacy", setup) as client:
        result = await client.call_tool("http_fetch", {"url": "http://169.254.169.254/latest/meta-data/"})
    assert result.is_error
    text = text_of(result)
    assert "network_refused" in text and "http://169.254.169.254" in text and "network.allow" in text, text
