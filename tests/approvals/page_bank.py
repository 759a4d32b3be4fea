"""The bank behind an approval page, for the browser tests and the demo:
a real OpenID Provider on loopback (`oidc-provider`, provider.mjs) where
people sign in, or none (then each person's passkey answers, enrolled
through the operator's one-time link), the built `airlock` binary serving
MCP and the page, the official MCP Python SDK client making the calls, and
Debian's Chromium driven by Selenium as each person's browser, with
WebDriver's virtual authenticator as the passkey device.

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

import anyio
import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp import types
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.virtual_authenticator import Protocol, Transport, VirtualAuthenticatorOptions
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
START_TIMEOUT = 120.0
CALL_TIMEOUT = 120.0
PAGE_TIMEOUT = 120.0

CARD = "Transfer {amount} to account {to}\\nRequested by {caller.principal}"
# The static bearer tokens of the bank's customers where no provider signs
# them in (and of `static` principals beside one).
STATIC_TOKEN = "page-bank-static-token-{}-0123456789"


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
    issuer: str | None
    base: str
    page: str
    static: tuple[str, ...] = ()
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def mcp(self) -> str:
        return f"{self.base}/mcp"

    @property
    def config(self) -> Path:
        return self.dir / "airlock.toml"

    def token(self, principal: str) -> str:
        """An MCP bearer token: the principal's static token where there is
        one (no provider, or one of `static`), else an access token from the
        bank's identity provider."""
        if self.issuer is None or principal in self.static:
            return STATIC_TOKEN.format(principal)
        now = int(time.time())
        body = {"iss": self.issuer, "aud": self.mcp, "sub": principal, "iat": now, "exp": now + 600}
        return jwt.encode(body, self.key, algorithm="RS256", headers={"kid": KEY_ID})

    def audit(self) -> list[dict[str, Any]]:
        path = self.dir / "audit.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []

    def enrolment_link(self, principal: str) -> str:
        """The one-time link `airlock approvals enroll` makes for `principal`."""
        out = subprocess.run(
            [str(BIN), "--config", str(self.config), "approvals", "enroll", principal, "--url", self.page],
            capture_output=True, text=True, timeout=START_TIMEOUT, env={"PATH": "/usr/bin:/bin"},
        )
        assert out.returncode == 0, out.stderr
        match = re.search(r"http://\S+/approvals/enroll/\S+", out.stdout)
        assert match, out.stdout
        return match.group(0)


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
def bank_server(
    dir: Path, approvals: str = "", signin: bool = True, static: tuple[str, ...] = (), http: str = ""
) -> Iterator[Bank]:
    """`airlock serve --http` on one free port, the page on its origin;
    with `signin`, the provider people sign in at (else their passkeys
    answer); `approvals` are more `[approvals]` keys, `http` more `[http]`
    keys; `static` principals have static bearer tokens beside the
    provider's."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    page = f"http://localhost:{port}"
    processes: list[subprocess.Popen[bytes]] = []
    try:
        issuer = None
        jwt_section = ""
        if signin:
            private = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key))
            private.update({"kid": KEY_ID, "alg": "RS256", "use": "sig"})
            (dir / "idp-keys.json").write_text(json.dumps({"keys": [private]}))
            idp_log = dir / "idp.log"
            idp = start([str(NODE), str(HERE / "provider.mjs"), str(dir / "idp-keys.json"), CLIENT_ID, f"{page}/approvals/callback"], idp_log)
            processes.append(idp)
            issuer = wait_for_line(idp_log, r"issuer (http://\S+)", idp).group(1)
            jwt_section = f"""
[http.jwt]
issuer = "{issuer}"
audience = "{base}/mcp"
jwks_url = "{issuer}/jwks"
algorithms = ["RS256"]
"""
        people = ("alice", "bob", "carol", "mallory") if not signin else static
        tokens = ", ".join(f'{{ token = "{STATIC_TOKEN.format(p)}", principal = "{p}" }}' for p in people)
        http = f"\n[http]\ntokens = [{tokens}]\n{http}" if people or http else ""
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
{http}{jwt_section}
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
        yield Bank(dir=dir, key=key, issuer=issuer, base=base, page=page, static=static, processes=processes)
    finally:
        for process in processes:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


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
    """One person's browser: a headless Chromium with a profile of its own,
    and their passkey device: WebDriver's virtual authenticator (CTAP2, a
    platform authenticator with resident keys that verifies its user, as a
    phone or laptop with a fingerprint reader does)."""

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
        self.driver.add_virtual_authenticator(
            VirtualAuthenticatorOptions(
                protocol=Protocol.CTAP2,
                transport=Transport.INTERNAL,
                has_resident_key=True,
                has_user_verification=True,
                is_user_verified=True,
                is_user_consenting=True,
            )
        )

    def passkeys(self) -> list[str]:
        """The credential ids (base64url) on this browser's device."""
        return [c.id.rstrip("=") for c in self.driver.get_credentials()]

    def enrol(self, link: str) -> str:
        """Open an enrolment link and add a passkey: the page says so."""
        self.driver.get(link)
        self.wait_for(By.ID, "enrol").click()
        return self.text("notice")

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


def kind_of(result: types.CallToolResult) -> str:
    return (result.meta or {}).get("airlock/kind", "ok" if not result.is_error else "?")


def text_of(result: types.CallToolResult) -> str:
    return result.content[0].text if result.content and result.content[0].type == "text" else ""


def link_in(text: str) -> str:
    match = re.search(r"http://\S+/approvals/\S+", text)
    assert match, text
    return match.group(0)


class Person:
    """The client's elicitation callback: the account holder's browser
    opens the link it is handed, signs in, reads the card and answers."""

    def __init__(self, browser: Browser, principal: str, decision: str, screenshot: Path | None = None) -> None:
        self.browser, self.principal, self.decision = browser, principal, decision
        self.screenshot = screenshot
        self.cards: list[str] = []

    def answer(self, link: str) -> None:
        self.browser.open(link, self.principal)
        self.cards.append(self.browser.text("card"))
        if self.decision == "approve" and self.screenshot and not self.screenshot.exists():
            self.screenshot.parent.mkdir(parents=True, exist_ok=True)
            self.browser.driver.save_screenshot(str(self.screenshot))
        self.browser.wait_for(By.ID, self.decision).click()
        self.browser.wait_for(By.ID, "notice")

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert params.mode == "url", params
        await anyio.to_thread.run_sync(self.answer, params.url)
        return types.ElicitResult(action="accept")


async def pending_link(bank: Bank, principal: str, arguments: dict[str, Any]) -> str:
    """Propose a call with a client that cannot open links: the link its
    result gives the model to relay."""
    async with session(bank, principal) as client:
        result = await client.call_tool("create_transfer", arguments)
    assert kind_of(result) == "approval_required", text_of(result)
    return link_in(text_of(result))


async def call(bank: Bank, principal: str, arguments: dict[str, Any]) -> types.CallToolResult:
    async with session(bank, principal) as client:
        return await client.call_tool("create_transfer", arguments)
