"""The bank story on Airlock's own approval page, with passkeys.

With `[approvals] mode = "page"` a transfer the policy asks about is not
confirmed through the MCP client: the person it acts for (or the approver
the policy names) opens a link and answers on a page Airlock serves, with
their passkey (the fingerprint, face or PIN on their own device). The
client holds the link, the page and its form, and still cannot answer:
software between the model and the person cannot approve. No identity
provider is configured here; the operator enrols each person's first
passkey with a one-time link (`airlock approvals enroll NAME`).

Each step is real: the built `airlock` binary, the official MCP Python SDK
client, and a headless Chromium as each person's browser with WebDriver's
virtual authenticator as their passkey device (tests/approvals/page_bank.py
has the parts; tests/approvals/test_passkeys.py asserts on the same
behaviour, test_page.py on the sign-in at an OpenID provider).

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
    import httpx2

    from page_bank import Browser, Person, bank_server, call, kind_of, pending_link, session, text_of
    from softkey import answer_form, origin_of

    steps: list[Step] = []
    browsers: list[Browser] = []

    def browser() -> Browser:
        browsers.append(Browser())
        return browsers[-1]

    try:
        with bank_server(dir, signin=False) as bank:
            people = {name: browser() for name in ("alice", "bob", "carol")}
            step = Step(
                "the operator runs `airlock approvals enroll alice` (and bob, carol): a one-time link each",
                "each opens their link; their device makes a passkey; the page says it was added",
            )
            said = [await anyio.to_thread.run_sync(b.enrol, bank.enrolment_link(name)) for name, b in people.items()]
            step.got = f"{sum('answers approvals' in s for s in said)} of 3 added"
            step.ok = all("answers approvals" in s for s in said) and all(len(b.passkeys()) == 1 for b in people.values())
            steps.append(step)

            arguments = {"to": "acc-bob", "amount": 20000}
            alice = Person(people["alice"], "alice", "approve")
            step = Step(
                "alice moves 20 000 to bob; her client opens Airlock's page (URL-mode elicitation)",
                "alice sees payee and amount on the page, approves with her passkey; the call runs",
            )
            async with session(bank, "alice", elicitation_callback=alice) as client:
                result = await client.call_tool("create_transfer", arguments)
            card = alice.cards[0] if alice.cards else ""
            step.got = f"{kind_of(result)} | page card: {card.splitlines()[:1]}"
            step.ok = not result.is_error and card.startswith("Transfer 20000 to account acc-bob")
            steps.append(step)

            alice = Person(people["alice"], "alice", "decline")
            step = Step(
                "text pasted by alice makes the model propose a transfer to acc-mallory",
                "the page shows acc-mallory; alice declines there with her passkey; nothing runs",
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
                "alice's client cannot open links: it holds the link, fetches the page and posts its form itself",
                "the post answers nothing (no passkey answered) and is audited; the call still waits",
            )
            link = await pending_link(bank, "alice", arguments)
            async with httpx2.AsyncClient(timeout=30) as http:
                page = (await http.get(link)).text
                form = answer_form(page, "approve", None, origin_of(link))
                posted = await http.post(link.split("?")[0], data=form, headers={"Origin": origin_of(link)})
            still = kind_of(await call(bank, "alice", arguments))
            step.got = f"client's post: {posted.status_code}; alice's call again: {still}"
            step.ok = posted.status_code == 403 and "no passkey answered" in posted.text and still == "approval_required"
            steps.append(step)

            arguments = {"to": "acc-bob", "amount": 60000}
            step = Step(
                "alice moves 60 000: above 50 000 the policy names a supervisor as approver (four eyes)",
                "the page names who may approve (not alice); carol (a supervisor) approves with her passkey; the call "
                "runs",
            )
            link = await pending_link(bank, "alice", arguments)
            own = people["alice"]
            await anyio.to_thread.run_sync(own.driver.get, link)
            barred = own.text("approver") == 'a member of Airlock::Role::"supervisor" other than alice'
            carol = Person(people["carol"], "carol", "approve")
            await anyio.to_thread.run_sync(carol.answer, link)
            result = await call(bank, "alice", arguments)
            step.got = f"alice barred: {barred}; after carol: {kind_of(result)} {text_of(result)[:60]}"
            step.ok = barred and not result.is_error
            steps.append(step)

            records = bank.audit()
            notes = [r["approval"] for r in records if r.get("approval") and r.get("outcome") != "started"]
            approved = [(note["by"], note["proof"]) for note in notes]
            step = Step(
                "the audit log",
                "each call that ran says who approved it, with which passkey, for which tool revision; "
                "each refused attempt is recorded",
            )
            revisions = {note["revision"] for note in notes}
            refusals = sum(1 for r in records if r.get("event") == "approval_refused")
            step.got = f"approvals: {approved}; refused attempts: {refusals}; revisions: {sorted(r[:19] + '…' for r in revisions)}"
            step.ok = (
                approved == [("alice", "passkey"), ("carol", "passkey")]
                and all(note.get("credential") for note in notes)
                and refusals >= 1
                and all(r.startswith("sha256:") for r in revisions)
            )
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
