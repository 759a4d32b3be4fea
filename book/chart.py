#!/usr/bin/env python3
"""Draw the book's chart with the bundled `chart` tool, through the built
`airlock` binary, so that the picture in the book is the tool's own output.

The arguments are the ones the page shows: the JSON of the first
`airlock call chart '…'` in book/src/operator/bundled-tools.md. The call
goes over MCP (`airlock serve --stdio`, a configuration with `chart` alone)
and the PNG is the image content block of the result, decoded from base64
and checked to be a PNG of the requested size before it is written.

Usage: python3 book/chart.py AIRLOCK_BIN CHART_WASM OUTPUT_PNG
(`make docs` runs it; only the standard library is needed.)
"""

import base64
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import threading

PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "src", "operator", "bundled-tools.md")
# How long the server may take to load the tool and answer, in seconds.
TIMEOUT = 120


def page_arguments():
    """The arguments of the `airlock call chart '…'` the page shows."""
    with open(PAGE, encoding="utf-8") as f:
        text = f.read()
    match = re.search(r"airlock call chart '(\{.*?\})'", text, re.S)
    if match is None:
        sys.exit(f"{PAGE}: no `airlock call chart '{{…}}'` example to draw")
    return json.loads(match.group(1))


def png_size(data):
    """(width, height) from a PNG's IHDR chunk, or None if it is no PNG."""
    if len(data) < 24 or data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


def call_chart(binary, component, arguments):
    """The result of one `tools/call` of chart over MCP stdio."""
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "airlock.toml")
        with open(config, "w", encoding="utf-8") as f:
            f.write(f'builtin_settings = false\n[tools.chart]\ncomponent = {json.dumps(component)}\nside_effect = false\n')
        messages = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "airlock-book", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "chart", "arguments": arguments}},
        ]
        server = subprocess.Popen(
            [binary, "--config", config, "serve", "--stdio"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        # A server that never answers is killed, which ends the read below.
        watchdog = threading.Timer(TIMEOUT, server.kill)
        watchdog.start()
        try:
            assert server.stdin is not None and server.stdout is not None
            server.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
            server.stdin.flush()
            for line in server.stdout:
                message = json.loads(line)
                if message.get("id") == 2:
                    return message
            sys.exit(f"airlock serve ended without answering: {server.stderr.read() if server.stderr else ''}")
        finally:
            watchdog.cancel()
            server.kill()
            server.wait(timeout=TIMEOUT)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    binary, component, output = sys.argv[1:]
    arguments = page_arguments()
    answer = call_chart(binary, component, arguments)
    result = answer.get("result") or {}
    if "error" in answer or result.get("isError"):
        sys.exit(f"chart failed: {json.dumps(answer)[:2000]}")
    images = [b for b in result.get("content", []) if b.get("type") == "image" and b.get("mimeType") == "image/png"]
    if len(images) != 1:
        sys.exit(f"chart returned {len(images)} PNG images: {json.dumps(result)[:2000]}")
    data = base64.b64decode(images[0]["data"], validate=True)
    expected = (arguments.get("width", 800), arguments.get("height", 500))
    if png_size(data) != expected:
        sys.exit(f"chart returned a PNG of {png_size(data)}, not {expected}")
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    with open(output, "wb") as f:
        f.write(data)
    print(f"drew {output} ({len(data)} bytes, {expected[0]} × {expected[1]}) with chart")


if __name__ == "__main__":
    main()
