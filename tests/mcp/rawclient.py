"""A minimal newline-delimited JSON-RPC client for `airlock serve --stdio`.

Used where the SDK hides what is on the wire: the exact shape of results,
forged or replayed `requestState`s, and the latency floor without SDK
overhead. Every read has a deadline.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

MODERN = "2026-07-28"
LEGACY = "2025-11-25"


def modern_meta(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """The per-request `_meta` a 2026-07-28 request carries (no initialize)."""
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities if capabilities is not None else {},
    }


class RawStdio:
    """`airlock serve --stdio` with pipes; every stdout line must be JSON."""

    def __init__(self, command: list[str], env: dict[str, str], stderr_path: Path) -> None:
        self._stderr = open(stderr_path, "ab")
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.notifications: list[dict[str, Any]] = []
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout: float = 120.0) -> dict[str, Any]:
        """The next message; a line that is not JSON fails the test."""
        line = self.lines.get(timeout=timeout)
        if line is None:
            raise EOFError("the server closed stdout")
        return json.loads(line)

    def request(self, method: str, params: dict[str, Any] | None = None, timeout: float = 120.0) -> dict[str, Any]:
        """Send a request and return its response (notifications are kept aside)."""
        request_id = self.next_id
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        deadline = time.monotonic() + timeout
        while True:
            reply = self.receive(max(0.0, deadline - time.monotonic()))
            if reply.get("id") == request_id and "method" not in reply:
                return reply
            self.notifications.append(reply)

    def initialize(self, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        reply = self.request("initialize", {"protocolVersion": LEGACY, "capabilities": capabilities or {}, "clientInfo": {"name": "raw", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def close(self) -> None:
        try:
            if self.process.stdin:
                self.process.stdin.close()
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        finally:
            self._stderr.close()

    def __enter__(self) -> RawStdio:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
