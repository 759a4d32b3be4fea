"""Passkeys on the approval page, in a real browser: Chromium with
WebDriver's virtual authenticator (CTAP2, internal transport, resident keys,
user verification on). With no OpenID provider configured the page takes
an answer only from a passkey: the person enrols one through the
operator's one-time link, approves a call with it and declines another;
what the MCP client holds (the link, the page, its form, through a reverse
proxy too) approves nothing. With a provider and `require_passkey`, the
person signs in and adds a passkey after signing in."""

from __future__ import annotations

import contextlib
import dataclasses
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from selenium.webdriver.common.by import By

from page_bank import (
    ROOT,
    START_TIMEOUT,
    Bank,
    Person,
    bank_server,
    call,
    free_port,
    kind_of,
    pending_link,
    session,
    text_of,
)
from softkey import answer_form, enrol_form, origin_of

pytestmark = pytest.mark.anyio

# Where the passkey page's screenshot goes: the book shows it
# (book/src/operator/approvals.md; copy it to book/src/operator/images/).
SCREENSHOT = ROOT / "target/approvals/passkey-page.png"
HAPROXY = Path("/usr/sbin/haproxy")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def bank(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bank]:
    with bank_server(tmp_path_factory.mktemp("passkey-bank"), signin=False) as bank:
        yield bank


async def test_a_person_enrols_a_passkey_approves_one_call_and_declines_another(bank: Bank, browsers: Any) -> None:
    browser = browsers()
    said = await anyio.to_thread.run_sync(browser.enrol, bank.enrolment_link("alice"))
    assert "passkey" in said and "answers approvals" in said, said
    [credential] = browser.passkeys()
    # The page as alice sees it, for the book.
    arguments = {"to": "acc-bob", "amount": 20000}
    link = await pending_link(bank, "alice", arguments)
    await anyio.to_thread.run_sync(browser.driver.get, link)
    browser.wait_for(By.ID, "approve")
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    browser.driver.save_screenshot(str(SCREENSHOT))
    assert "Transfer 20000 to account acc-bob" in browser.text("card")
    # Approved with her passkey: the call waiting on it runs.
    alice = Person(browser, "alice", "approve")
    async with session(bank, "alice", elicitation_callback=alice) as client:
        result = await client.call_tool("create_transfer", {"to": "acc-bob", "amount": 25000})
    assert not result.is_error, text_of(result)
    assert "You approved this call" in browser.page(), browser.page()
    note = [r for r in bank.audit() if r.get("approval") and r["arguments"]["amount"] == 25000][-1]["approval"]
    assert (note["by"], note["proof"], note["credential"]) == ("alice", "passkey", credential), note
    # Declined with it: it never runs.
    alice = Person(browser, "alice", "decline")
    async with session(bank, "alice", elicitation_callback=alice) as client:
        result = await client.call_tool("create_transfer", {"to": "acc-mallory", "amount": 40000})
    assert kind_of(result) == "declined", text_of(result)
    assert "You declined this call" in browser.page()
    # The first link, never answered, still waits: seeing the page
    # answers nothing.
    assert kind_of(await call(bank, "alice", arguments)) == "approval_required"


async def test_what_the_client_holds_approves_nothing(bank: Bank) -> None:
    arguments = {"to": "acc-bob", "amount": 21000}
    link = await pending_link(bank, "alice", arguments)
    async with httpx2.AsyncClient(timeout=30) as http:
        page = (await http.get(link)).text
        form = answer_form(page, "approve", None, origin_of(link))
        answered = await http.post(link.split("?")[0], data=form, headers={"Origin": origin_of(link)})
    assert answered.status_code == 403 and "no passkey answered" in answered.text, answered.text
    assert kind_of(await call(bank, "alice", arguments)) == "approval_required"


@contextlib.contextmanager
def haproxy(dir: Path, port: int, backend: str) -> Iterator[str]:
    """HAProxy on loopback `port` in front of `backend` (`http://HOST:PORT`),
    adding `X-Forwarded-For` (Debian's package, as the fleet test runs it):
    its origin."""
    config = dir / "haproxy.cfg"
    config.write_text(
        f"""
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend page
    bind 127.0.0.1:{port}
    option forwardfor
    default_backend airlock
backend airlock
    server airlock {backend.split("//", 1)[1]}
"""
    )
    process = subprocess.Popen([str(HAPROXY), "-db", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                if httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "haproxy did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


async def test_through_a_reverse_proxy_the_client_still_approves_nothing(tmp_path: Path) -> None:
    """Behind HAProxy (`trusted_proxies` names it), the page's origin is
    the proxy's (`public_url`), its client addresses are the ones
    `X-Forwarded-For` gives, as the MCP gate reads them, and everything the
    form holds still answers nothing: a passkey does."""
    if not HAPROXY.exists():
        pytest.exit(f"missing {HAPROXY}: run `make test-approvals`", returncode=2)
    port = free_port()
    # Alice's share holds her six requests to the page below (enrolment,
    # the client's try, her answer), however fast they come.
    keys = f'public_url = "http://localhost:{port}"\npage_requests_per_second = 6\n'
    with bank_server(tmp_path, keys, signin=False, http='trusted_proxies = ["127.0.0.1"]\n') as direct:
        with haproxy(tmp_path, port, direct.base) as proxied:
            bank = dataclasses.replace(direct, base=proxied, page=f"http://localhost:{port}")
            arguments = {"to": "acc-bob", "amount": 22000}
            link = await pending_link(bank, "alice", arguments)
            assert link.startswith(f"http://localhost:{port}/approvals/"), link
            async with httpx2.AsyncClient(timeout=30) as http:
                # Alice's passkey, added through the proxy: its origin is
                # public_url.
                enrolment = bank.enrolment_link("alice")
                key, fields = enrol_form((await http.get(enrolment)).text, origin_of(enrolment))
                added = await http.post(enrolment, data=fields, headers={"Origin": origin_of(enrolment)})
                assert added.status_code == 200, added.text
                # The client fetches the page, with its challenges, and posts
                # its form: no passkey answered.
                page = (await http.get(link)).text
                form = answer_form(page, "approve", None, origin_of(link))
                refused = await http.post(link.split("?")[0], data=form, headers={"Origin": origin_of(link)})
                assert refused.status_code == 403 and "no passkey answered" in refused.text, refused.text
                # Each forwarded client has its own rate: one's flood leaves
                # another's requests alone. Fifty could only all pass if
                # they took eight seconds.
                none = f"http://localhost:{port}/approvals/0123456789abcdef0123456789abcdef?sig=x"
                flood = [(await http.get(none, headers={"X-Forwarded-For": "198.51.100.1"})).status_code for _ in range(50)]
                assert 429 in flood, flood
                other = await http.get(none, headers={"X-Forwarded-For": "198.51.100.2"})
                assert other.status_code == 404, other.status_code
            assert kind_of(await call(bank, "alice", arguments)) == "approval_required"
            # Her passkey answers through the proxy.
            async with httpx2.AsyncClient(timeout=30) as http:
                page = (await http.get(link)).text
                form = answer_form(page, "approve", key, origin_of(link))
                approved = await http.post(link.split("?")[0], data=form, headers={"Origin": origin_of(link)})
                assert approved.status_code == 200, approved.text
            assert not (await call(bank, "alice", arguments)).is_error
    refusals = [r["reason"] for r in direct.audit() if r.get("event") == "approval_refused"]
    assert any("no passkey answered" in why for why in refusals), refusals


async def test_signed_in_a_person_adds_a_passkey_and_answers_with_both(tmp_path: Path, browsers: Any) -> None:
    """`require_passkey` beside the provider: the person signs in, adds a
    passkey after signing in (no operator link needed), and the answer is
    recorded as proven by both."""
    with bank_server(tmp_path, "require_passkey = true") as bank:
        arguments = {"to": "acc-bob", "amount": 23000}
        link = await pending_link(bank, "alice", arguments)
        browser = browsers()
        await anyio.to_thread.run_sync(browser.open, link, "alice")
        assert "A passkey is needed" in browser.page() and "/approvals/passkeys" in browser.page(), browser.page()
        said = await anyio.to_thread.run_sync(browser.enrol, f"{bank.page}/approvals/passkeys")
        assert "answers approvals" in said, said
        await anyio.to_thread.run_sync(browser.open, link, "alice")
        browser.wait_for(By.ID, "approve").click()
        assert "You approved this call" in browser.text("notice"), browser.page()
        assert not (await call(bank, "alice", arguments)).is_error
        note = [r for r in bank.audit() if r.get("approval")][-1]["approval"]
        assert (note["by"], note["proof"]) == ("alice", "sign-in and passkey"), note
        assert note["credential"] == browser.passkeys()[0], note
