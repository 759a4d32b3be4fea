"""Shared fixtures for the agent-framework tests.

The tests drive the real `airlock` binary through the MCP integrations of
the OpenAI Agents SDK, LangChain's MCP adapters (with LangGraph) and
Pydantic AI, with scripted models instead of an LLM: nothing leaves the
machine. Environment (as for tests/mcp):

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
import subprocess
import tempfile
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("AIRLOCK_BIN", ROOT / "target/release/airlock")).resolve()
TOOLS_DIR = Path(os.environ.get("AIRLOCK_TOOLS_DIR", ROOT / "target/guests")).resolve()
TEST_GUESTS = Path(os.environ.get("AIRLOCK_TEST_GUESTS", TOOLS_DIR.parent / "test-guests")).resolve()

# Bounds on every wait, in seconds.
START_TIMEOUT = 60.0
CALL_TIMEOUT = 60.0

# The same compile cache as tests/mcp: `make test` runs both, and each
# component (run_python takes ~30 s) is then compiled once.
CACHE_DIR = Path(tempfile.gettempdir()) / f"airlock-mcp-tests-cache-{os.getuid()}"

# The bundled tools every test expects to be served.
BUNDLED = ["chart", "echo", "http_fetch", "json_query", "list_dir", "read_file", "run_js", "run_python", "search_files", "write_file"]


# One call of every bundled tool, and whether Airlock answers with a result
# (True) or an error result (False). The three file tools read a granted
# directory; write_file and http_fetch have side effects, which the default
# policy asks about, and these clients confirm nothing: declined (before
# anything runs; the URL is a closed local port all the same).
CALLS: dict[str, tuple[dict[str, Any], bool]] = {
    "echo": ({"text": "hi"}, True),
    "chart": ({"kind": "bar", "series": [{"name": "a", "values": [1, 2]}], "width": 200, "height": 120}, True),
    "json_query": ({"json": {"a": [1, 2]}, "query": "a[1]"}, True),
    "run_python": ({"code": "6 * 7"}, True),
    "run_js": ({"code": "6 * 7"}, True),
    "read_file": ({"path": "/data/note.txt"}, True),
    "list_dir": ({"path": "/data"}, True),
    "search_files": ({"path": "/data", "pattern": "granted"}, True),
    "write_file": ({"path": "/data/new.txt", "content": "x"}, False),
    "http_fetch": ({"url": "http://127.0.0.1:9/"}, False),
}


def write_granted_config(dir: Path) -> Path:
    """The bundled tools, the file tools granted `/data` (a note in it)."""
    data = dir / "data"
    data.mkdir()
    (data / "note.txt").write_text("granted text\n")
    grant = f'dirs = [{{ host = "{data}", guest = "/data" }}]'
    text = f"""
        tool_dirs = ["{TOOLS_DIR}"]

        [engine]
        cache_dir = "{CACHE_DIR}"

        [tools.read_file]
        {grant}

        [tools.list_dir]
        {grant}

        [tools.search_files]
        {grant}
    """
    config = dir / "airlock.toml"
    config.write_text(textwrap.dedent(text))
    return config


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = [p for p in (BIN, TOOLS_DIR / "echo.wasm", TEST_GUESTS / "hostile.wasm") if not p.exists()]
    if missing:
        pytest.exit(f"missing {', '.join(map(str, missing))}: run `make build` first", returncode=2)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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

    def args(self) -> list[str]:
        return ["--config", str(self.config)]

    def serve_args(self) -> list[str]:
        """The arguments of `airlock serve --stdio` with this config."""
        return [*self.args(), "serve", "--stdio"]


def write_config(dir: Path) -> Setup:
    """The bundled tools (with their built-in settings) plus two fixtures:
    `hostile`, whose `sleep` attack is a call that takes as long as asked,
    and `create_transfer`, a side effect that the default policy asks about
    (declined: none of these clients confirms)."""
    text = f"""
        tool_dirs = [{str(TOOLS_DIR)!r}]

        [engine]
        cache_dir = {str(CACHE_DIR)!r}

        [tools.hostile]
        component = {str(TEST_GUESTS / "hostile.wasm")!r}
        side_effect = false
        timeout_ms = 120000

        [tools.create_transfer]
        component = {str(TEST_GUESTS / "create_transfer.wasm")!r}
        side_effect = true
    """
    config = dir / "airlock.toml"
    config.write_text(textwrap.dedent(text).replace("'", '"'))
    return Setup(dir=dir, config=config)


@pytest.fixture(scope="session")
def session_setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    """One config for the whole run; `airlock tools` compiles every component
    once, so that each server the tests start serves all tools at once."""
    setup = write_config(tmp_path_factory.mktemp("airlock"))
    subprocess.run([str(BIN), *setup.args(), "tools"], check=True, capture_output=True, timeout=600, env=server_env())
    return setup


@pytest.fixture
def setup(session_setup: Setup) -> Setup:
    return session_setup


@dataclass
class HttpServer:
    """A running `airlock serve --http`."""

    process: subprocess.Popen[bytes]
    url: str


@contextlib.contextmanager
def http_server(setup: Setup) -> Iterator[HttpServer]:
    """Start `airlock serve --http 127.0.0.1:0` and read the bound URL from stderr."""
    stderr_path = setup.dir / f"http-stderr-{time.monotonic_ns()}.log"
    with open(stderr_path, "wb") as stderr:
        process = subprocess.Popen(
            [str(BIN), *setup.args(), "serve", "--http", "127.0.0.1:0"],
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
        yield HttpServer(process=process, url=url)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture
def http(setup: Setup) -> Iterator[HttpServer]:
    with http_server(setup) as server:
        yield server


def airlock_strict_schemas(setup: Setup) -> dict[str, dict[str, Any]]:
    """`airlock schema --format openai --strict`: tool name -> its function
    entry (`name`, `description`, `parameters`, `strict`)."""
    out = subprocess.run(
        [str(BIN), *setup.args(), "schema", "--format", "openai", "--strict"],
        check=True,
        capture_output=True,
        timeout=120,
        env=server_env(),
    )
    return {entry["function"]["name"]: entry["function"] for entry in json.loads(out.stdout)}


def assert_names_available_tools(text: str, asked: str, closest: str) -> None:
    """`text` is Airlock's unknown-tool error: it names the tool that was
    asked for and lists the available ones, closest first."""
    assert text.startswith("error (unknown_tool): "), text
    assert f"there is no tool named {json.dumps(asked)}" in text, text
    match = re.search(r"available tools[^:]*: ([A-Za-z0-9_-]+)", text, re.IGNORECASE)
    assert match and match.group(1) == closest, text
