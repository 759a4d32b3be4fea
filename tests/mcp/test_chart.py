"""End-to-end: the bundled `chart` tool through `airlock serve`, read by the
official MCP Python SDK as a client would read it: the JSON summary as text
and structured content, then an image block holding a PNG of the requested
size (its IHDR decoded) and, when the call asks for it, an embedded SVG
resource naming the title (by default the PNG alone: the SVG's markup is
text a client may paste into the model's context). Over stdio and
streamable HTTP, on both protocol generations.
"""

from __future__ import annotations

import base64
import json
import struct
import xml.etree.ElementTree as ET

import mcp.types as types
import pytest

from conftest import Setup, connect

pytestmark = pytest.mark.anyio

both = pytest.mark.parametrize("transport", ["stdio", "http"])
generations = pytest.mark.parametrize("mode", ["legacy", "auto"])

ARGUMENTS = {
    "kind": "line",
    "title": "Requests per hour",
    "series": [{"name": "api", "values": [120, 135, 160, 210]}, {"name": "web", "values": [80, 95, 90, 130]}],
    "labels": ["09:00", "10:00", "11:00", "12:00"],
    "width": 640,
    "height": 360,
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk, after checking the signature."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:8]
    assert data[12:16] == b"IHDR", data[12:16]
    return struct.unpack(">II", data[16:24])


@both
@generations
async def test_chart_returns_a_png_of_the_requested_size_and_an_svg(transport: str, mode: str, setup: Setup) -> None:
    async with connect(transport, mode, setup) as client:
        result = await client.call_tool("chart", {**ARGUMENTS, "svg": True})
    assert not result.is_error, result
    summary = result.structured_content
    assert summary is not None
    assert (summary["kind"], summary["series"], summary["points"]) == ("line", 2, 8)
    assert (summary["width"], summary["height"]) == (640, 360)
    assert summary["y"] == {"min": 80, "max": 210}
    # The result's text first, then the blocks in the order attached.
    assert result.content[0].type == "text" and json.loads(result.content[0].text) == summary
    images = [b for b in result.content if isinstance(b, types.ImageContent)]
    assert len(images) == 1, result.content
    assert images[0].mime_type == "image/png"
    png = base64.b64decode(images[0].data)
    assert png_size(png) == (640, 360)
    assert len(png) == summary["png_bytes"]
    resources = [b for b in result.content if isinstance(b, types.EmbeddedResource)]
    assert len(resources) == 1, result.content
    svg = resources[0].resource
    assert isinstance(svg, types.TextResourceContents), svg
    assert (str(svg.uri), svg.mime_type) == ("airlock:chart/chart.svg", "image/svg+xml")
    root = ET.fromstring(svg.text)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert (root.get("width"), root.get("height")) == ("640", "360")
    texts = [(t.text or "").strip() for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "Requests per hour" in texts, texts
    assert summary["svg_bytes"] == len(svg.text.encode())


@both
async def test_chart_returns_the_png_alone_by_default(transport: str, setup: Setup) -> None:
    async with connect(transport, "legacy", setup) as client:
        result = await client.call_tool("chart", ARGUMENTS)
    assert not result.is_error, result
    assert [b.type for b in result.content] == ["text", "image"], result.content
    assert result.structured_content is not None and "svg_bytes" not in result.structured_content


@both
async def test_bad_chart_input_is_a_tool_error_with_no_blocks(transport: str, setup: Setup) -> None:
    bad = {"kind": "bar", "series": [{"name": "a", "values": [1, 2]}, {"name": "b", "values": [1]}]}
    async with connect(transport, "legacy", setup) as client:
        result = await client.call_tool("chart", bad)
    assert result.is_error
    assert [b.type for b in result.content] == ["text"], result.content
    assert result.content[0].text.startswith("tool error (invalid_chart): series[1] has 1 values and series[0] has 2")
