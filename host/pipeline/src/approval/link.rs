//! Signed approval links: `/approvals/<id>?sig=<mac>`.
//!
//! The id is 128 random bits in hex; the MAC is HMAC-SHA256, under the
//! host's link key, over everything the approval is bound to — its id, the
//! principal it acts for, the tool and its revision, the digest of the
//! arguments, the call id and the expiry — each length-prefixed so that no
//! two different tuples sign the same bytes. A link whose approval changed
//! (another revision, other arguments, a later expiry) does not check out,
//! and a link cannot be made for an approval the host did not open.
//!
//! The same key signs the page's own cookies and form tokens
//! ([`LinkKey::sign`] with a context of their own), so one secret is kept,
//! and in a fleet every replica derives it from the fleet's state key.
//!
//! Trusts nothing in what it is handed: a MAC is at most
//! [`MAX_MAC_TEXT_BYTES`] and compared in constant time
//! (`ring::hmac::verify`).

use super::Approval;
use ring::hmac;
use ring::rand::SecureRandom as _;

/// Longest MAC text accepted (43 base64url characters are 32 bytes).
pub const MAX_MAC_TEXT_BYTES: usize = 64;
/// Separates approval links from every other use of the key.
const LINK_CONTEXT: &[u8] = b"airlock approval link v1";
/// How the fleet's state key becomes the link key.
const FLEET_CONTEXT: &[u8] = b"airlock approval key v1";

/// The key that signs approval links and the approval page's cookies.
#[derive(Clone)]
pub struct LinkKey(hmac::Key);

impl std::fmt::Debug for LinkKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkKey(…)")
    }
}

impl LinkKey {
    /// A key of this process alone, from the system's random source: links
    /// end with the process (the host's approvals keep theirs in the state
    /// directory: [`LinkKey::from_bytes`] of [`LinkKey::random_bytes`], made
    /// once).
    ///
    /// # Errors
    ///
    /// The system has no random source.
    pub fn random() -> Result<Self, String> {
        Ok(Self::from_bytes(&Self::random_bytes()?))
    }

    /// 32 bytes from the system's random source, for a key to keep.
    ///
    /// # Errors
    ///
    /// The system has no random source.
    pub fn random_bytes() -> Result<Vec<u8>, String> {
        let mut bytes = vec![0u8; 32];
        ring::rand::SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| "the system's random source cannot be read".to_owned())?;
        Ok(bytes)
    }

    /// The key made of `secret` (kept by the host, at least 32 bytes).
    pub fn from_bytes(secret: &[u8]) -> Self {
        Self(hmac::Key::new(hmac::HMAC_SHA256, secret))
    }

    /// The key every replica of a fleet derives from its shared state key,
    /// so that a link made by one is checked by another.
    pub fn from_shared(secret: &[u8]) -> Self {
        let derived = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, secret), FLEET_CONTEXT);
        Self(hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref()))
    }

    /// The MAC of `parts` under `context`, base64url without padding.
    pub fn sign<T: AsRef<[u8]>>(&self, context: &[u8], parts: &[T]) -> String {
        use base64::Engine as _;
        let tag = hmac::sign(&self.0, &framed(context, parts));
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(tag.as_ref())
    }

    /// Whether `mac` is the MAC of `parts` under `context`.
    pub fn verify<T: AsRef<[u8]>>(&self, context: &[u8], parts: &[T], mac: &str) -> bool {
        use base64::Engine as _;
        if mac.len() > MAX_MAC_TEXT_BYTES {
            return false;
        }
        let Ok(tag) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(mac) else { return false };
        hmac::verify(&self.0, &framed(context, parts), &tag).is_ok()
    }

    /// `value` sealed under `context`: base64url JSON, a dot, its MAC. Not
    /// secret, only unforgeable: what the page hands a browser to bring
    /// back (a cookie, a ceremony's state).
    pub fn seal<T: serde::Serialize>(&self, context: &[u8], value: &T) -> Option<String> {
        use base64::Engine as _;
        let json = serde_json::to_vec(value).ok()?;
        let body = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json);
        let mac = self.sign(context, &[body.as_bytes()]);
        Some(format!("{body}.{mac}"))
    }

    /// The value [`LinkKey::seal`] sealed in `text` under `context`, if
    /// `text` is at most `max_bytes` and its MAC checks.
    pub fn open<T: serde::de::DeserializeOwned>(&self, context: &[u8], text: &str, max_bytes: usize) -> Option<T> {
        use base64::Engine as _;
        if text.len() > max_bytes {
            return None;
        }
        let (body, mac) = text.rsplit_once('.')?;
        if !self.verify(context, &[body.as_bytes()], mac) {
            return None;
        }
        let json = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(body).ok()?;
        serde_json::from_slice(&json).ok()
    }

    /// The `sig` of `approval`'s link.
    pub fn link_mac(&self, approval: &Approval) -> String {
        self.sign(LINK_CONTEXT, &link_parts(approval))
    }

    /// Whether `mac` is the `sig` of `approval`'s link.
    pub fn link_checks(&self, approval: &Approval, mac: &str) -> bool {
        self.verify(LINK_CONTEXT, &link_parts(approval), mac)
    }
}

/// What a link is bound to.
fn link_parts(approval: &Approval) -> [Vec<u8>; 7] {
    [
        approval.id.as_bytes().to_vec(),
        approval.principal.as_bytes().to_vec(),
        approval.tool.as_bytes().to_vec(),
        approval.revision.as_bytes().to_vec(),
        approval.argument_digest.as_bytes().to_vec(),
        approval.call_id.as_bytes().to_vec(),
        approval.expires_ms.to_be_bytes().to_vec(),
    ]
}

/// The MAC input: the context, then every part length-prefixed.
fn framed<T: AsRef<[u8]>>(context: &[u8], parts: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(context.len() + parts.iter().map(|p| p.as_ref().len() + 8).sum::<usize>() + 8);
    for part in std::iter::once(context).chain(parts.iter().map(AsRef::as_ref)) {
        out.extend_from_slice(&(part.len() as u64).to_be_bytes());
        out.extend_from_slice(part);
    }
    out
}

/// A new approval id: 128 random bits as 32 lowercase hex digits.
///
/// # Errors
///
/// The system has no random source.
pub fn new_id() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new().fill(&mut bytes).map_err(|_| "the system's random source cannot be read")?;
    Ok(hex::encode(bytes))
}

/// Whether `id` looks like an id [`new_id`] made (checked before any
/// lookup, so a client's text is never used as a key unchecked).
pub fn is_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::super::{Approval, Approver};
    use super::*;

    fn approval() -> Approval {
        Approval {
            id: "0123456789abcdef0123456789abcdef".into(),
            principal: "alice".into(),
            tool: "create_transfer".into(),
            revision: "sha256:aa".into(),
            argument_digest: "sha256:bb".into(),
            call_id: "c1".into(),
            card: "Transfer 20000 to acc-bob".into(),
            reason: "transfers above 10,000 need confirmation".into(),
            approver: Approver::Caller,
            created_ms: 1,
            expires_ms: 1_000,
            answer: None,
            used: false,
        }
    }

    #[test]
    fn a_link_checks_only_for_the_approval_it_was_made_for() {
        let key = LinkKey::random().unwrap();
        let mac = key.link_mac(&approval());
        assert!(key.link_checks(&approval(), &mac));
        for changed in [
            Approval { principal: "bob".into(), ..approval() },
            Approval { revision: "sha256:cc".into(), ..approval() },
            Approval { argument_digest: "sha256:dd".into(), ..approval() },
            Approval { expires_ms: 2_000, ..approval() },
            Approval { call_id: "c2".into(), ..approval() },
        ] {
            assert!(!key.link_checks(&changed, &mac), "{changed:?}");
        }
        assert!(!LinkKey::random().unwrap().link_checks(&approval(), &mac), "another key");
        assert!(!key.link_checks(&approval(), &format!("{mac}A")));
        assert!(!key.link_checks(&approval(), &"A".repeat(MAX_MAC_TEXT_BYTES + 1)));
        assert!(!key.link_checks(&approval(), "not base64!"));
    }

    #[test]
    fn replicas_derive_the_same_key_from_the_fleet_secret() {
        let a = LinkKey::from_shared(&[7; 32]);
        let b = LinkKey::from_shared(&[7; 32]);
        assert!(b.link_checks(&approval(), &a.link_mac(&approval())));
        assert!(!LinkKey::from_shared(&[8; 32]).link_checks(&approval(), &a.link_mac(&approval())));
    }

    #[test]
    fn contexts_and_length_prefixes_keep_uses_apart() {
        let key = LinkKey::random().unwrap();
        let mac = key.sign(b"a", &[b"bc".as_slice()]);
        assert!(!key.verify(b"ab", &[b"c".as_slice()], &mac));
        assert!(!key.verify(b"b", &[b"bc".as_slice()], &mac));
        assert!(key.verify(b"a", &[b"bc".as_slice()], &mac));
    }

    #[test]
    fn ids_are_128_random_bits_in_hex() {
        let (a, b) = (new_id().unwrap(), new_id().unwrap());
        assert!(is_id(&a) && is_id(&b) && a != b);
        assert!(!is_id("0123") && !is_id(&"G".repeat(32)) && !is_id(&a.to_uppercase()));
    }
}
