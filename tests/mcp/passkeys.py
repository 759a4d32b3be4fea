"""A person at the approval page, for the MCP tests: their passkey enrolled
through the operator's one-time link (`airlock approvals enroll`), and the
page answered as its script answers it, with a software passkey
(tests/approvals/softkey.py). Blocking (urllib): async tests run it in a
thread. What an MCP client without the passkey can do is `post_form` with
no key: everything the form holds."""

from __future__ import annotations

import html
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from conftest import BIN, ROOT, Setup, server_env

sys.path.insert(0, str(ROOT / "tests/approvals"))

from softkey import SoftKey, answer_form, enrol_form, origin_of  # noqa: E402

TIMEOUT_S = 60.0
# One passkey per (config, principal): enrolled the first time it is needed.
_KEYS: dict[tuple[Path, str], SoftKey] = {}


def _opener() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch(url: str, form: dict[str, str] | None = None, origin: str | None = None) -> tuple[int, str]:
    """GET `url`, or POST `form` to it from `origin`: the status and body."""
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    headers = {"Origin": origin} if origin else {}
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with _opener().open(request, timeout=TIMEOUT_S) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def enrolment_link(setup: Setup, base: str, principal: str) -> str:
    out = subprocess.run(
        [str(BIN), *setup.args(), "approvals", "enroll", principal, "--url", base],
        capture_output=True, text=True, timeout=TIMEOUT_S, env=server_env(),
    )
    assert out.returncode == 0, out.stderr
    match = re.search(r"http://\S+/approvals/enroll/\S+", out.stdout)
    assert match, out.stdout
    return match.group(0)


def enrol(setup: Setup, base: str, principal: str) -> SoftKey:
    """`principal`'s passkey, enrolled now."""
    link = enrolment_link(setup, base, principal)
    status, page = fetch(link)
    assert status == 200, page
    key, form = enrol_form(page, origin_of(link))
    status, said = fetch(link, form, origin_of(link))
    assert status == 200 and "Passkey added" in said, said
    _KEYS[(setup.config, principal)] = key
    return key


def key_of(setup: Setup, base: str, principal: str) -> SoftKey:
    """`principal`'s passkey, enrolled the first time."""
    return _KEYS.get((setup.config, principal)) or enrol(setup, base, principal)


def card_of(page: str) -> str:
    match = re.search(r'id="card">(.*?)</pre>', page, re.S)
    assert match, page
    return html.unescape(match.group(1))


def post_form(link: str, page: str, decision: str, key: SoftKey | None) -> tuple[int, str]:
    """Press `decision` on `page` (the page at `link`), answered by `key`
    (none: everything the form holds, and no assertion)."""
    origin = origin_of(link)
    return fetch(link.split("?", 1)[0], answer_form(page, decision, key, origin), origin)


def answer_on_page(setup: Setup, link: str, decision: str, principal: str = "alice") -> str:
    """What the person does: open the link, read the card, press Approve or
    Decline and let their passkey answer. Returns the card shown."""
    key = key_of(setup, origin_of(link), principal)
    status, page = fetch(link)
    assert status == 200, page
    status, said = post_form(link, page, decision, key)
    assert status == 200, said
    return card_of(page)
