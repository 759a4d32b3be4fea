#!/usr/bin/env python3
"""Draw the book's chart with the bundled `chart` tool, through the built
`airlock` binary, so that the picture in the book is the tool's own output.

The arguments are the ones the page shows: the JSON of the first
`airlock call chart '…'` in book/src/operator/bundled-tools.md. The call is
that command (with a configuration of `chart` alone), and `--content-dir`
writes the blocks the tool attached to files; the PNG block's file is
checked to be a PNG of the requested size and copied where the page shows
it.

Usage: python3 book/chart.py AIRLOCK_BIN CHART_WASM OUTPUT_PNG
(`make docs` runs it; only the standard library is needed.)
"""

import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "src", "operator", "bundled-tools.md")
# How long loading the tool and the call may take, in seconds.
TIMEOUT = 300


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


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    binary, component, output = sys.argv[1:]
    arguments = page_arguments()
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "airlock.toml")
        with open(config, "w", encoding="utf-8") as f:
            f.write(f"builtin_settings = false\n[tools.chart]\ncomponent = {json.dumps(component)}\nside_effect = false\n")
        blocks_dir = os.path.join(tmp, "blocks")
        done = subprocess.run(
            [binary, "--config", config, "call", "chart", json.dumps(arguments), "--content-dir", blocks_dir],
            capture_output=True, text=True, timeout=TIMEOUT,
        )
        if done.returncode != 0:
            sys.exit(f"airlock call chart failed ({done.returncode}): {done.stdout[:2000]}{done.stderr[-2000:]}")
        answer = json.loads(done.stdout)
        pngs = [b for b in answer.get("blocks", []) if b.get("kind") == "image" and b.get("media_type") == "image/png"]
        if len(pngs) != 1 or "file" not in pngs[0]:
            sys.exit(f"chart returned {len(pngs)} PNG images: {json.dumps(answer.get('blocks'))[:2000]}")
        with open(pngs[0]["file"], "rb") as f:
            data = f.read()
        expected = (arguments.get("width", 800), arguments.get("height", 500))
        if png_size(data) != expected:
            sys.exit(f"chart returned a PNG of {png_size(data)}, not {expected}")
        os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
        shutil.copyfile(pngs[0]["file"], output)
    print(f"drew {output} ({len(data)} bytes, {expected[0]} × {expected[1]}) with chart")


if __name__ == "__main__":
    main()
