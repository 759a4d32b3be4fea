"""End-to-end: content blocks, progress and log lines (contract 0.3.0) through the
official MCP Python SDK, over stdio and streamable HTTP, on both protocol
generations. The SDK parses every result into its content types, so a
block of the wrong shape fails here.

Progress counts are bounded by the interval and the time the call took,
never by a guess at machine speed.
"""

from __future__ import annotations

import base64
import time
from pathlib import Path

import anyio
import mcp.types as types
import pytest

from conftest import CALL_TIMEOUT, ROOT, TEST_GUESTS, Setup, connect, write_config

pytestmark = pytest.mark.anyio

both = pytest.mark.parametrize("transport", ["stdio", "http"])
generations = pytest.mark.parametrize("mode", ["legacy", "auto"])

MEDIA = ROOT / "tests/fixtures/media"
PIXEL = base64.b64encode((MEDIA / "red-pixel.png").read_bytes()).decode()

FIXTURES = {
    "test_image_content": "conformance_image",
    "test_multiple_content_types": "conformance_mixed",
    "test_tool_with_progress": "conformance_progress",
    "test_tool_with_logging": "conformance_logging",
}
# The one tool whose log lines the operator lets reach the client.
CLIENT_LOG = "test_tool_with_logging"
LOGGED = ["Tool execution started", "Tool processing data", "Tool execution completed"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def content_setup(tmp_path: Path) -> Setup:
    setup = write_config(tmp_path)
    extra = "".join(
        f'\n[tools.{name}]\ncomponent = "{TEST_GUESTS / crate}.wasm"\nside_effect = false\n'
        + ("client_log = true\n" if name == CLIENT_LOG else "")
        for name, crate in FIXTURES.items()
    )
    setup.config.write_text(setup.config.read_text() + extra)
    return setup


@both
@generations
async def test_blocks_follow_the_text_in_the_order_attached(transport: str, mode: str, content_setup: Setup) -> None:
    async with connect(transport, mode, content_setup) as client:
        image = await client.call_tool("test_image_content", {})
        mixed = await client.call_tool("test_multiple_content_types", {})
    assert not image.is_error, image
    assert [block.type for block in image.content] == ["text", "image"]
    assert isinstance(image.content[1], types.ImageContent)
    assert (image.content[1].data, image.content[1].mime_type) == (PIXEL, "image/png")
    assert [block.type for block in mixed.content] == ["text", "text", "image", "resource"]
    resource = mixed.content[3].resource
    assert (str(resource.uri), resource.mime_type, resource.text) == (
        "airlock:mixed-content-resource.json",
        "application/json",
        '{"test":"data","value":123}',
    )


@both
@generations
async def test_a_refused_block_is_an_error_result_without_blocks(transport: str, mode: str, content_setup: Setup) -> None:
    async with connect(transport, mode, content_setup) as client:
        result = await client.call_tool("hostile", {"attack": "png_bomb"})
    assert result.is_error
    assert result.meta["airlock/kind"] == "output_too_large"
    assert len(result.content) == 1
    assert "100000 × 100000 pixels" in result.content[0].text
    assert "max_image_pixels = 50000000" in result.content[0].text


@both
@generations
async def test_progress_reaches_the_callback_before_the_result(transport: str, mode: str, content_setup: Setup) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with connect(transport, mode, content_setup) as client:
        result = await client.call_tool("test_tool_with_progress", {}, progress_callback=on_progress)
        assert not result.is_error, result
        assert seen == [(0, 100, "step 1 of 3"), (50, 100, "step 2 of 3"), (100, 100, "step 3 of 3")]

        seen.clear()
        started = time.monotonic()
        flood = await client.call_tool("hostile", {"attack": "progress_flood"}, progress_callback=on_progress)
        elapsed = time.monotonic() - started
    assert not flood.is_error, flood
    values = [progress for progress, _, _ in seen]
    assert values == sorted(set(values)), values
    assert values[-1] == 100_000, "the last report comes before the result"
    # At most one per 50 ms (the default interval), plus the first and the last.
    assert len(values) <= int(elapsed / 0.05) + 2, (len(values), elapsed)


class Lines:
    """The log notifications a client received, and a way to wait for them."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, object]] = []
        self._arrived = anyio.Event()
        self._wanted = 0

    async def __call__(self, params: types.LoggingMessageNotificationParams) -> None:
        self.seen.append((params.level, params.logger, params.data))
        if len(self.seen) >= self._wanted:
            self._arrived.set()

    async def wait_for(self, count: int) -> None:
        """Until `count` lines arrived in all (notifications ride the HTTP
        session's GET stream, beside the result rather than before it)."""
        self._wanted = count
        if len(self.seen) < count:
            self._arrived = anyio.Event()
            with anyio.fail_after(CALL_TIMEOUT):
                await self._arrived.wait()


@both
@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
async def test_log_lines_reach_the_client_only_for_the_tools_the_operator_allows(transport: str, content_setup: Setup) -> None:
    lines = Lines()
    async with connect(transport, "legacy", content_setup, logging_callback=lines) as client:
        assert client.server_capabilities.logging is not None
        # `hostile` writes warnings, and its table has no `client_log`.
        quiet = await client.call_tool("hostile", {"attack": "log_flood", "count": 5, "bytes": 8})
        assert not quiet.is_error, quiet
        # Below the level the client set: filtered out.
        await client.set_logging_level("error")
        await client.call_tool(CLIENT_LOG, {})
        await client.set_logging_level("info")
        result = await client.call_tool(CLIENT_LOG, {})
        assert not result.is_error, result
        # One stream, in order: had the earlier calls' lines been sent, they
        # would have arrived before these.
        await lines.wait_for(3)
    assert lines.seen == [("info", CLIENT_LOG, line) for line in LOGGED]


@both
async def test_a_2026_request_gets_log_lines_only_at_the_level_it_names(transport: str, content_setup: Setup) -> None:
    lines = Lines()
    async with connect(transport, "auto", content_setup, logging_callback=lines) as client:
        await client.call_tool(CLIENT_LOG, {})
    async with connect(transport, "auto", content_setup, logging_callback=lines, log_level="info") as client:
        await client.call_tool(CLIENT_LOG, {})
        await lines.wait_for(3)
    assert lines.seen == [("info", CLIENT_LOG, line) for line in LOGGED]
