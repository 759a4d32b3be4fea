"""A software passkey, for the tests and the demo that cannot run a browser:
what a platform authenticator answers to `navigator.credentials.create()`
and `.get()` (ES256, user present and verified, `none` attestation), built
from the WebAuthn spec with `cryptography`, and what Airlock's page script
(passkey.js) then posts. The browser tests use Chromium's virtual
authenticator instead; tests/integration/softkey.rs is the same thing in
Rust.

Only a process that holds the key can answer: a test that wants to show
what an MCP client can do without one simply has no SoftKey.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
import struct
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _head(major: int, n: int) -> bytes:
    if n < 24:
        return bytes([major << 5 | n])
    if n < 0x100:
        return bytes([major << 5 | 24, n])
    if n < 0x10000:
        return bytes([major << 5 | 25]) + struct.pack(">H", n)
    return bytes([major << 5 | 26]) + struct.pack(">I", n)


def cbor(value: Any) -> bytes:
    """CBOR of ints, bytes, text and maps of them: all an attestation needs."""
    if isinstance(value, bool):
        raise TypeError("no booleans here")
    if isinstance(value, int):
        return _head(0, value) if value >= 0 else _head(1, -1 - value)
    if isinstance(value, bytes):
        return _head(2, len(value)) + value
    if isinstance(value, str):
        data = value.encode()
        return _head(3, len(data)) + data
    if isinstance(value, dict):
        return _head(5, len(value)) + b"".join(cbor(k) + cbor(v) for k, v in value.items())
    raise TypeError(f"cannot encode {type(value)}")


def _client_data(kind: str, options: dict[str, Any], origin: str) -> bytes:
    return json.dumps({"type": kind, "challenge": options["challenge"], "origin": origin, "crossOrigin": False}).encode()


class SoftKey:
    """One passkey: its credential id, key pair, relying party and user."""

    def __init__(self, rp_id: str, user: bytes) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.id = os.urandom(16)
        self.rp_id, self.user, self.counter = rp_id, user, 0

    @property
    def name(self) -> str:
        """The credential id as Airlock names it."""
        return b64(self.id)

    @classmethod
    def create(cls, options: dict[str, Any], origin: str) -> tuple["SoftKey", str]:
        """Answer `create({publicKey: options})` at `origin`: the passkey and
        the credential JSON the page posts."""
        key = cls(options["rp"]["id"], unb64(options["user"]["id"]))
        numbers = key.key.public_key().public_numbers()
        cose = cbor({1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")})
        auth_data = (
            hashlib.sha256(key.rp_id.encode()).digest()
            + bytes([0x01 | 0x04 | 0x40])
            + struct.pack(">I", 0)
            + bytes(16)
            + struct.pack(">H", len(key.id))
            + key.id
            + cose
        )
        attestation = cbor({"fmt": "none", "attStmt": {}, "authData": auth_data})
        credential = {
            "id": key.name,
            "rawId": key.name,
            "type": "public-key",
            "response": {
                "attestationObject": b64(attestation),
                "clientDataJSON": b64(_client_data("webauthn.create", options, origin)),
            },
            "extensions": {},
        }
        return key, json.dumps(credential)

    def get(self, options: dict[str, Any], origin: str) -> str:
        """Answer `get({publicKey: options})` at `origin` with this passkey."""
        self.counter += 1
        auth_data = hashlib.sha256(self.rp_id.encode()).digest() + bytes([0x01 | 0x04]) + struct.pack(">I", self.counter)
        client = _client_data("webauthn.get", options, origin)
        signature = self.key.sign(auth_data + hashlib.sha256(client).digest(), ec.ECDSA(hashes.SHA256()))
        return json.dumps(
            {
                "id": self.name,
                "rawId": self.name,
                "type": "public-key",
                "response": {
                    "authenticatorData": b64(auth_data),
                    "clientDataJSON": b64(client),
                    "signature": b64(signature),
                    "userHandle": b64(self.user),
                },
                "extensions": {},
            }
        )


# What the page's script does, for a client that reads the page's HTML.

def _attribute(tag: str, name: str) -> str | None:
    match = re.search(rf'\b{name}="([^"]*)"', tag)
    return html.unescape(match.group(1)) if match else None


def form_fields(page: str) -> dict[str, str]:
    """The hidden fields of the page's form, as the page has them."""
    return {_attribute(tag, "name") or "": _attribute(tag, "value") or "" for tag in re.findall(r"<input [^>]*>", page)}


def button(page: str, button_id: str) -> str:
    match = re.search(rf'<button [^>]*id="{button_id}"[^>]*>', page)
    assert match, f"no button {button_id} in {page}"
    return match.group(0)


def origin_of(link: str) -> str:
    match = re.match(r"https?://[^/]+", link)
    assert match, link
    return match.group(0)


def answer_form(page: str, decision: str, key: SoftKey | None, origin: str) -> dict[str, str]:
    """The form the page's script posts when `decision` ("approve" or
    "decline") is pressed and `key` answers (no key: what a client without
    one can send: the form with the button's challenge, and no assertion)."""
    fields = form_fields(page)
    tag = button(page, decision)
    fields["decision"] = decision
    fields["state"] = _attribute(tag, "data-state") or ""
    options = _attribute(tag, "data-get")
    if key is not None and options:
        fields["credential"] = key.get(json.loads(options), origin)
    return fields


def enrol_form(page: str, origin: str, confirm_with: SoftKey | None = None) -> tuple[SoftKey, dict[str, str]]:
    """The form the enrolment page's script posts: a new passkey, confirmed
    by `confirm_with` when the page asks for an existing one."""
    fields = form_fields(page)
    tag = button(page, "enrol")
    create = _attribute(tag, "data-create")
    assert create, tag
    get, state = _attribute(tag, "data-get"), _attribute(tag, "data-state")
    if get and confirm_with is not None:
        fields["state"] = state or ""
        fields["credential"] = confirm_with.get(json.loads(get), origin)
    key, credential = SoftKey.create(json.loads(create), origin)
    fields["registration"] = credential
    fields["decision"] = "enrol"
    return key, fields
