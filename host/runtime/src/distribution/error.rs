//! [`DistributionError`]: every way the OCI distribution API refuses or
//! fails, as data.
//!
//! Each variant carries what a caller or an operator needs (the reference,
//! the file, the registry's status and its own words, the cap and the key
//! that raises it, the accepted keys), and `Display` renders the one
//! sentence a terminal shows. [`DistributionError::blame`] groups the
//! variants by who has to act, so that a front end decides from the variant
//! what it does (the CLI's exit code) rather than from which function
//! failed or from the text.
//!
//! Where an error renders a detail of another library (an I/O error, a TOML
//! or JSON error, a TLS or HTTP failure), the detail is kept as that error or
//! as its text; nothing here is parsed back from text.

use super::settings;
use std::path::PathBuf;

mod auth;
mod files;
mod reference;
mod transfer;

pub use auth::{AuthFileProblem, AuthProblem, CredentialError, PasswordFileProblem};
pub use files::{KeyProblem, LockProblem, ManifestProblem};
pub use reference::{InvalidDigest, InvalidReference, ReferenceProblem};
pub use transfer::{Asked, Blob, Body, Capped, Missing, RedirectProblem, RequestError, UploadProblem};

/// The reference forms accepted, as every invalid-reference message ends.
const REFERENCE_FORM: &str =
    "expected oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:<64 hex digits>";

/// Who has to act on a [`DistributionError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blame {
    /// The text given as a reference is not one: the command line (or the
    /// file it came from) has to change.
    Usage,
    /// The operator's settings or lock file refuse what was asked (an
    /// unpinned or moved tag, no store, no keys, a push without a tag, a
    /// credential that is not set).
    Settings,
    /// The registry could not be reached, did not answer in time or
    /// answered with an error.
    Registry,
    /// What a registry sent or the store holds failed a check: a digest,
    /// a signature, a cap, the artifact's shape.
    Check,
    /// A local file (store, lock file, key, component) could not be read,
    /// written or used.
    Local,
}

/// Why the OCI distribution API refused or failed. `Display` is the message
/// for a terminal; the fields are the same facts as data.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DistributionError {
    /// Text that is not an `oci://` reference.
    #[error(transparent)]
    InvalidReference(#[from] InvalidReference),
    /// A digest that is not `sha256:` and 64 lowercase hex digits.
    #[error(transparent)]
    InvalidDigest(#[from] InvalidDigest),
    /// No store is configured, nor a home or cache directory to put one in.
    #[error("no store for pulled components: set [distribution] store = \"DIR\" (or HOME or XDG_CACHE_HOME)")]
    NoStore,
    /// A tag the lock file does not pin: `airlock pull` pins it.
    #[error(
        "{tag} is a tag that {} does not pin yet: run `airlock pull` to resolve it and pin its digest",
        lock_file.display()
    )]
    Unpinned {
        /// `oci://REGISTRY/REPOSITORY:TAG`.
        tag: String,
        /// The lock file.
        lock_file: PathBuf,
    },
    /// A tag that now names another digest than the lock file pins, pulled
    /// without `--update`.
    #[error(
        "{tag} now names {now}, but {} pins {pinned}: refusing the changed tag (the pinned component stays in \
         use); to accept the new one run `airlock pull --update {tag}`",
        lock_file.display()
    )]
    TagMoved {
        /// `oci://REGISTRY/REPOSITORY:TAG`.
        tag: String,
        /// The digest the registry names now.
        now: String,
        /// The digest the lock file pins.
        pinned: String,
        /// The lock file.
        lock_file: PathBuf,
    },
    /// A push to a reference without a tag.
    #[error("{reference}: a push needs a tag, oci://REGISTRY/REPOSITORY:TAG (the digest it gets is printed)")]
    PushNeedsTag {
        /// The reference given.
        reference: String,
    },
    /// `require_signature` without any public key to check with.
    #[error(
        "{reference}: require_signature is set but no public keys are configured: add keys = [\"cosign.pub\"] to \
         [distribution] or to the tool"
    )]
    NoKeys {
        /// The reference pinned to its manifest digest.
        reference: String,
    },
    /// The component's layer digest is not the `sha256` that `[tools.NAME]`
    /// pins.
    #[error("{reference}: its component's sha256 is {layer}, but [tools.{tool}] sha256 pins {pin}")]
    LayerPinMismatch {
        /// The reference pinned to its manifest digest.
        reference: String,
        /// The tool's section key.
        tool: String,
        /// The layer's sha256 (hex).
        layer: String,
        /// The pinned sha256 (hex).
        pin: String,
    },
    /// A request to a registry failed before it had an answer to use.
    #[error("{reference}: {problem}")]
    Request {
        /// The reference the request was for.
        reference: String,
        /// What went wrong.
        problem: RequestError,
    },
    /// The registry has no such tag or manifest.
    #[error("{reference}: the registry has no such {what}")]
    NotFound {
        /// The reference asked for.
        reference: String,
        /// A tag or a manifest.
        what: Missing,
    },
    /// The registry answered a request with an error status.
    #[error("{reference}: the registry answered {} {request}: {message}", status_text(*status))]
    Answered {
        /// The reference the request was for.
        reference: String,
        /// The HTTP status.
        status: u16,
        /// What was asked.
        request: Asked,
        /// The start of the registry's own answer (capped).
        message: String,
    },
    /// The registry started a blob upload that cannot be followed.
    #[error("{reference}: {problem}")]
    Upload {
        /// The reference pushed to.
        reference: String,
        /// What is wrong with the upload's location.
        problem: UploadProblem,
    },
    /// A size or count over one of the caps on what is read or written.
    #[error("{}", what.render(subject, *size, *cap))]
    OverCap {
        /// What was read, as the message names it (a reference, a file, a
        /// manifest).
        subject: String,
        /// Which cap.
        what: Capped,
        /// How much was found (bytes or layers).
        size: u64,
        /// The cap.
        cap: u64,
    },
    /// Content whose sha256 is not the digest it was asked for.
    #[error("{}", what.render(subject, expected, actual))]
    DigestMismatch {
        /// The reference, or the signature manifest, it was part of.
        subject: String,
        /// Which blob.
        what: Blob,
        /// The digest asked for.
        expected: String,
        /// The digest of what came.
        actual: String,
    },
    /// A blob in the store whose bytes no longer hash to its name.
    #[error(
        "{}: the stored blob for {digest} has sha256 {actual}: the store was changed; delete the file and pull again",
        path.display()
    )]
    StoreChanged {
        /// The file in the store.
        path: PathBuf,
        /// The digest it is stored under.
        digest: String,
        /// The digest of its bytes.
        actual: String,
    },
    /// A manifest that is not the artifact expected.
    #[error("{}", problem.render(subject))]
    BadManifest {
        /// The manifest, as the message names it.
        subject: String,
        /// What is wrong with it.
        problem: ManifestProblem,
    },
    /// A signature is required and the component has none.
    #[error(
        "{reference} is not signed (no cosign signature {signature_tag} in {repository}), and require_signature is \
         set: accepted are signatures by {accepted:?}; sign it with `airlock push --sign KEY` or `cosign sign --key \
         KEY`"
    )]
    NotSigned {
        /// The reference pinned to its manifest digest.
        reference: String,
        /// The tag its signature would have (`sha256-HEX.sig`).
        signature_tag: String,
        /// `REGISTRY/REPOSITORY`.
        repository: String,
        /// The accepted keys (`FILE sha256:FINGERPRINT`).
        accepted: Vec<String>,
    },
    /// A signature is required and none of the component's verifies with an
    /// accepted key.
    #[error(
        "{reference} has {signatures} signature(s), but none verifies with the accepted key(s) {accepted:?}: \
         refusing it{}",
        unchecked(*signatures, *checked)
    )]
    NoAcceptedSignature {
        /// The reference pinned to its manifest digest.
        reference: String,
        /// How many signatures it has.
        signatures: usize,
        /// How many were checked (`[distribution] max_signatures`).
        checked: usize,
        /// The accepted keys (`FILE sha256:FINGERPRINT`).
        accepted: Vec<String>,
    },
    /// A file that does not exist.
    #[error("{}: no such file", path.display())]
    NoSuchFile {
        /// The file.
        path: PathBuf,
    },
    /// A file that cannot be read.
    #[error("{}: cannot read: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// A file that is not UTF-8 text.
    #[error("{}: not UTF-8 text", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
    /// A file that cannot be written.
    #[error("{}: cannot write: {error}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// A directory that cannot be created.
    #[error("{}: cannot create: {error}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// A file to push that is not a component.
    #[error("{}: {why}", path.display())]
    NotAComponent {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        why: crate::compiler::NotAComponent,
    },
    /// A lock file that cannot be used.
    #[error("{}: {problem}", path.display())]
    LockFile {
        /// The lock file.
        path: PathBuf,
        /// What is wrong with it.
        problem: LockProblem,
    },
    /// A key file that is not a usable key.
    #[error("key {}: {problem}", path.display())]
    Key {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it.
        problem: KeyProblem,
    },
    /// Signing or making a key failed (the system's random source).
    #[error("cannot {action}: {detail}")]
    Crypto {
        /// What was being done.
        action: &'static str,
        /// The cryptography library's error.
        detail: String,
    },
}

impl DistributionError {
    /// Who has to act on it: decides a front end's response (the CLI's
    /// exit code) by the kind of refusal.
    pub fn blame(&self) -> Blame {
        match self {
            DistributionError::InvalidReference(_) => Blame::Usage,
            DistributionError::NoStore
            | DistributionError::Unpinned { .. }
            | DistributionError::TagMoved { .. }
            | DistributionError::PushNeedsTag { .. }
            | DistributionError::NoKeys { .. } => Blame::Settings,
            DistributionError::Request { problem: RequestError::Credentials(_), .. } => Blame::Settings,
            DistributionError::Request { .. }
            | DistributionError::NotFound { .. }
            | DistributionError::Answered { .. }
            | DistributionError::Upload { .. } => Blame::Registry,
            DistributionError::InvalidDigest(_)
            | DistributionError::LayerPinMismatch { .. }
            | DistributionError::OverCap { .. }
            | DistributionError::DigestMismatch { .. }
            | DistributionError::StoreChanged { .. }
            | DistributionError::BadManifest { .. }
            | DistributionError::NotSigned { .. }
            | DistributionError::NoAcceptedSignature { .. } => Blame::Check,
            DistributionError::NoSuchFile { .. }
            | DistributionError::Read { .. }
            | DistributionError::NotUtf8 { .. }
            | DistributionError::Write { .. }
            | DistributionError::CreateDir { .. }
            | DistributionError::NotAComponent { .. }
            | DistributionError::LockFile { .. }
            | DistributionError::Key { .. }
            | DistributionError::Crypto { .. } => Blame::Local,
        }
    }
}

/// `404 Not Found`, or the number alone for a status HTTP does not know.
fn status_text(status: u16) -> String {
    http::StatusCode::from_u16(status).map_or_else(|_| status.to_string(), |s| s.to_string())
}

/// The note on signatures past `[distribution] max_signatures`, which were
/// not looked at (empty when every one was).
pub(super) fn unchecked(signatures: usize, checked: usize) -> String {
    if signatures > checked {
        format!(
            "; only the first {checked} of its {signatures} signatures were checked ([distribution] max_signatures \
             raises it, up to {})",
            settings::MAX_SIGNATURES
        )
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests;
