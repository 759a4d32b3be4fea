//! Signed `requestState`s: `v2.<id>.<expiry>.<revision>.<mac>`.
//!
//! `id` is 32 lowercase hex digits (random), `expiry` the Unix time in
//! milliseconds after which no replica accepts the state, `revision` the
//! revision of the tool the call was asked about (`sha256:HEX`, as
//! `tools/list` shows it), `mac` the lowercase hex HMAC-SHA256, under the
//! fleet's key, of the version, id, expiry, principal, tool, argument
//! digest and revision, each length-prefixed so that no two different
//! tuples sign the same bytes. The principal, tool and arguments are not in
//! the state: a replica takes them from the retried request (the principal
//! from its credentials), so a state issued for one call cannot be used for
//! another and reveals nothing about the call but the tool's public
//! revision. The revision is in the state (signed) so that a replica that
//! serves another revision of the tool can say that the tool changed,
//! rather than that the state is unknown. States of the earlier form
//! (`v1`, without a revision) are refused like any unknown state.
//!
//! Trusts nothing in a state it is handed: its length is capped
//! ([`MAX_REQUEST_STATE_BYTES`]) before it is split, and the MAC is
//! compared in constant time (`ring::hmac::verify`).

use super::{MAX_REQUEST_STATE_BYTES, StateKey};
use ring::hmac;

/// The version prefix of the states this module issues.
const VERSION: &str = "v2";
/// Separates the MAC input of the signed states from any other use of the key.
const CONTEXT: &[u8] = b"airlock requestState v2";
/// Length of a state id: 128 random bits in hex.
const ID_LEN: usize = 32;

/// What a state is bound to; a retry must present the same.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    /// The caller's principal.
    pub principal: &'a str,
    /// The tool name as requested.
    pub tool: &'a str,
    /// `audit::argument_digest` of the arguments as requested.
    pub argument_digest: &'a str,
}

/// A state that checked out: its id (to redeem) and expiry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The id to redeem once across the fleet.
    pub id: String,
    /// Unix time in milliseconds until which the state is valid.
    pub expiry_ms: u64,
    /// The revision of the tool the call was asked about, as signed.
    pub revision: String,
}

fn signing_key(key: &StateKey) -> hmac::Key {
    hmac::Key::new(hmac::HMAC_SHA256, key.bytes())
}

/// The MAC input: every part length-prefixed.
fn message(id: &str, expiry_ms: u64, binding: &Binding<'_>, revision: &str) -> Vec<u8> {
    let parts: [&[u8]; 7] = [
        CONTEXT,
        id.as_bytes(),
        &expiry_ms.to_be_bytes(),
        binding.principal.as_bytes(),
        binding.tool.as_bytes(),
        binding.argument_digest.as_bytes(),
        revision.as_bytes(),
    ];
    let mut out = Vec::with_capacity(parts.iter().map(|p| p.len() + 8).sum());
    for part in parts {
        out.extend_from_slice(&(part.len() as u64).to_be_bytes());
        out.extend_from_slice(part);
    }
    out
}

/// A new state for `binding`, valid until `expiry_ms`.
/// `revision` is the tool's revision (`sha256:HEX`; no `.` in it).
pub fn issue(key: &StateKey, expiry_ms: u64, binding: &Binding<'_>, revision: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let tag = hmac::sign(&signing_key(key), &message(&id, expiry_ms, binding, revision));
    format!("{VERSION}.{id}.{expiry_ms}.{revision}.{}", hex::encode(tag.as_ref()))
}

/// Whether `state` was issued by a holder of `key` for `binding` and is
/// still valid at `now_ms`. Every way of failing is one `None`: the client
/// is told the same for each. The revision it was issued for comes back in
/// [`Checked`]: the caller compares it with the tool's revision now.
pub fn check(key: &StateKey, state: &str, now_ms: u64, binding: &Binding<'_>) -> Option<Checked> {
    if state.len() > MAX_REQUEST_STATE_BYTES {
        return None;
    }
    let mut parts = state.split('.');
    let (Some(VERSION), Some(id), Some(expiry), Some(revision), Some(mac), None) =
        (parts.next(), parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    if id.len() != ID_LEN || !id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    let expiry_ms: u64 = expiry.parse().ok()?;
    let mac = hex::decode(mac).ok()?;
    hmac::verify(&signing_key(key), &message(id, expiry_ms, binding, revision), &mac).ok()?;
    // Checked after the MAC, so that an expired state and a forged one take
    // the same path up to here.
    (now_ms < expiry_ms).then(|| Checked { id: id.to_owned(), expiry_ms, revision: revision.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> StateKey {
        StateKey::new(vec![byte; 32]).unwrap()
    }

    const BOUND: Binding<'static> = Binding { principal: "alice", tool: "create_transfer", argument_digest: "d1" };
    const REVISION: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn a_state_checks_only_for_its_key_binding_and_time() {
        let state = issue(&key(1), 1_000, &BOUND, REVISION);
        let checked = check(&key(1), &state, 999, &BOUND).expect("valid");
        assert_eq!(checked.expiry_ms, 1_000);
        assert_eq!(checked.id.len(), ID_LEN);
        assert_eq!(checked.revision, REVISION, "the revision it was issued for comes back");
        let other = state.replace(REVISION, &REVISION.replace("0123", "3210"));
        assert_eq!(check(&key(1), &other, 999, &BOUND), None, "the revision is signed");
        assert_eq!(check(&key(1), &state, 1_000, &BOUND), None, "expired");
        assert_eq!(check(&key(2), &state, 1, &BOUND), None, "another fleet's key");
        for other in [
            Binding { principal: "mallory", ..BOUND },
            Binding { tool: "delete_account", ..BOUND },
            Binding { argument_digest: "d2", ..BOUND },
        ] {
            assert_eq!(check(&key(1), &state, 1, &other), None, "{other:?}");
        }
    }

    #[test]
    fn a_tampered_or_malformed_state_is_refused() {
        let state = issue(&key(1), 1_000, &BOUND, REVISION);
        let later = state.replace(".1000.", ".999999999.");
        assert_eq!(check(&key(1), &later, 1, &BOUND), None, "a later expiry is not signed");
        for bad in [
            String::new(),
            "0".repeat(32),
            format!("{state}.x"),
            format!("{state}00"),
            state.replacen("v2", "v1", 1),
            "x".repeat(MAX_REQUEST_STATE_BYTES + 1),
        ] {
            assert_eq!(check(&key(1), &bad, 1, &BOUND), None, "{bad}");
        }
    }

    /// `state` grown to `len` bytes by zeros in front of its expiry (the
    /// same number, so the MAC still holds).
    fn padded(state: &str, len: usize) -> String {
        let mut parts: Vec<String> = state.split('.').map(str::to_owned).collect();
        let grow = len - state.len();
        parts[2] = format!("{}{}", "0".repeat(grow), parts[2]);
        parts.join(".")
    }

    #[test]
    fn a_state_is_checked_up_to_exactly_its_cap() {
        let state = issue(&key(1), 1_000, &BOUND, REVISION);
        let at_cap = padded(&state, MAX_REQUEST_STATE_BYTES);
        assert_eq!(at_cap.len(), MAX_REQUEST_STATE_BYTES);
        assert_eq!(check(&key(1), &at_cap, 999, &BOUND).map(|c| c.expiry_ms), Some(1_000), "checked, and valid");
        let over = padded(&state, MAX_REQUEST_STATE_BYTES + 1);
        assert_eq!(check(&key(1), &over, 999, &BOUND), None, "refused unparsed, though its MAC holds");
    }

    #[test]
    fn length_prefixes_keep_fields_apart() {
        let a = Binding { principal: "ab", tool: "c", argument_digest: "d" };
        let b = Binding { principal: "a", tool: "bc", argument_digest: "d" };
        assert_ne!(message("i", 1, &a, "r"), message("i", 1, &b, "r"));
    }
}
