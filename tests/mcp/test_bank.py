"""The bank story (demo/bank_story.py) as a test: two customers signed in
with JWTs over streamable HTTP, the official MCP Python SDK client, the real
binary. Every step must give what it expects, and the audit log must hold
each decision under the principal whose token made the call."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import BIN, ROOT, TEST_GUESTS

sys.path.insert(0, str(ROOT / "demo"))
import bank_story  # noqa: E402


def test_the_bank_story_end_to_end(tmp_path: Path) -> None:
    steps = bank_story.run(BIN, TEST_GUESTS, tmp_path)
    failed = [f"{s.title}: expected {s.expected}; got {s.got}" for s in steps if not s.ok]
    assert not failed, "\n".join(failed)

    by_title = {step.title: step for step in steps}
    injected = by_title["text pasted by alice makes the model propose a transfer to acc-mallory"]
    assert injected.detail["card"].startswith("Transfer 50000 to account acc-mallory\nRequested by alice"), injected.detail

    all_records = by_title["the audit log"].detail["records"]
    # A transfer that runs is recorded before it runs ("started") and after.
    started = [(r["principal"], r["tool"], r["decision"]) for r in all_records if r.get("outcome") == "started"]
    assert started == [
        ("alice", "create_transfer", "allow"),
        ("alice", "create_transfer", "ask:confirmed"),
    ], started
    records = [r for r in all_records if r.get("outcome") != "started"]
    seen = [(r["principal"], r["tool"], r["decision"], r.get("outcome")) for r in records]
    assert [(p, t, d) for p, t, d, _ in seen] == [
        ("alice", "get_balance", "allow"),
        ("alice", "get_balance", "deny"),
        ("alice", "create_transfer", "allow"),
        ("alice", "create_transfer", "deny"),
        ("alice", "create_transfer", "ask:confirmed"),
        ("alice", "create_transfer", "ask:declined"),
        ("bob", "get_balance", "allow"),
        ("alice", "get_balance", "allow"),
    ], seen
    # The declined transfer never ran; the audit says so, and the pasted
    # payee is recorded with the decision that stopped it.
    declined = records[5]
    assert declined["arguments"] == {"to": "acc-mallory", "amount": 50000}, declined
    assert declined["fuel_used"] is None and declined["outcome"] == "declined", declined
    assert "chain intact" in by_title["the audit log"].detail["verify"]
