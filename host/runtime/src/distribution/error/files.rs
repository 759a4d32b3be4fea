//! What is wrong with a file the host reads for a registry: a manifest, the
//! lock file, a signing key.

use super::reference::{InvalidDigest, InvalidReference};
use crate::distribution::manifest::{MANIFEST_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE};

/// What is wrong with a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ManifestProblem {
    /// It does not parse as an OCI image manifest (the parser's words).
    NotAManifest(String),
    /// Its `schemaVersion` is not 2.
    SchemaVersion(u32),
    /// A descriptor's digest is not a sha256 digest.
    Digest(InvalidDigest),
    /// It does not have exactly one `application/wasm` layer (the media
    /// types of the layers it has).
    NotAComponent(Vec<String>),
}

impl ManifestProblem {
    pub(super) fn render(&self, subject: &str) -> String {
        match self {
            ManifestProblem::NotAManifest(why) => {
                format!("{subject} is not an OCI image manifest ({MANIFEST_MEDIA_TYPE}): {why}")
            }
            ManifestProblem::SchemaVersion(version) => format!("{subject} has schemaVersion {version}: accepted 2"),
            ManifestProblem::Digest(digest) => format!("{subject}: {digest}"),
            ManifestProblem::NotAComponent(types) => format!(
                "{subject} is not a WebAssembly component artifact: expected exactly one {WASM_LAYER_MEDIA_TYPE} \
                 layer, found layers {types:?}"
            ),
        }
    }
}

/// What is wrong with a lock file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockProblem {
    /// It is not TOML of the lock file's form (the parser's words).
    #[error("{0}")]
    Syntax(String),
    /// A `version` this host does not know.
    #[error("version = {0} is not known: accepted {accepted}", accepted = crate::distribution::lock::LOCK_VERSION)]
    Version(u32),
    /// A pin whose key is not a reference.
    #[error("pins: {0}")]
    Reference(InvalidReference),
    /// A pin whose key is a reference but not `oci://REGISTRY/REPOSITORY:TAG`.
    #[error("pins: {0:?} is not a tag reference oci://REGISTRY/REPOSITORY:TAG")]
    NotATag(String),
    /// A pin whose value is not a digest.
    #[error("pins.{reference:?}: {digest}")]
    Digest {
        /// The pin's key.
        reference: String,
        /// What is wrong with its value.
        digest: InvalidDigest,
    },
    /// A tool's pinned revision (`[tools.NAME]`, written by `airlock lock`)
    /// is not of the form `airlock lock` writes.
    #[error("tools.{tool}: {problem}; run `airlock lock` to write it anew")]
    Tool {
        /// The tool's name.
        tool: String,
        /// What is wrong with its entry.
        problem: String,
    },
}

/// What is wrong with a key file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyProblem {
    /// There is no such file.
    #[error("no such file")]
    Missing,
    /// It cannot be read.
    #[error("cannot read: {0}")]
    Read(std::io::Error),
    /// Larger than the fixed cap on a key file.
    #[error("larger than the {cap}-byte cap for a key file (fixed: a PEM key is far smaller)")]
    TooLarge {
        /// The cap.
        cap: u64,
    },
    /// Not a PEM `PUBLIC KEY` (the PEM reader's words).
    #[error("not a PEM \"PUBLIC KEY\" ({0}); expected an ECDSA P-256 public key")]
    NotPublicPem(String),
    /// A public key of another kind than ECDSA P-256.
    #[error("not an ECDSA P-256 public key (the only kind accepted, as cosign generate-key-pair writes)")]
    NotP256Public,
    /// An encrypted cosign private key.
    #[error(
        "an encrypted cosign key is not read here; use a PKCS#8 key (`airlock keygen`, or `openssl genpkey \
         -algorithm EC -pkeyopt ec_paramgen_curve:P-256`), whose public key cosign verifies too"
    )]
    Encrypted,
    /// Not a PEM `PRIVATE KEY` (the PEM reader's words).
    #[error("not a PEM \"PRIVATE KEY\" (PKCS#8): {0}")]
    NotPrivatePem(String),
    /// A PKCS#8 key that is not ECDSA P-256 (ring's words).
    #[error("not an ECDSA P-256 PKCS#8 key: {0}")]
    NotP256Private(String),
}
