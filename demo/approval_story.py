"""The bank story on Airlock's own approval page.

With `[approvals] mode = "page"` a transfer the policy asks about is not
confirmed through the MCP client: the person it acts for (or the approver
the policy names) opens a link, signs in at the bank's identity provider
and answers on a page Airlock serves. The client never sees the answer, so
software between the model and the person cannot approve.

Each step is real: an OpenID Provider on loopback (`oidc-provider`), the
built `airlock` binary, the official MCP Python SDK client, and a headless
Chromium as each person's browser (tests/approvals/page_bank.py has the
parts; tests/approvals/test_page.py asserts on the same behaviour).

    python demo/approval_story.py AIRLOCK_BIN TEST_GUESTS_DIR

tests/approvals/test_story.py runs the same story as a test.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests/approvals"))
sys.path.insert(0, str(ROOT / "demo"))

from bank_story import PASTED, Step  # noqa: E402


async def story(dir: Path) -> list[Step]:
    # Imported here: page_bank reads AIRLOCK_BIN and AIRLOCK_TEST_GUESTS,
    # which main() sets from the arguments.
    from page_bank import Browser, Person, bank_server, call, kind_of, pending_link, session, text_of

    steps: list[Step] = []
    browsers: list[Browser] = []

    def browser() -> Browser:
        browsers.append(Browser())
        return browsers[-1]

    try:
        with bank_server(dir) as bank:
            arguments = {"to": "acc-bob", "amount": 20000}
            alice = Person(browser(), "alice", "approve")
            step = Step(
                "alice moves 20 000 to bob; her client opens Airlock's page (URL-mode elicitation)",
                "alice signs in at the bank, sees payee and amount on the page, approves; the call runs",
            )
            async with session(bank, "alice", elicitation_callback=alice) as client:
                result = await client.call_tool("create_transfer", arguments)
            card = alice.cards[0] if alice.cards else ""
            step.got = f"{kind_of(result)} | page card: {card.splitlines()[:1]}"
            step.ok = not result.is_error and card.startswith("Transfer 20000 to account acc-bob")
            steps.append(step)

            alice = Person(browser(), "alice", "decline")
            step = Step(
                "text pasted by alice makes the model propose a transfer to acc-mallory",
                "the page shows acc-mallory; alice declines there; nothing runs",
            )
            step.detail["pasted"] = PASTED
            async with session(bank, "alice", elicitation_callback=alice) as client:
                result = await client.call_tool("create_transfer", {"to": "acc-mallory", "amount": 40000})
            card = alice.cards[0] if alice.cards else ""
            step.got = f"{kind_of(result)} | page card: {card.splitlines()[:1]}"
            step.ok = kind_of(result) == "declined" and "acc-mallory" in card
            steps.append(step)

            arguments = {"to": "acc-bob", "amount": 15000}
            step = Step(
                "alice's client cannot open links; bob opens the link she was given",
                "alice's call returns the link to relay; bob is signed in as bob and gets no Approve button",
            )
            link = await pending_link(bank, "alice", arguments)
            bob = browser()
            bob.open(link, "bob")
            refused = "Not yours to answer" in bob.page() and not bob.driver.find_elements("id", "approve")
            still = kind_of(await call(bank, "alice", arguments))
            step.got = f"bob's page refused: {refused}; alice's call again: {still}"
            step.ok = refused and still == "approval_required"
            steps.append(step)

            arguments = {"to": "acc-bob", "amount": 60000}
            step = Step(
                "alice moves 60 000: above 50 000 the policy names a supervisor as approver (four eyes)",
                "alice cannot approve her own; carol (a supervisor) approves on the page; alice's call again runs",
            )
            link = await pending_link(bank, "alice", arguments)
            own = browser()
            own.open(link, "alice")
            barred = "someone else must approve it" in own.page()
            carol = Person(browser(), "carol", "approve")
            await anyio.to_thread.run_sync(carol.answer, link)
            result = await call(bank, "alice", arguments)
            step.got = f"alice barred: {barred}; after carol: {kind_of(result)} {text_of(result)[:60]}"
            step.ok = barred and not result.is_error
            steps.append(step)

            records = bank.audit()
            notes = [r["approval"] for r in records if r.get("approval") and r.get("outcome") != "started"]
            approved = [(note["by"], note["how"]) for note in notes]
            step = Step(
                "the audit log",
                "each call that ran says who approved it on the page, for which tool revision",
            )
            revisions = {note["revision"] for note in notes}
            step.got = f"approvals: {approved}; revisions: {sorted(r[:19] + '…' for r in revisions)}"
            step.ok = approved == [("alice", "page"), ("carol", "page")] and all(r.startswith("sha256:") for r in revisions)
            steps.append(step)
    finally:
        for opened in browsers:
            opened.quit()
    return steps


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    binary, guests = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    os.environ["AIRLOCK_BIN"] = str(binary)
    os.environ["AIRLOCK_TEST_GUESTS"] = str(guests)
    with tempfile.TemporaryDirectory() as dir:
        steps = anyio.run(story, Path(dir))
    for step in steps:
        mark = "ok  " if step.ok else "FAIL"
        print(f"  {mark} {step.title}\n         expected: {step.expected}\n         got:      {step.got}")
    return 1 if any(not step.ok for step in steps) else 0


if __name__ == "__main__":
    sys.exit(main())
