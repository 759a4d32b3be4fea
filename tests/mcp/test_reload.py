"""`serve --watch`: what a reload changes while clients are connected.

Every file the host state is built from is watched: a tightened policy
denies the next call, a broken one keeps the old one serving (and the log
says why), a token added to the config (or written to its `token_file`) is
accepted and a removed one refused. A config change during a steady stream
of audited calls, with the audit log written beside the config, is in force
within a second of the write.

Waits are bounded polls ("the next call is served" within a generous
deadline); the one time asserted is the issue's bound of 1 s from a config
write to the first call that sees it, which the host's RELOAD_DEBOUNCE
(100 ms) and RELOAD_MAX_WAIT (300 ms) keep with a wide margin.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import httpx2
import pytest

from conftest import CACHE_DIR, CALL_TIMEOUT, LEGACY, TOOLS_DIR, Setup, connect, http_server

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# Liveness bound for a reload to show, in seconds.
RELOAD_DEADLINE = 30.0
# The bound from a config write to the new config in force.
IN_FORCE_WITHIN = 1.0

ALLOW_ECHO = """
@id("echo-allowed")
permit (principal, action == Airlock::Action::"call", resource == Airlock::Tool::"echo");
"""

DENY_ECHO = """
@id("echo-forbidden")
@reason("echo is switched off")
forbid (principal, action == Airlock::Action::"call", resource == Airlock::Tool::"echo");
"""

TOKEN_A = "reload-token-0123456789-alice"
TOKEN_B = "reload-token-0123456789-bob"
TOKEN_C = "reload-token-0123456789-carol"


def small_config(dir: Path, *, policy: str | None = None, http: str = "", audit: bool = True) -> Setup:
    """Only `echo` (a reload takes milliseconds), the audit log beside the
    config, and optionally a policy file and an `[http]` section."""
    lines = [
        "[engine]",
        f'cache_dir = "{CACHE_DIR}"',
        "[tools.echo]",
        f'component = "{TOOLS_DIR / "echo.wasm"}"',
        "side_effect = false",
        "concurrency_safe = true",
    ]
    if audit:
        lines += ["[audit]", f'file = "{dir / "audit.jsonl"}"']
    if policy is not None:
        lines += ["[policy]", f'policies = "{dir / policy}"']
    config = dir / "airlock.toml"
    config.write_text("\n".join(lines) + "\n" + http)
    return Setup(dir=dir, config=config, tool_dir=TOOLS_DIR)


def kind_of(result) -> str:
    return (result.meta or {}).get("airlock/kind", "ok") if result.is_error else "ok"


async def echo_kind(client) -> str:
    return kind_of(await client.call_tool("echo", {"text": "hi"}))


async def until_kind(client, kind: str) -> None:
    with anyio.fail_after(RELOAD_DEADLINE):
        while await echo_kind(client) != kind:
            await anyio.sleep(0.05)


def stderr_of(setup: Setup) -> str:
    path = setup.dir / "stdio-stderr.log"
    return path.read_text(errors="replace") if path.exists() else ""


async def test_a_tightened_policy_denies_the_next_call(tmp: Path) -> None:
    (tmp / "policy.cedar").write_text(ALLOW_ECHO)
    setup = small_config(tmp, policy="policy.cedar")
    async with connect("stdio", "legacy", setup, "--watch") as client:
        assert await echo_kind(client) == "ok"
        (tmp / "policy.cedar").write_text(DENY_ECHO)
        await until_kind(client, "denied")
        result = await client.call_tool("echo", {"text": "hi"})
        assert "echo is switched off" in result.content[0].text, result


async def test_a_broken_policy_keeps_the_old_one_serving(tmp: Path) -> None:
    (tmp / "policy.cedar").write_text(DENY_ECHO)
    setup = small_config(tmp, policy="policy.cedar")
    async with connect("stdio", "legacy", setup, "--watch") as client:
        assert await echo_kind(client) == "denied"
        (tmp / "policy.cedar").write_text("permit (principal, action, resource")
        with anyio.fail_after(RELOAD_DEADLINE):
            while "reload failed" not in stderr_of(setup):
                await anyio.sleep(0.05)
        log = stderr_of(setup)
        assert "policy.cedar" in log, log
        assert await echo_kind(client) == "denied", "the old policy keeps serving"
        # Fixed again: the reload goes through.
        (tmp / "policy.cedar").write_text(ALLOW_ECHO)
        await until_kind(client, "ok")


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
POST_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def status_with(url: str, token: str) -> int:
    """The status of an `initialize` with `token` (a session it opens is
    closed again, so that polling stays under the http_sessions quota)."""
    auth = {"Authorization": f"Bearer {token}"}
    response = httpx2.post(url, json=INIT, headers={**POST_HEADERS, **auth}, timeout=CALL_TIMEOUT)
    if session := response.headers.get("mcp-session-id"):
        httpx2.delete(url, headers={**auth, "Mcp-Session-Id": session, "MCP-Protocol-Version": LEGACY}, timeout=CALL_TIMEOUT)
    return response.status_code


def until_status(url: str, token: str, status: int) -> None:
    deadline = time.monotonic() + RELOAD_DEADLINE
    while (got := status_with(url, token)) != status:
        assert time.monotonic() < deadline, f"still {got} for {token}, expected {status}"
        time.sleep(0.05)


def tokens(*entries: str) -> str:
    return "[http]\ntokens = [" + ", ".join(entries) + "]\n"


def test_a_new_token_works_and_a_removed_one_is_refused(tmp: Path) -> None:
    token_file = tmp / "carol.token"
    token_file.write_text(TOKEN_C + "\n")
    setup = small_config(tmp, http=tokens(f'{{ token = "{TOKEN_A}", principal = "alice" }}'))
    with http_server(setup, "--watch") as server:
        assert status_with(server.url, TOKEN_A) == 200
        assert status_with(server.url, TOKEN_B) == 401
        # In the config: bob's token replaces alice's.
        setup = small_config(tmp, http=tokens(f'{{ token = "{TOKEN_B}", principal = "bob" }}'))
        until_status(server.url, TOKEN_B, 200)
        assert status_with(server.url, TOKEN_A) == 401, "a removed token is refused"
        # From a token file, which is watched too.
        setup = small_config(
            tmp,
            http=tokens(
                f'{{ token = "{TOKEN_B}", principal = "bob" }}', f'{{ token_file = "{token_file}", principal = "carol" }}'
            ),
        )
        until_status(server.url, TOKEN_C, 200)
        token_file.write_text(TOKEN_A + "\n")
        until_status(server.url, TOKEN_A, 200)
        assert status_with(server.url, TOKEN_C) == 401, "the old content of the token file is refused"
        assert status_with(server.url, TOKEN_B) == 200


async def test_a_config_change_under_a_steady_call_stream_is_in_force_within_a_second(tmp: Path) -> None:
    (tmp / "deny.cedar").write_text(DENY_ECHO)
    setup = small_config(tmp)
    async with connect("stdio", "legacy", setup, "--watch") as client:
        # A steady stream of audited calls: every one appends to the audit
        # log and its head file, in the config's directory.
        for _ in range(50):
            assert await echo_kind(client) == "ok"
        audit_before = (tmp / "audit.jsonl").stat().st_size
        written = time.monotonic()
        small_config(tmp, policy="deny.cedar")
        calls = 0
        with anyio.fail_after(RELOAD_DEADLINE):
            while (kind := await echo_kind(client)) == "ok":
                calls += 1
        seen = time.monotonic() - written
        assert kind == "denied", kind
        assert (tmp / "audit.jsonl").stat().st_size > audit_before
        print(f"config write to first call under the new config: {seen * 1000:.0f} ms ({calls} calls in between)")
        assert calls > 0, "the stream kept running while the config changed"
        assert seen <= IN_FORCE_WITHIN, f"the new config took {seen:.3f} s to be in force under {calls} calls"
