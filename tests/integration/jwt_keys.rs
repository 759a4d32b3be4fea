//! Signing keys and key servers for JWT tests: keys generated with ring,
//! their JWKs, tokens signed with jsonwebtoken, and a loopback JWKS server
//! that holds its fetches. Used by the JWT tests and by the attack bench
//! (`host/airlock/benches/pipeline/attacks.rs` includes this file).

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _};
use serde_json::{Value, json};
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener};
use std::sync::mpsc;

pub fn b64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// A signing key the test generated, and its public JWK.
pub struct SigningKey {
    pub alg: Algorithm,
    pub private: EncodingKey,
    pub jwk: Value,
}

pub fn ed25519(kid: &str) -> SigningKey {
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).expect("generate");
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("parse");
    let jwk = json!({"kty": "OKP", "crv": "Ed25519", "x": b64(pair.public_key().as_ref()), "kid": kid, "use": "sig"});
    SigningKey { alg: Algorithm::EdDSA, private: EncodingKey::from_ed_der(pkcs8.as_ref()), jwk }
}

pub fn p256(kid: &str) -> SigningKey {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("generate");
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).expect("parse");
    let point = pair.public_key().as_ref();
    let (x, y) = point[1..].split_at(32);
    let jwk = json!({"kty": "EC", "crv": "P-256", "x": b64(x), "y": b64(y), "kid": kid, "alg": "ES256"});
    SigningKey { alg: Algorithm::ES256, private: EncodingKey::from_ec_der(pkcs8.as_ref()), jwk }
}

pub fn sign(key: &SigningKey, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(key.alg);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(&header, claims, &key.private).expect("sign")
}

pub fn jwks(keys: &[&SigningKey]) -> String {
    json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()}).to_string()
}

/// A loopback JWKS server that answers its first request with `document`
/// at once and holds every later one until `release` is sent; each request
/// is reported on the returned channel as it arrives (its number, from 1).
pub fn slow_jwks_server(document: String) -> (SocketAddr, mpsc::Receiver<usize>, mpsc::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (arrived, arrivals) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            let _ = arrived.send(n + 1);
            if n > 0 {
                // Held open, unanswered, until released (or the test ends).
                let _ = released.recv();
                held.push(stream);
                continue;
            }
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{document}",
                document.len()
            );
            let _ = stream.write_all(response.as_bytes());
        }
    });
    (addr, arrivals, release)
}
