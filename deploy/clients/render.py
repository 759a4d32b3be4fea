#!/usr/bin/env python3
"""Fill a bundle template: `render.py TEMPLATE OUT KEY=VALUE...` replaces
each `@KEY@` in TEMPLATE with VALUE and writes OUT; a template that names a
key no argument gives fails, as does OUT when it is not valid JSON. Two
values are computed: `tools=BINARY:CONFIG` gives the JSON list of the
tools BINARY serves on CONFIG (name and description, the manifest's
`tools`), `sha256=FILE` the hex SHA-256 of FILE."""

import hashlib
import json
import re
import subprocess
import sys


def value(key: str, raw: str) -> str:
    if key == "TOOLS":
        binary, config = raw.split(":", 1)
        listed = subprocess.run([binary, "--config", config, "schema", "--format", "mcp"], check=True, capture_output=True, text=True).stdout
        tools = json.loads(listed)
        tools = tools.get("tools", tools) if isinstance(tools, dict) else tools
        return json.dumps([{"name": t["name"], "description": t["description"].split("\n")[0]} for t in tools], indent=2)
    if key == "MCPB_SHA256":
        with open(raw, "rb") as file:
            return hashlib.sha256(file.read()).hexdigest()
    return raw


def main() -> int:
    template, out, *pairs = sys.argv[1:]
    values = {}
    for pair in pairs:
        key, _, raw = pair.partition("=")
        values[key] = value(key, raw)
    with open(template, encoding="utf-8") as file:
        text = file.read()
    missing = sorted(set(re.findall(r"@([A-Z0-9_]+)@", text)) - set(values))
    if missing:
        print(f"{template}: no value for {', '.join(missing)}", file=sys.stderr)
        return 2
    for key, text_value in values.items():
        text = text.replace(f"@{key}@", text_value)
    json.loads(text)
    with open(out, "w", encoding="utf-8") as file:
        file.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
