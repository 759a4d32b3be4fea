"""Shared fixtures for the end-to-end MCP tests.

The tests drive the real `airlock` binary with the official MCP Python SDK.
Environment:

- AIRLOCK_BIN: the binary (default target/release/airlock)
- AIRLOCK_TOOLS_DIR: the bundled tool components (default target/guests)
- AIRLOCK_TEST_GUESTS: the test fixtures (default: test-guests beside the tools dir)

Servers are started by the tests themselves, on stdio or on 127.0.0.1 with
an ephemeral port, and stopped at the end of each test. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("AIRLOCK_BIN", ROOT / "target/release/airlock")).resolve()
TOOLS_DIR = Path(os.environ.get("AIRLOCK_TOOLS_DIR", ROOT / "target/guests")).resolve()
TEST_GUESTS = Path(os.environ.get("AIRLOCK_TEST_GUESTS", TOOLS_DIR.parent / "test-guests")).resolve()

TOKEN = "test-token-0123456789-alice"
OTHER_TOKEN = "test-token-0123456789-bob"

# Bounds on every wait, in seconds: liveness bounds for a loaded machine (a
# wait ends on the state it waits for, long before these).
START_TIMEOUT = 120.0
CALL_TIMEOUT = 120.0

# Compiled components are cached across server starts (one compile per
# component per run instead of one per test).
CACHE_DIR = Path(tempfile.gettempdir()) / f"airlock-mcp-tests-cache-{os.getuid()}"

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
# `mode` for mcp.Client: "legacy" runs the initialize handshake; "auto"
# probes server/discover first, which Airlock answers, so it ends on 2026-07-28.
MODES = {"legacy": LEGACY, "auto": MODERN}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = [p for p in (BIN, TOOLS_DIR / "echo.wasm", TEST_GUESTS / "hostile.wasm") if not p.exists()]
    if missing:
        pytest.exit(f"missing {', '.join(map(str, missing))}: run `make build` first", returncode=2)


@pytest.fixture(scope="session", autouse=True)
def warm_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Compile every component once, so that servers start fast (the SDK's
    server/discover probe gives a server 10 s to answer)."""
    setup = write_config(tmp_path_factory.mktemp("warm"))
    subprocess.run([str(BIN), *setup.args(), "tools"], check=True, capture_output=True, timeout=600, env=server_env())


@pytest.fixture(autouse=True)
def no_page_left(tmp_path: Path) -> Iterator[None]:
    """A stdio server that ends while approvals wait hands its approval page
    to a process of its own (`airlock __page`), which serves it until none
    waits: a test's page process ends with the test."""
    yield
    stop_page_processes(tmp_path)


def stop_page_processes(dir: Path) -> None:
    """Stop every `airlock __page` process whose config is under `dir`:
    SIGTERM, then SIGKILL after 10 s."""
    mine = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"__page" in argv and any(str(dir).encode() in arg for arg in argv):
            mine.append(int(proc.name))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in mine:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 10
        while mine and time.monotonic() < deadline:
            mine = [pid for pid in mine if Path(f"/proc/{pid}").exists() and not zombie(pid)]
            time.sleep(0.05)


def zombie(pid: int) -> bool:
    """Whether `pid` has ended and only waits to be reaped."""
    try:
        return (Path(f"/proc/{pid}") / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRLOCK_")}
    env["AIRLOCK_TOOLS_DIR"] = str(TOOLS_DIR)
    env.setdefault("RUST_LOG", "warn")
    return env


@dataclass
class Setup:
    """A config file in a temporary directory."""

    dir: Path
    config: Path
    tool_dir: Path

    def args(self) -> list[str]:
        return ["--config", str(self.config)]

    def audit(self) -> list[dict[str, Any]]:
        """The audit records written so far (with `audit=True`)."""
        path = self.dir / "audit.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def write_config(dir: Path, *, tool_dir: Path | None = None, tokens: bool = False, origins: tuple[str, ...] = (), audit: bool = False, transfer_keys: str = "") -> Setup:
    """A config: the bundled tools (or `tool_dir`), hostile and create_transfer
    fixtures, create_transfer with side effects (the default policy asks);
    `transfer_keys` are TOML lines added to `[tools.create_transfer]`."""
    tool_dir = tool_dir or TOOLS_DIR
    text = f"""
        tool_dirs = [{str(tool_dir)!r}]

        [engine]
        cache_dir = {str(CACHE_DIR)!r}

        [tools.echo]
        side_effect = false
        concurrency_safe = true

        [tools.json_query]
        side_effect = false
        concurrency_safe = true

        [tools.chart]
        side_effect = false
        concurrency_safe = true

        # Exclusive (not concurrency_safe) and a long deadline: a call after a
        # cancelled sleep only runs promptly if the sleeping guest was interrupted.
        [tools.hostile]
        component = {str(TEST_GUESTS / "hostile.wasm")!r}
        side_effect = false
        timeout_ms = 120000

        [tools.create_transfer]
        component = {str(TEST_GUESTS / "create_transfer.wasm")!r}
        side_effect = true
    """
    text = textwrap.dedent(text).replace("'", '"') + transfer_keys
    if audit:
        text += f'\n[audit]\nfile = "{dir / "audit.jsonl"}"\n'
    if tokens or origins:
        text += "\n[http]\n"
    if tokens:
        text += f'tokens = [{{ token = "{TOKEN}", principal = "alice" }}, {{ token = "{OTHER_TOKEN}", principal = "bob" }}]\n'
    if origins:
        text += "allowed_origins = [" + ", ".join(f'"{o}"' for o in origins) + "]\n"
    config = dir / "airlock.toml"
    config.write_text(text)
    return Setup(dir=dir, config=config, tool_dir=tool_dir)


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    return write_config(tmp_path)


@dataclass
class HttpServer:
    """A running `airlock serve --http`."""

    process: subprocess.Popen[bytes]
    url: str
    stderr_path: Path
    host_port: str = field(init=False)

    def __post_init__(self) -> None:
        self.host_port = self.url.split("//", 1)[1].split("/", 1)[0]

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


@contextlib.contextmanager
def http_server(setup: Setup, *extra: str, principal: str = "local") -> Iterator[HttpServer]:
    """Start `airlock serve --http 127.0.0.1:0` and read the bound URL from stderr."""
    stderr_path = setup.dir / f"http-stderr-{time.monotonic_ns()}.log"
    with open(stderr_path, "wb") as stderr:
        process = subprocess.Popen(
            [str(BIN), *setup.args(), "serve", "--http", "127.0.0.1:0", "--principal", principal, *extra],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=server_env(),
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        url = None
        while url is None:
            match = re.search(r"on (http://\S+/mcp)", stderr_path.read_text(errors="replace"))
            if match:
                url = match.group(1)
            elif process.poll() is not None:
                raise RuntimeError(f"airlock exited with {process.returncode}: {stderr_path.read_text()}")
            elif time.monotonic() > deadline:
                raise TimeoutError(f"airlock did not start in {START_TIMEOUT}s: {stderr_path.read_text()}")
            else:
                time.sleep(0.05)
        yield HttpServer(process=process, url=url, stderr_path=stderr_path)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def stdio_params(setup: Setup, *extra: str, principal: str = "local") -> StdioServerParameters:
    return StdioServerParameters(
        command=str(BIN),
        args=[*setup.args(), "serve", "--stdio", "--principal", principal, *extra],
        env=server_env(),
    )


@contextlib.asynccontextmanager
async def http_transport(url: str, token: str | None = None) -> AsyncIterator[Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = httpx2.Timeout(CALL_TIMEOUT, read=300.0)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams


@contextlib.asynccontextmanager
async def connect(
    transport: str,
    mode: str,
    setup: Setup,
    *extra: str,
    principal: str = "local",
    token: str | None = None,
    server: HttpServer | None = None,
    **client_args: Any,
) -> AsyncIterator[Client]:
    """An `mcp.Client` connected over `transport` ("stdio" or "http") with
    `mode` ("legacy" or "auto"). For http, pass a running `server` or one is
    started for the duration."""
    client_args.setdefault("read_timeout_seconds", CALL_TIMEOUT)
    # A response cache would hide list changes between our own calls.
    client_args.setdefault("cache", None)
    with anyio.fail_after(START_TIMEOUT):
        if transport == "stdio":
            errlog = open(setup.dir / "stdio-stderr.log", "a")
            try:
                async with Client(stdio_client(stdio_params(setup, *extra, principal=principal), errlog=errlog), mode=mode, **client_args) as client:
                    assert client.protocol_version == MODES[mode]
                    yield client
            finally:
                errlog.close()
        else:
            with contextlib.ExitStack() as stack:
                if server is None:
                    server = stack.enter_context(http_server(setup, *extra, principal=principal))
                async with Client(http_transport(server.url, token), mode=mode, **client_args) as client:
                    assert client.protocol_version == MODES[mode]
                    yield client


@contextlib.asynccontextmanager
async def raw_session_stdio(setup: Setup, *extra: str) -> AsyncIterator[ClientSession]:
    """A bare `mcp.ClientSession` over `stdio_client`, initialized (legacy)."""
    async with stdio_client(stdio_params(setup, *extra), errlog=sys.stderr) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT) as session:
            await session.initialize()
            yield session


def copy_tool(source: Path, dir: Path) -> Path:
    """Copy a component into a watched tool directory (a plain copy, as an
    operator would do it)."""
    target = dir / source.name
    shutil.copyfile(source, target)
    return target
