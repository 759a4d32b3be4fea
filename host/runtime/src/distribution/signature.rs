//! Cosign-format signatures: the signature image tagged `sha256-HEX.sig` in
//! the component's repository, whose layers are simple-signing payloads
//! (`application/vnd.dev.cosign.simplesigning.v1+json`) each carrying an
//! ECDSA P-256 / SHA-256 signature (ASN.1 DER, base64) in the annotation
//! `dev.cosignproject.cosign/signature`.
//!
//! Trusted: only the operator's public keys (PEM `PUBLIC KEY`, as
//! `cosign generate-key-pair` and `airlock keygen` write them). Untrusted:
//! everything from the registry — a payload counts only if a key verifies
//! its signature *and* the payload names the very manifest digest being
//! loaded. Keyless (Fulcio certificate) signatures are not verified.

use super::error::{DistributionError, KeyProblem};
use super::store::ReadFailure;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1, ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _};
use serde_json::Value;
use std::path::{Path, PathBuf};
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{PrivatePkcs8KeyDer, SubjectPublicKeyInfoDer};

/// The media type of a simple-signing payload layer.
pub const PAYLOAD_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation holding a layer's signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The `critical.type` of a cosign image signature.
const PAYLOAD_TYPE: &str = "cosign container image signature";
/// The config media type of a signature image.
pub const SIGNATURE_CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";
/// Largest key file read: the operator's own PEM file, far smaller.
const MAX_KEY_FILE_BYTES: u64 = 16 << 10;
/// The DER prefix of a P-256 SubjectPublicKeyInfo (id-ecPublicKey,
/// prime256v1, a 66-byte bit string); the 65-byte uncompressed point follows.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce,
    0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// The signature tag of the manifest `digest`: `sha256-HEX.sig`.
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

/// An operator's public key.
#[derive(Debug, Clone)]
pub struct PublicKey {
    /// How the key is named in messages: its file name.
    pub name: String,
    /// `sha256:` and the first 16 hex digits of the SubjectPublicKeyInfo's
    /// sha256.
    pub fingerprint: String,
    point: Vec<u8>,
}

impl PublicKey {
    /// `NAME sha256:FINGERPRINT`, as `airlock tools` and audit records show a
    /// signer.
    pub fn signer(&self) -> String {
        format!("{} {}", self.name, self.fingerprint)
    }
}

/// One signature from a signature image: the payload and its signature.
#[derive(Debug, Clone)]
pub struct Signed {
    /// The simple-signing payload bytes (checked against their digest).
    pub payload: Vec<u8>,
    /// The base64 annotation as found.
    pub signature_b64: String,
}

/// The refusal of the key file at `path`.
fn bad_key(path: &Path, problem: KeyProblem) -> DistributionError {
    DistributionError::Key { path: path.to_owned(), problem }
}

fn read_capped(path: &Path) -> Result<Vec<u8>, DistributionError> {
    let problem = match super::store::read_capped(path, MAX_KEY_FILE_BYTES) {
        Ok(Some(bytes)) => return Ok(bytes),
        Ok(None) => KeyProblem::Missing,
        Err(ReadFailure::TooLarge { .. }) => KeyProblem::TooLarge { cap: MAX_KEY_FILE_BYTES },
        Err(ReadFailure::Io(err)) => KeyProblem::Read(err),
        // Bytes are not decoded here; the PEM reader says what they are.
        Err(ReadFailure::NotUtf8) => KeyProblem::NotPublicPem("not text".to_owned()),
    };
    Err(bad_key(path, problem))
}

fn name_of(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// Read the public keys at `paths`.
///
/// # Errors
///
/// A file is missing or is not a PEM ECDSA P-256 public key (named).
pub fn load_keys(paths: &[PathBuf]) -> Result<Vec<PublicKey>, DistributionError> {
    paths.iter().map(|path| load_key(path)).collect()
}

fn load_key(path: &Path) -> Result<PublicKey, DistributionError> {
    let bytes = read_capped(path)?;
    let spki = SubjectPublicKeyInfoDer::from_pem_slice(&bytes)
        .map_err(|err| bad_key(path, KeyProblem::NotPublicPem(err.to_string())))?;
    let der: &[u8] = spki.as_ref();
    let point = match der.strip_prefix(&P256_SPKI_PREFIX[..]) {
        Some(point) if point.len() == 65 => point.to_vec(),
        _ => return Err(bad_key(path, KeyProblem::NotP256Public)),
    };
    let fingerprint = super::store::sha256_digest(der);
    Ok(PublicKey { name: name_of(path), fingerprint: fingerprint.get(..23).unwrap_or(&fingerprint).to_owned(), point })
}

/// The simple-signing payload for `manifest_digest` in `docker_reference`.
pub fn payload(docker_reference: &str, manifest_digest: &str) -> Vec<u8> {
    let payload = serde_json::json!({
        "critical": {
            "identity": { "docker-reference": docker_reference },
            "image": { "docker-manifest-digest": manifest_digest },
            "type": PAYLOAD_TYPE,
        },
        "optional": null,
    });
    serde_json::to_vec(&payload).unwrap_or_default()
}

/// The config blob of a signature image whose one layer is the payload
/// `payload_digest`, as cosign writes it.
pub fn config(payload_digest: &str) -> Vec<u8> {
    let config = serde_json::json!({
        "architecture": "", "os": "", "config": {},
        "rootfs": { "type": "layers", "diff_ids": [payload_digest] },
    });
    serde_json::to_vec(&config).unwrap_or_default()
}

/// Whether `signed` is a signature of `manifest_digest` by `key`.
fn verifies(signed: &Signed, manifest_digest: &str, key: &PublicKey) -> bool {
    use base64::Engine as _;
    let Ok(signature) = base64::engine::general_purpose::STANDARD.decode(signed.signature_b64.trim()) else {
        return false;
    };
    let key = ring::signature::UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &key.point);
    if key.verify(&signed.payload, &signature).is_err() {
        return false;
    }
    // Only a verified payload is parsed: it must name this very manifest.
    let Ok(payload) = serde_json::from_slice::<Value>(&signed.payload) else { return false };
    payload.pointer("/critical/type").and_then(Value::as_str) == Some(PAYLOAD_TYPE)
        && payload.pointer("/critical/image/docker-manifest-digest").and_then(Value::as_str) == Some(manifest_digest)
}

/// The first key that verifies one of `signatures` of `manifest_digest`
/// (the caller has cut them to `[distribution] max_signatures`).
pub fn verify<'k>(signatures: &[Signed], manifest_digest: &str, keys: &'k [PublicKey]) -> Option<&'k PublicKey> {
    keys.iter().find(|key| signatures.iter().any(|s| verifies(s, manifest_digest, key)))
}

/// A private key for signing: PKCS#8 PEM (`PRIVATE KEY`), ECDSA P-256.
pub struct SigningKey {
    pair: EcdsaKeyPair,
}

impl SigningKey {
    /// Read the private key at `path`.
    ///
    /// # Errors
    ///
    /// Not a plain PKCS#8 ECDSA P-256 key (cosign's encrypted keys are
    /// named as such, with what to do).
    pub fn load(path: &Path) -> Result<SigningKey, DistributionError> {
        let bytes = read_capped(path)?;
        if bytes.windows(9).any(|w| w == b"ENCRYPTED") {
            return Err(bad_key(path, KeyProblem::Encrypted));
        }
        let der = PrivatePkcs8KeyDer::from_pem_slice(&bytes)
            .map_err(|err| bad_key(path, KeyProblem::NotPrivatePem(err.to_string())))?;
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, der.secret_pkcs8_der(), &SystemRandom::new())
                .map_err(|err| bad_key(path, KeyProblem::NotP256Private(err.to_string())))?;
        Ok(SigningKey { pair })
    }

    /// The base64 DER signature of `payload`.
    ///
    /// # Errors
    ///
    /// The system random source failed.
    pub fn sign(&self, payload: &[u8]) -> Result<String, DistributionError> {
        use base64::Engine as _;
        let signature = self
            .pair
            .sign(&SystemRandom::new(), payload)
            .map_err(|err| DistributionError::Crypto { action: "sign", detail: err.to_string() })?;
        Ok(base64::engine::general_purpose::STANDARD.encode(signature.as_ref()))
    }
}

/// A new key pair: (PKCS#8 private key PEM, public key PEM).
///
/// # Errors
///
/// [`DistributionError::Crypto`]: the system random source failed.
pub fn generate() -> Result<(String, String), DistributionError> {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
        .map_err(|err| DistributionError::Crypto { action: "generate a key", detail: err.to_string() })?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
        .map_err(|err| DistributionError::Crypto { action: "read the generated key", detail: err.to_string() })?;
    let mut spki = P256_SPKI_PREFIX.to_vec();
    spki.extend_from_slice(pair.public_key().as_ref());
    Ok((pem("PRIVATE KEY", pkcs8.as_ref()), pem("PUBLIC KEY", &spki)))
}

fn pem(label: &str, der: &[u8]) -> String {
    use base64::Engine as _;
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut text = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        text.push_str(&String::from_utf8_lossy(line));
        text.push('\n');
    }
    text.push_str(&format!("-----END {label}-----\n"));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(dir: &Path, name: &str) -> (SigningKey, PublicKey) {
        let (private, public) = generate().unwrap();
        std::fs::write(dir.join(format!("{name}.key")), private).unwrap();
        std::fs::write(dir.join(format!("{name}.pub")), public).unwrap();
        let key = SigningKey::load(&dir.join(format!("{name}.key"))).unwrap();
        let public = load_keys(&[dir.join(format!("{name}.pub"))]).unwrap().remove(0);
        (key, public)
    }

    #[test]
    fn a_signature_verifies_only_with_its_key_and_for_its_digest() {
        let dir = tempfile::tempdir().unwrap();
        let (key, public) = pair(dir.path(), "dev");
        let (_, other) = pair(dir.path(), "other");
        let digest = format!("sha256:{}", "ab".repeat(32));
        let payload = payload("127.0.0.1:5000/tools/echo", &digest);
        let signed = Signed { signature_b64: key.sign(&payload).unwrap(), payload };
        let keys = [other.clone(), public.clone()];
        assert_eq!(verify(std::slice::from_ref(&signed), &digest, &keys).map(|k| k.name.as_str()), Some("dev.pub"));
        assert!(verify(std::slice::from_ref(&signed), &digest, std::slice::from_ref(&other)).is_none());
        let elsewhere = format!("sha256:{}", "cd".repeat(32));
        assert!(verify(std::slice::from_ref(&signed), &elsewhere, &keys).is_none(), "the payload names its digest");
        let mut tampered = signed.clone();
        tampered.payload = super::payload("127.0.0.1:5000/tools/echo", &elsewhere);
        assert!(verify(&[tampered], &elsewhere, &keys).is_none());
        assert!(public.signer().starts_with("dev.pub sha256:") && public.fingerprint.len() == 23);
    }

    #[test]
    fn a_key_file_of_exactly_its_fixed_cap_is_read_and_one_byte_more_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (_, public) = generate().unwrap();
        let path = dir.path().join("dev.pub");
        let cap = usize::try_from(MAX_KEY_FILE_BYTES).unwrap();
        let padded = |len: usize| public.clone() + &"\n".repeat(len - public.len());
        std::fs::write(&path, padded(cap)).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), MAX_KEY_FILE_BYTES);
        assert_eq!(load_keys(std::slice::from_ref(&path)).unwrap()[0].name, "dev.pub");
        std::fs::write(&path, padded(cap + 1)).unwrap();
        let err = load_keys(&[path]).unwrap_err().to_string();
        assert!(err.contains(&format!("{MAX_KEY_FILE_BYTES}-byte cap")) && err.contains("dev.pub"), "{err}");
    }

    #[test]
    fn keys_of_the_wrong_kind_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cosign.key");
        std::fs::write(
            &path,
            "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAA==\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n",
        )
        .unwrap();
        assert!(matches!(
            SigningKey::load(&path).err().unwrap(),
            DistributionError::Key { problem: KeyProblem::Encrypted, .. }
        ));
        let path = dir.path().join("junk.pub");
        std::fs::write(&path, "hello").unwrap();
        assert!(load_keys(&[path]).unwrap_err().to_string().contains("junk.pub"));
        assert_eq!(signature_tag("sha256:abc"), "sha256-abc.sig");
    }
}
