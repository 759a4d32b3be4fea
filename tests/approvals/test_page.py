"""The approval page in a real browser, signed in at a real OpenID
Provider: what the account holder sees and approves, and everything the
page must refuse (see page_bank.py for the parts)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from page_bank import PAGE_TIMEOUT, ROOT, Bank, Person, bank_server, call, kind_of, pending_link, session, text_of

pytestmark = pytest.mark.anyio

# Where the page's screenshot goes: the book shows it (book/src/operator/approvals.md).
SCREENSHOT = ROOT / "target/approvals/approval-page.png"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_account_holder_approves_on_the_page_and_the_held_call_runs(bank: Bank, browsers: Any) -> None:
    alice = Person(browsers(), "alice", "approve", SCREENSHOT)
    arguments = {"to": "acc-bob", "amount": 20000}
    async with session(bank, "alice", elicitation_callback=alice) as client:
        result = await client.call_tool("create_transfer", arguments)
    assert not result.is_error, text_of(result)
    assert alice.cards == ["Transfer 20000 to account acc-bob\nRequested by alice"], alice.cards
    page = alice.browser.page()
    assert "You approved this call" in page, page
    records = [r for r in bank.audit() if r.get("approval")]
    assert records and records[-1]["approval"]["by"] == "alice" and records[-1]["approval"]["how"] == "page", records
    assert records[-1]["decision"] == "ask:confirmed" and records[-1]["arguments"] == arguments, records[-1]


async def test_declined_on_the_page_it_never_runs(bank: Bank, browsers: Any) -> None:
    alice = Person(browsers(), "alice", "decline")
    async with session(bank, "alice", elicitation_callback=alice) as client:
        result = await client.call_tool("create_transfer", {"to": "acc-mallory", "amount": 50000})
    assert kind_of(result) == "declined", text_of(result)
    assert alice.cards == ["Transfer 50000 to account acc-mallory\nRequested by alice"], alice.cards
    assert "You declined this call" in alice.browser.page()


async def test_another_principal_cannot_approve_and_a_used_link_cannot_be_replayed(bank: Bank, browsers: Any) -> None:
    arguments = {"to": "acc-bob", "amount": 21000}
    link = await pending_link(bank, "alice", arguments)
    bob = browsers()
    bob.open(link, "bob")
    assert "Not yours to answer" in bob.page(), bob.page()
    assert "you are bob (as your passkey or sign-in shows), but this call acts for alice" in bob.page()
    assert not bob.driver.find_elements(By.ID, "approve"), "no Approve button for bob"
    # Still pending: bob's visit changed nothing.
    assert kind_of(await call(bank, "alice", arguments)) == "approval_required"
    alice = browsers()
    alice.open(link, "alice")
    alice.wait_for(By.ID, "approve").click()
    assert "You approved this call" in alice.text("notice")
    assert not (await call(bank, "alice", arguments)).is_error
    # The link again, after its call ran: refused, and nothing runs twice.
    alice.open(link, "alice")
    assert "cannot be used again" in alice.page(), alice.page()
    assert kind_of(await call(bank, "alice", arguments)) == "approval_required"


async def test_a_supervisor_approves_what_the_customer_cannot(bank: Bank, browsers: Any) -> None:
    arguments = {"to": "acc-bob", "amount": 60000}
    link = await pending_link(bank, "alice", arguments)
    alice = browsers()
    alice.open(link, "alice")
    assert "someone else must approve it" in alice.page(), alice.page()
    bob = browsers()
    bob.open(link, "bob")
    assert "Not yours to answer" in bob.page(), bob.page()
    carol = browsers()
    carol.open(link, "carol")
    assert carol.text("approver") == 'a member of Airlock::Role::"supervisor" other than alice'
    carol.wait_for(By.ID, "approve").click()
    assert "You approved this call" in carol.text("notice")
    result = await call(bank, "alice", arguments)
    assert not result.is_error, text_of(result)
    record = [r for r in bank.audit() if r.get("approval") and r["arguments"] == arguments][-1]
    assert record["approval"]["by"] == "carol", record


async def test_a_sign_in_as_bob_cannot_approve_the_static_token_principal_bobs_call(tmp_path: Path, browsers: Any) -> None:
    """The provider's `bob` and the static bearer token's `bob` are two
    principals unless the operator shares them (`shared_principals`): the
    page's sign-in keeps them apart as the MCP gate keeps access tokens."""
    with bank_server(tmp_path, static=("bob",)) as bank:
        arguments = {"to": "acc-alice", "amount": 24000}
        link = await pending_link(bank, "bob", arguments)
        browser = browsers()
        browser.open(link, "bob")
        page = browser.page()
        assert "Sign-in failed" in page and "a principal of a static bearer token" in page, page
        assert not browser.driver.find_elements(By.ID, "approve")
        assert kind_of(await call(bank, "bob", arguments)) == "approval_required"


@pytest.fixture
def evil_site() -> Iterator[tuple[str, dict[str, str]]]:
    """Another site on loopback whose pages the test writes."""
    pages: dict[str, str] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path, "").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("localhost", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://localhost:{server.server_address[1]}", pages
    finally:
        server.shutdown()


async def test_a_cross_site_post_and_a_frame_are_refused(bank: Bank, browsers: Any, evil_site: tuple[str, dict[str, str]]) -> None:
    site, pages = evil_site
    arguments = {"to": "acc-mallory", "amount": 30000}
    link = await pending_link(bank, "alice", arguments)
    action, sig = link.split("?sig=")
    alice = browsers()
    alice.open(link, "alice")  # signed in, the card shown
    # A page elsewhere posts the answer for her, without the form's token.
    pages["/post"] = (
        f'<form id="f" method="post" action="{action}"><input name="sig" value="{sig}">'
        '<input name="decision" value="approve"></form><script>document.getElementById("f").submit()</script>'
    )
    alice.driver.get(f"{site}/post")
    # The forged form has been posted once the browser is on its action.
    WebDriverWait(alice.driver, PAGE_TIMEOUT).until(lambda d: d.current_url.startswith(action))
    alice.wait_for(By.TAG_NAME, "body")
    assert "You approved" not in alice.page(), alice.page()
    # And a page that frames the approval page shows nothing of it.
    pages["/frame"] = f'<iframe id="x" src="{link}" width="800" height="600"></iframe>'
    alice.driver.get(f"{site}/frame")
    frame = alice.wait_for(By.ID, "x")
    alice.driver.switch_to.frame(frame)
    framed = alice.driver.page_source
    alice.driver.switch_to.default_content()
    assert "Approve this call" not in framed and 'id="approve"' not in framed, framed
    # Nothing was approved.
    assert kind_of(await call(bank, "alice", arguments)) == "approval_required"


async def test_an_expired_link_is_refused(tmp_path: Path, browsers: Any) -> None:
    with bank_server(tmp_path, "link_ttl_secs = 30") as short:
        arguments = {"to": "acc-bob", "amount": 15000}
        link = await pending_link(short, "alice", arguments)
        await anyio.sleep(31)
        alice = browsers()
        alice.open(link, "alice")
        assert "No such approval" in alice.page(), alice.page()
        assert not alice.driver.find_elements(By.ID, "approve")
