"""The wire, without the SDK: result shapes of both protocol generations and
the confirmation handshake of 2026-07-28 under a misbehaving client
(replayed, forged and re-targeted `requestState`s)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import BIN, Setup, server_env
from rawclient import LEGACY, MODERN, RawStdio, modern_meta

ELICIT = {"elicitation": {"form": {}}}
TRANSFER = {"to": "bob", "amount": 20000}
ACCEPT = {"confirm": {"action": "accept", "content": {"allow": True}}}


def raw(setup: Setup, *extra: str) -> RawStdio:
    return RawStdio([str(BIN), *setup.args(), "serve", "--stdio", "--principal", "alice", *extra], server_env(), setup.dir / "raw-stderr.log")


def call(server: RawStdio, name: str, arguments: dict[str, Any], capabilities: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return server.request("tools/call", {"name": name, "arguments": arguments, "_meta": modern_meta(capabilities), **extra})


def test_legacy_handshake_and_results(setup: Setup) -> None:
    with raw(setup) as server:
        init = server.initialize()["result"]
        assert init["protocolVersion"] == LEGACY
        assert init["capabilities"]["tools"] == {"listChanged": True}
        ok = server.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})["result"]
        assert ok == {"content": [{"type": "text", "text": '{"text":"hi"}'}], "structuredContent": {"text": "hi"}, "isError": False}
        bad = server.request("tools/call", {"name": "echo", "arguments": {}})["result"]
        # An error result has no structuredContent (it would have to match
        # the tool's outputSchema); the kind, who has to act and whether the
        # same call can succeed are data in _meta.
        assert bad["isError"] is True and "structuredContent" not in bad, bad
        assert bad["_meta"] == {
            "airlock/kind": "invalid_arguments", "airlock/blame": "caller", "airlock/retry": "with_changes"
        }, bad
        # A tool error's code comes as data too.
        failed = server.request("tools/call", {"name": "hostile", "arguments": {"attack": "tool_error"}})["result"]
        assert failed["_meta"] == {
            "airlock/kind": "tool_error", "airlock/code": "not_found", "airlock/blame": "tool", "airlock/retry": "unknown"
        }, failed
        # On the wire, the text names the code as every front end's text does.
        assert failed["isError"] is True and "structuredContent" not in failed, failed
        assert failed["content"] == [{"type": "text", "text": "tool error (not_found): the thing was not found"}], failed
        # An unknown tool is a result the model reads, naming the tools closest first.
        unknown = server.request("tools/call", {"name": "ech", "arguments": {}})["result"]
        assert unknown["isError"] is True and unknown["_meta"]["airlock/kind"] == "unknown_tool", unknown
        assert "echo" in unknown["content"][0]["text"], unknown


def test_an_older_revision_is_negotiated(setup: Setup) -> None:
    with raw(setup) as server:
        reply = server.request("initialize", {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}})
        assert reply["result"]["protocolVersion"] == "2025-03-26"


def test_modern_requests_carry_their_own_metadata(setup: Setup) -> None:
    with raw(setup) as server:
        discover = server.request("server/discover", {"_meta": modern_meta()})["result"]
        assert MODERN in discover["supportedVersions"] and LEGACY in discover["supportedVersions"]
        listed = server.request("tools/list", {"_meta": modern_meta()})["result"]
        assert listed["resultType"] == "complete"
        assert "echo" in {t["name"] for t in listed["tools"]}
        ok = call(server, "echo", {"text": "hi"})["result"]
        assert ok["resultType"] == "complete" and ok["structuredContent"] == {"text": "hi"}


def test_modern_confirmation_round_trip(setup: Setup) -> None:
    with raw(setup) as server:
        first = call(server, "create_transfer", TRANSFER, ELICIT)["result"]
        assert first["resultType"] == "input_required", first
        request = first["inputRequests"]["confirm"]
        assert request["method"] == "elicitation/create"
        assert request["params"]["message"].startswith("alice wants to call create_transfer with {")
        assert request["params"]["requestedSchema"]["properties"]["allow"]["type"] == "boolean"
        state = first["requestState"]
        done = call(server, "create_transfer", TRANSFER, ELICIT, inputResponses=ACCEPT, requestState=state)["result"]
        assert done["resultType"] == "complete" and done["isError"] is False, done
        assert done["structuredContent"] == {"to": "bob", "amount": 20000, "status": "done"}
        # A state is good for one answer only.
        replay = call(server, "create_transfer", TRANSFER, ELICIT, inputResponses=ACCEPT, requestState=state)
        assert replay["error"]["code"] == -32602, replay


def test_modern_confirmation_cannot_be_forged_or_retargeted(setup: Setup) -> None:
    with raw(setup) as server:
        forged = call(server, "create_transfer", TRANSFER, ELICIT, inputResponses=ACCEPT, requestState="0" * 32)
        assert forged["error"]["code"] == -32602, forged
        state = call(server, "create_transfer", TRANSFER, ELICIT)["result"]["requestState"]
        tampered = call(server, "create_transfer", TRANSFER, ELICIT, inputResponses=ACCEPT, requestState=state + "-TAMPERED")
        # The approval of a small transfer cannot run a bigger one.
        other = call(server, "create_transfer", {"to": "mallory", "amount": 999999}, ELICIT, inputResponses=ACCEPT, requestState=state)
        # One mistake, one answer: the same protocol error for each.
        assert other["error"] == forged["error"] == tampered["error"], (other, forged, tampered)
        # ... and the original call is still waiting for its own answer.
        declined = call(server, "create_transfer", TRANSFER, ELICIT, inputResponses={"confirm": {"action": "decline"}}, requestState=state)["result"]
        assert declined["isError"] is True and declined["_meta"]["airlock/kind"] == "declined"


def test_modern_ask_without_elicitation_is_declined_at_once(setup: Setup) -> None:
    with raw(setup) as server:
        result = call(server, "create_transfer", TRANSFER)["result"]
        assert result["resultType"] == "complete" and result["isError"] is True
        assert result["_meta"]["airlock/kind"] == "declined" and "structuredContent" not in result


def test_stdout_carries_only_json_rpc(setup: Setup) -> None:
    with raw(setup) as server:
        server.initialize()
        # The guest writes 1 MB to its stdout; none of it may reach ours.
        flood = server.request("tools/call", {"name": "hostile", "arguments": {"attack": "stdout_flood", "bytes": 1_000_000}})
        assert "result" in flood
        assert server.request("tools/call", {"name": "echo", "arguments": {"text": "x"}})["result"]["isError"] is False
        # Every line read so far parsed as JSON (RawStdio.receive would have failed).
        assert all(n.get("jsonrpc") == "2.0" for n in server.notifications)


@pytest.mark.parametrize("size", [5 << 20])
def test_an_oversized_line_is_answered_and_the_session_survives(setup: Setup, size: int) -> None:
    with raw(setup) as server:
        server.initialize()
        server.send({"jsonrpc": "2.0", "id": 999, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x" * size}}})
        assert server.request("tools/call", {"name": "echo", "arguments": {"text": "after"}})["result"]["isError"] is False
        # The line was too long to read its id: the error says so with a null id.
        refused = [n for n in server.notifications if "error" in n]
        assert refused and refused[0]["id"] is None and refused[0]["error"]["code"] == -32600, server.notifications
