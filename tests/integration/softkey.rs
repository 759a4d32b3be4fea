//! A software passkey for tests: what a platform authenticator answers to
//! `navigator.credentials.create()` and `.get()` (ES256, user present and
//! verified, `none` attestation), built by hand from the WebAuthn spec so
//! that the host checks it as it checks a browser's. Also compiled into
//! `airlock-pipeline`'s unit tests (`#[path]`): one soft authenticator.

use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// One passkey: its credential id, key pair, relying party and user.
pub struct SoftKey {
    /// The credential id.
    pub id: Vec<u8>,
    key: EcdsaKeyPair,
    rp_id: String,
    user: Vec<u8>,
    counter: u32,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn unb64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).expect("base64url")
}

/// A CBOR item's head: major type and argument.
fn head(out: &mut Vec<u8>, major: u8, n: u64) {
    let major = major << 5;
    match n {
        0..=23 => out.push(major | n as u8),
        24..=0xff => out.extend([major | 24, n as u8]),
        0x100..=0xffff => {
            out.push(major | 25);
            out.extend((n as u16).to_be_bytes());
        }
        _ => {
            out.push(major | 26);
            out.extend((n as u32).to_be_bytes());
        }
    }
}

fn int(out: &mut Vec<u8>, n: i64) {
    if n >= 0 { head(out, 0, n as u64) } else { head(out, 1, (-1 - n) as u64) }
}

fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    head(out, 2, b.len() as u64);
    out.extend_from_slice(b);
}

fn text(out: &mut Vec<u8>, t: &str) {
    head(out, 3, t.len() as u64);
    out.extend_from_slice(t.as_bytes());
}

fn client_data(kind: &str, options: &Value, origin: &str) -> Vec<u8> {
    let challenge = options["challenge"].as_str().expect("a challenge");
    json!({"type": kind, "challenge": challenge, "origin": origin, "crossOrigin": false}).to_string().into_bytes()
}

impl SoftKey {
    /// Answer `navigator.credentials.create({publicKey: options})` at
    /// `origin`: the new passkey and the credential JSON the page posts.
    pub fn create(options: &Value, origin: &str) -> (SoftKey, String) {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).expect("a key");
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng).expect("a key");
        let rp_id = options["rp"]["id"].as_str().expect("rp.id").to_owned();
        let user = unb64(options["user"]["id"].as_str().expect("user.id"));
        let mut id = vec![0u8; 16];
        ring::rand::SecureRandom::fill(&rng, &mut id).expect("random");
        let point = key.public_key().as_ref();
        let (x, y) = (&point[1..33], &point[33..65]);
        let mut cose = Vec::new();
        head(&mut cose, 5, 5);
        int(&mut cose, 1);
        int(&mut cose, 2); // kty: EC2
        int(&mut cose, 3);
        int(&mut cose, -7); // alg: ES256
        int(&mut cose, -1);
        int(&mut cose, 1); // crv: P-256
        int(&mut cose, -2);
        bytes(&mut cose, x);
        int(&mut cose, -3);
        bytes(&mut cose, y);
        let mut auth_data = Sha256::digest(rp_id.as_bytes()).to_vec();
        auth_data.push(0x01 | 0x04 | 0x40); // user present, verified, attested credential data
        auth_data.extend(0u32.to_be_bytes());
        auth_data.extend([0u8; 16]); // AAGUID
        auth_data.extend((id.len() as u16).to_be_bytes());
        auth_data.extend(&id);
        auth_data.extend(cose);
        let mut attestation = Vec::new();
        head(&mut attestation, 5, 3);
        text(&mut attestation, "fmt");
        text(&mut attestation, "none");
        text(&mut attestation, "attStmt");
        head(&mut attestation, 5, 0);
        text(&mut attestation, "authData");
        bytes(&mut attestation, &auth_data);
        let credential = json!({
            "id": b64(&id),
            "rawId": b64(&id),
            "type": "public-key",
            "response": {
                "attestationObject": b64(&attestation),
                "clientDataJSON": b64(&client_data("webauthn.create", options, origin)),
            },
            "extensions": {},
        });
        (SoftKey { id, key, rp_id, user, counter: 0 }, credential.to_string())
    }

    /// Answer `navigator.credentials.get({publicKey: options})` at
    /// `origin` with this passkey (whether or not the options allow it: a
    /// test may want a refusal).
    pub fn get(&mut self, options: &Value, origin: &str) -> String {
        self.counter += 1;
        let mut auth_data = Sha256::digest(self.rp_id.as_bytes()).to_vec();
        auth_data.push(0x01 | 0x04);
        auth_data.extend(self.counter.to_be_bytes());
        let client = client_data("webauthn.get", options, origin);
        let mut signed = auth_data.clone();
        signed.extend(Sha256::digest(&client));
        let signature = self.key.sign(&SystemRandom::new(), &signed).expect("a signature");
        json!({
            "id": b64(&self.id),
            "rawId": b64(&self.id),
            "type": "public-key",
            "response": {
                "authenticatorData": b64(&auth_data),
                "clientDataJSON": b64(&client),
                "signature": b64(signature.as_ref()),
                "userHandle": b64(&self.user),
            },
            "extensions": {},
        })
        .to_string()
    }

    /// This passkey's credential id as the host names it (base64url).
    pub fn name(&self) -> String {
        b64(&self.id)
    }
}
