"""The approval page in a real browser: Debian's Chromium driven by
Selenium, people signing in at a real OpenID Provider on loopback
(`oidc-provider`, provider.mjs), the built `airlock` binary serving MCP and
the page, the official MCP Python SDK client making the calls.

Environment (as for tests/mcp): AIRLOCK_BIN, AIRLOCK_TOOLS_DIR,
AIRLOCK_TEST_GUESTS. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.wait import WebDriverWait

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BIN = Path(os.environ.get("AIRLOCK_BIN", ROOT / "target/release/airlock")).resolve()
TOOLS_DIR = Path(os.environ.get("AIRLOCK_TOOLS_DIR", ROOT / "target/guests")).resolve()
TEST_GUESTS = Path(os.environ.get("AIRLOCK_TEST_GUESTS", TOOLS_DIR.parent / "test-guests")).resolve()
NODE = HERE / "node_modules/node/bin/node"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
CACHE_DIR = Path(tempfile.gettempdir()) / f"airlock-approvals-tests-cache-{os.getuid()}"

CLIENT_ID = "airlock"
KEY_ID = "bank-idp-1"
# Bounds on every wait, in seconds.
START_TIMEOUT = 60.0
CALL_TIMEOUT = 120.0
PAGE_TIMEOUT = 30.0

CARD = "Transfer {amount} to account {to}\\nRequested by {caller.principal}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = [p for p in (BIN, TEST_GUESTS / "create_transfer.wasm", NODE, CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.exit(f"missing {', '.join(map(str, missing))}: run `make test-approvals`", returncode=2)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Bank:
    """The identity provider, Airlock in front of the bank's tools, and the
    keys that sign the customers' MCP access tokens."""

    dir: Path
    key: rsa.RSAPrivateKey
    issuer: str
    base: str
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def mcp(self) -> str:
        return f"{self.base}/mcp"

    def token(self, principal: str) -> str:
        """An MCP access token from the bank's identity provider."""
        now = int(time.time())
        body = {"iss": self.issuer, "aud": self.mcp, "sub": principal, "iat": now, "exp": now + 600}
        return jwt.encode(body, self.key, algorithm="RS256", headers={"kid": KEY_ID})

    def audit(self) -> list[dict[str, Any]]:
        path = self.dir / "audit.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def wait_for_line(path: Path, pattern: str, process: subprocess.Popen[bytes]) -> re.Match[str]:
    deadline = time.monotonic() + START_TIMEOUT
    while not (match := re.search(pattern, path.read_text(errors="replace"))):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{process.args!r} did not start (exit {process.poll()}): {path.read_text()}")
        time.sleep(0.05)
    return match


def start(args: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env)


@contextlib.contextmanager
def bank_server(dir: Path, approvals: str = "") -> Iterator[Bank]:
    """The provider and `airlock serve --http` on one free port, the page on
    its origin; `approvals` are more `[approvals]` keys."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key))
    private.update({"kid": KEY_ID, "alg": "RS256", "use": "sig"})
    (dir / "idp-keys.json").write_text(json.dumps({"keys": [private]}))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    processes: list[subprocess.Popen[bytes]] = []
    try:
        idp_log = dir / "idp.log"
        idp = start([str(NODE), str(HERE / "provider.mjs"), str(dir / "idp-keys.json"), CLIENT_ID, f"{base}/approvals/callback"], idp_log)
        processes.append(idp)
        issuer = wait_for_line(idp_log, r"issuer (http://\S+)", idp).group(1)
        policy = ROOT / "tests/fixtures/policy"
        config = dir / "airlock.toml"
        config.write_text(
            f"""
[engine]
cache_dir = "{CACHE_DIR}"

[tools.create_transfer]
component = "{TEST_GUESTS / 'create_transfer.wasm'}"
side_effect = true
confirm = "{CARD}"

[policy]
policies = "{policy / 'bank.cedar'}"
entities = "{policy / 'bank.entities.json'}"

[audit]
file = "audit.jsonl"
record_arguments = true

[http.jwt]
issuer = "{issuer}"
audience = "{base}/mcp"
jwks_url = "{issuer}/jwks"
algorithms = ["RS256"]

[approvals]
mode = "page"
client_id = "{CLIENT_ID}"
{approvals}
"""
        )
        env = {"RUST_LOG": "warn", "PATH": "/usr/bin:/bin"}
        log = dir / "airlock.log"
        airlock = start([str(BIN), "--config", str(config), "serve", "--http", f"127.0.0.1:{port}"], log, env)
        processes.append(airlock)
        wait_for_line(log, r"serving the approval page on", airlock)
        deadline = time.monotonic() + START_TIMEOUT
        while httpx2.get(f"{base}/readyz").status_code != 200:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        yield Bank(dir=dir, key=key, issuer=issuer, base=base, processes=processes)
    finally:
        for process in processes:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bank]:
    with bank_server(tmp_path_factory.mktemp("bank")) as bank:
        yield bank


@contextlib.asynccontextmanager
async def session(bank: Bank, principal: str, **client_args: Any) -> AsyncIterator[Client]:
    """An MCP client signed in as `principal` (2025-11-25: the server asks
    with `elicitation/create`)."""
    timeout = httpx2.Timeout(30.0, read=CALL_TIMEOUT)
    headers = {"Authorization": f"Bearer {bank.token(principal)}"}
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        transport = streamable_http_client(bank.mcp, http_client=http)
        async with Client(transport, mode=client_args.pop("mode", "legacy"), read_timeout_seconds=CALL_TIMEOUT, cache=None, **client_args) as client:
            yield client


class Browser:
    """One person's browser: a headless Chromium with a profile of its own."""

    def __init__(self) -> None:
        options = webdriver.ChromeOptions()
        for flag in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=900,900",
        ):
            options.add_argument(flag)
        options.binary_location = str(CHROMIUM)
        self.driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=str(CHROMEDRIVER)))
        self.driver.set_page_load_timeout(PAGE_TIMEOUT)

    def quit(self) -> None:
        self.driver.quit()

    def wait_for(self, by: str, value: str) -> Any:
        return WebDriverWait(self.driver, PAGE_TIMEOUT).until(expected_conditions.presence_of_element_located((by, value)))

    def open(self, link: str, person: str) -> None:
        """Open `link`, signing in as `person` at the provider if asked: its
        sign-in form, then its consent form the first time. Only the
        provider's buttons are pressed, each once, waiting for the page it
        leads to (never a button of Airlock's page)."""
        self.driver.get(link)
        ours = link.split("/approvals/")[0] + "/"
        for _ in range(4):
            here = self.driver.current_url
            if here.startswith(ours):
                return
            forms = self.driver.find_elements(By.NAME, "login")
            if forms:
                forms[0].send_keys(person)
                self.driver.find_element(By.NAME, "password").send_keys("any")
            self.wait_for(By.CSS_SELECTOR, "button[type=submit]").click()
            WebDriverWait(self.driver, PAGE_TIMEOUT).until(lambda d: d.current_url != here)
        raise AssertionError(f"never got back to {ours}: {self.driver.current_url}")

    def text(self, element_id: str) -> str:
        return self.wait_for(By.ID, element_id).text

    def page(self) -> str:
        return self.driver.page_source


@pytest.fixture
def browsers() -> Iterator[Any]:
    opened: list[Browser] = []

    def new() -> Browser:
        browser = Browser()
        opened.append(browser)
        return browser

    yield new
    for browser in opened:
        browser.quit()
