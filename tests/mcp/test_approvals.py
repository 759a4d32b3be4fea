"""Approvals on Airlock's own page with the official MCP Python SDK client,
over stdio and streamable HTTP, on both protocol generations.

`[approvals] mode = "page"`: a call the policy asks about (here
create_transfer, which has side effects under the default policy) is
approved by the person on Airlock's page, never by the client. A client
that declares URL-mode elicitation is handed the link (2025-11-25:
`elicitation/create` with `mode: "url"`, then
`notifications/elicitation/complete`; 2026-07-28: an input request of mode
url, and the SDK retries); here its callback plays the person, who opens
the link and answers on the page. A client without it, and one that
declares it but cannot open a link (Claude Code in `-p` answers `cancel`),
gets an error result with the link, once (never the same input request
again), and the same call made again after the approval runs once.
Without `[http.jwt]` only a passkey answers (here a software one, enrolled
through the operator's one-time link; the browser's is tested in
tests/approvals, with the sign-in): a client that fetches the page and
posts everything its form holds approves nothing."""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import types

from conftest import BIN, CALL_TIMEOUT, Setup, connect, server_env, write_config
from passkeys import answer_on_page as answer_in_thread, fetch, key_of, origin_of, post_form
from rawclient import RawStdio, modern_meta

from test_mcp import anyio_backend, both, generations, kind_of, text_of  # noqa: F401 (a fixture)

pytestmark = pytest.mark.anyio

TRANSFER = {"to": "acc-bob", "amount": 20000}
CARD = 'confirm = "Transfer {amount} to {to}"\n'


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def page_setup(tmp_path: Path, transport: str) -> Setup:
    # Over HTTP the page is served on the MCP origin; a stdio server gets
    # an address of its own.
    approvals = '\n[approvals]\nmode = "page"\n'
    if transport == "stdio":
        approvals += f'listen = "127.0.0.1:{free_port()}"\n'
    return write_config(tmp_path, audit=True, transfer_keys=CARD + approvals)


async def answer_on_page(setup: Setup, link: str, decision: str) -> str:
    """What a person does at the page: open the link, read the card, press
    Approve or Decline, and let their passkey answer. Returns the card."""
    return await anyio.to_thread.run_sync(answer_in_thread, setup, link, decision)


class Person:
    """The client's elicitation callback, as a person who opens the link it
    is shown and answers on the page."""

    def __init__(self, setup: Setup, decision: str) -> None:
        self.setup, self.decision = setup, decision
        self.links: list[str] = []
        self.cards: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert params.mode == "url", params
        self.links.append(params.url)
        self.cards.append(await answer_on_page(self.setup, params.url, self.decision))
        return types.ElicitResult(action="accept")


class CannotOpenLinks:
    """The elicitation callback of a client that declares URL mode but
    cannot open a link, as Claude Code in `-p` does: it answers `action`."""

    def __init__(self, action: str) -> None:
        self.action = action
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert params.mode == "url", params
        self.asked.append(params)
        return types.ElicitResult(action=self.action)


# The sentence that ends an approval_required result: wait, then call again.
AFTER_APPROVAL = "wait until the user says it is approved, then make it again (made sooner, it will not run)."


def link_in(text: str) -> str:
    match = re.search(r"https?://\S+", text)
    assert match, text
    return match.group(0)


@both
@generations
async def test_a_url_mode_client_sends_the_person_to_the_page_and_the_call_runs(transport: str, mode: str, tmp_path: Path) -> None:
    setup = page_setup(tmp_path, transport)
    person = Person(setup, "approve")
    async with connect(transport, mode, setup, principal="alice", elicitation_callback=person) as client:
        result = await client.call_tool("create_transfer", TRANSFER)
    assert not result.is_error, text_of(result)
    assert result.structured_content == {**TRANSFER, "status": "done"}
    ran = [r for r in setup.audit() if r.get("approval")]
    assert ran and ran[-1]["approval"]["by"] == "alice" and ran[-1]["approval"]["proof"] == "passkey", ran
    assert len(person.links) == 1 and "/approvals/" in person.links[0], person.links
    assert person.cards == ["Transfer 20000 to acc-bob"], person.cards
    outcomes = [(r["decision"], r["outcome"]) for r in setup.audit() if r["outcome"] != "started"]
    assert ("ask:confirmed", "ok") in outcomes, outcomes


@both
@generations
async def test_declined_on_the_page_never_runs(transport: str, mode: str, tmp_path: Path) -> None:
    setup = page_setup(tmp_path, transport)
    person = Person(setup, "decline")
    async with connect(transport, mode, setup, principal="alice", elicitation_callback=person) as client:
        result = await client.call_tool("create_transfer", TRANSFER)
    assert result.is_error and kind_of(result) == "declined", text_of(result)
    assert not any(r["outcome"] == "ok" for r in setup.audit()), setup.audit()


@both
@generations
async def test_a_client_without_url_mode_relays_the_link_and_calls_again(transport: str, mode: str, tmp_path: Path) -> None:
    setup = page_setup(tmp_path, transport)
    async with connect(transport, mode, setup, principal="alice") as client:
        first = await client.call_tool("create_transfer", TRANSFER)
        assert first.is_error and kind_of(first) == "approval_required", text_of(first)
        link = link_in(text_of(first))
        assert text_of(first).endswith(AFTER_APPROVAL), text_of(first)
        assert "the approval of the user" in text_of(first), text_of(first)
        assert await answer_on_page(setup, link, "approve") == "Transfer 20000 to acc-bob"
        ran = await client.call_tool("create_transfer", TRANSFER)
        assert not ran.is_error, text_of(ran)
        once = await client.call_tool("create_transfer", TRANSFER)
        assert kind_of(once) == "approval_required", "an approval runs one call"
        assert link_in(text_of(once)) != link


async def test_a_legacy_client_hears_the_url_elicitation_is_complete(tmp_path: Path) -> None:
    setup = page_setup(tmp_path, "http")
    person = Person(setup, "approve")
    notes: list[Any] = []

    async def on_message(message: Any) -> None:
        notes.append(message)

    async with connect("http", "legacy", setup, principal="alice", elicitation_callback=person, message_handler=on_message) as client:
        result = await client.call_tool("create_transfer", TRANSFER)
    assert not result.is_error, text_of(result)
    seen = [getattr(getattr(n, "root", n), "method", None) for n in notes]
    assert "notifications/elicitation/complete" in seen, notes


@both
async def test_a_client_that_posts_everything_the_form_holds_approves_nothing(transport: str, tmp_path: Path) -> None:
    """What the MCP client holds, the link, the page and its form (the
    passkey challenge included), is not a person: without the passkey's
    assertion the post is refused, audited, and the call still waits."""
    setup = page_setup(tmp_path, transport)
    async with connect(transport, "legacy", setup, principal="alice") as client:
        first = await client.call_tool("create_transfer", TRANSFER)
        link = link_in(text_of(first))
        # Someone has a passkey, so the page offers its challenges.
        await anyio.to_thread.run_sync(key_of, setup, origin_of(link), "alice")
        status, page = await anyio.to_thread.run_sync(fetch, link)
        assert status == 200 and 'data-get="' in page, page
        for decision in ("approve", "decline"):
            status, said = await anyio.to_thread.run_sync(post_form, link, page, decision, None)
            assert status == 403 and "no passkey answered" in said, said
        again = await client.call_tool("create_transfer", TRANSFER)
        assert kind_of(again) == "approval_required", text_of(again)
    refused = [r for r in setup.audit() if r.get("event") == "approval_refused"]
    assert len(refused) == 2 and all("no passkey answered" in r["reason"] for r in refused), refused
    assert not any("sig=" in (r.get("message") or "") for r in setup.audit()), "a working link in the audit log"


@both
@generations
async def test_a_url_mode_client_that_cannot_open_the_link_gets_it_in_the_result_once(transport: str, mode: str, tmp_path: Path) -> None:
    setup = page_setup(tmp_path, transport)
    client_side = CannotOpenLinks("cancel")
    async with connect(transport, mode, setup, principal="alice", elicitation_callback=client_side) as client:
        first = await client.call_tool("create_transfer", TRANSFER)
        assert first.is_error and kind_of(first) == "approval_required", text_of(first)
        # Asked once; on 2026-07-28 the SDK's retry with `cancel` ends the call.
        assert len(client_side.asked) == 1, client_side.asked
        link = link_in(text_of(first))
        assert link == client_side.asked[0].url
        assert "Show the user this link" in text_of(first) and text_of(first).endswith(AFTER_APPROVAL), text_of(first)
        if mode == "legacy":
            assert client_side.asked[0].elicitation_id, client_side.asked[0]
        await answer_on_page(setup, link, "approve")
        ran = await client.call_tool("create_transfer", TRANSFER)
        assert not ran.is_error, text_of(ran)
        assert len(client_side.asked) == 1, "an approved call asks nobody"
    outcomes = [(r["decision"], r["outcome"]) for r in setup.audit() if r["outcome"] != "started"]
    assert outcomes[0][0] == "ask:pending" and ("ask:confirmed", "ok") in outcomes, outcomes


async def test_a_url_mode_client_that_declines_the_link_gets_it_in_the_result(tmp_path: Path) -> None:
    setup = page_setup(tmp_path, "stdio")
    client_side = CannotOpenLinks("decline")
    async with connect("stdio", "legacy", setup, elicitation_callback=client_side) as client:
        first = await client.call_tool("create_transfer", TRANSFER)
    assert kind_of(first) == "approval_required" and link_in(text_of(first)) == client_side.asked[0].url, text_of(first)
    # On stdio the call acts for `local`, which names nobody the model knows.
    assert "approval of local" not in text_of(first) and "the approval of the user" in text_of(first), text_of(first)


def test_a_2026_07_28_retry_after_the_link_is_never_handed_it_again(tmp_path: Path) -> None:
    """On the wire: the input request names its elicitation, and the retry
    that answers `cancel` with the page's requestState gets the result with
    the link, not the same input request (clients retry up to 10 rounds)."""
    setup = page_setup(tmp_path, "stdio")
    command = [str(BIN), *setup.args(), "serve", "--stdio", "--principal", "alice"]
    with RawStdio(command, server_env(), setup.dir / "raw-stderr.log") as server:
        meta = modern_meta({"elicitation": {"url": {}}})
        call = {"name": "create_transfer", "arguments": TRANSFER, "_meta": meta}
        first = server.request("tools/call", call, timeout=CALL_TIMEOUT)["result"]
        assert first["resultType"] == "input_required", first
        asked = first["inputRequests"]["approval"]["params"]
        assert asked["mode"] == "url" and asked["elicitationId"], asked
        retry = {**call, "requestState": first["requestState"], "inputResponses": {"approval": {"action": "cancel"}}}
        second = server.request("tools/call", retry, timeout=CALL_TIMEOUT)["result"]
        assert second.get("resultType", "complete") == "complete" and second["isError"], second
        assert second["_meta"]["airlock/kind"] == "approval_required", second
        assert link_in(second["content"][0]["text"]) == asked["url"], second
        # A new call is asked anew, with an elicitation of its own.
        again = server.request("tools/call", call, timeout=CALL_TIMEOUT)["result"]
        assert again["resultType"] == "input_required", again
        assert again["inputRequests"]["approval"]["params"]["elicitationId"] != asked["elicitationId"], again
