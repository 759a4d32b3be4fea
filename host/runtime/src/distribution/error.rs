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

use super::manifest::{MANIFEST_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE};
use super::settings;
use std::fmt;
use std::path::PathBuf;

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

/// Text that is not an `oci://` reference: the text (its first 80
/// characters) and what part is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not an OCI reference: {problem}; {REFERENCE_FORM}")]
pub struct InvalidReference {
    /// The text given, cut to its first 80 characters.
    pub text: String,
    /// What part is wrong.
    pub problem: ReferenceProblem,
}

/// What part of a reference is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReferenceProblem {
    /// Longer than [`super::MAX_REFERENCE_LEN`].
    #[error("{len} bytes long, and at most {max} are accepted", max = super::MAX_REFERENCE_LEN)]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// It does not start with `oci://` (or has another scheme).
    #[error("it does not start with oci://")]
    NoScheme,
    /// The digest after `@` is not a sha256 digest.
    #[error(transparent)]
    Digest(InvalidDigest),
    /// Nothing after the registry.
    #[error("no repository after the registry")]
    NoRepository,
    /// The registry is not a host name or `host:port`.
    #[error("registry {0:?} is not a host name or host:port")]
    Registry(String),
    /// The registry's port is not a number up to 65535.
    #[error("registry {0:?} has a port that is not a number up to 65535")]
    Port(String),
    /// The repository is not lowercase path components.
    #[error("repository {0:?} must be lowercase path components [a-z0-9] joined by . _ - and separated by /")]
    Repository(String),
    /// The tag is not 1 to 128 of the accepted characters.
    #[error(
        "tag {0:?} must be 1 to {max} of A-Z a-z 0-9 . _ - (not starting with . or -)",
        max = super::reference::MAX_TAG_LEN
    )]
    Tag(String),
    /// It names neither a tag nor a digest.
    #[error("it names neither a tag nor a digest")]
    Unnamed,
}

/// A digest that is not `sha256:` and 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidDigest {
    /// Another algorithm, or no `sha256:` prefix.
    #[error("digest {0:?} is not sha256:<64 hex digits> (only sha256 is accepted)")]
    NotSha256(String),
    /// Not 64 lowercase hex digits after `sha256:`.
    #[error("digest {0:?} is not sha256:<64 lowercase hex digits>")]
    NotHex(String),
}

/// What a registry did not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// The tag asked for.
    Tag,
    /// The manifest digest asked for.
    Manifest,
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Missing::Tag => "tag",
            Missing::Manifest => "manifest",
        })
    }
}

/// A request a registry answered with an error, as its message names it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Asked {
    /// Fetching the manifest with this tag or digest.
    Manifest(String),
    /// Fetching the blob with this digest.
    Blob(String),
    /// Starting a blob upload.
    StartUpload,
    /// Uploading a blob.
    BlobUpload,
    /// Putting a manifest.
    PutManifest,
}

impl fmt::Display for Asked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Asked::Manifest(name) => write!(f, "for the manifest {name}"),
            Asked::Blob(digest) => write!(f, "for the blob {digest}"),
            Asked::StartUpload => f.write_str("to starting an upload"),
            Asked::BlobUpload => f.write_str("to a blob upload"),
            Asked::PutManifest => f.write_str("to the manifest"),
        }
    }
}

/// A blob upload whose location cannot be followed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UploadProblem {
    /// The registry started an upload without saying where to send it.
    #[error("the registry started an upload without a Location")]
    NoLocation,
    /// The upload's location is not a URL.
    #[error("upload Location {0:?} is not a URL")]
    NotAUrl(String),
    /// The upload goes to another host, which is not followed.
    #[error("the registry sends uploads to another host ({0}); not supported")]
    OtherHost(String),
}

/// The body of a registry's answer, by the cap it is read under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Body {
    /// A manifest (`[distribution] max_manifest_bytes`).
    Manifest,
    /// A component layer (`[distribution] max_component_bytes`).
    Component,
    /// A signature payload (`[distribution] max_signature_payload_bytes`).
    SignaturePayload,
    /// A token server's answer (`[distribution] max_token_response_bytes`).
    TokenResponse,
    /// An answer that should carry no body (a fixed cap).
    Empty,
}

impl Body {
    /// The `[distribution]` key that raises the cap, as the operator writes
    /// it; `None` for a fixed cap.
    pub fn key(self) -> Option<&'static str> {
        match self {
            Body::Manifest => Some("max_manifest_bytes"),
            Body::Component => Some("max_component_bytes"),
            Body::SignaturePayload => Some("max_signature_payload_bytes"),
            Body::TokenResponse => Some("max_token_response_bytes"),
            Body::Empty => None,
        }
    }

    /// What raises the cap, for messages.
    fn raise(self) -> String {
        match self.key() {
            Some(key) => format!("[distribution] {key} raises it"),
            None => "a fixed cap: this answer should carry no body".to_owned(),
        }
    }
}

/// Which cap a [`DistributionError::OverCap`] is over.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Capped {
    /// The size a manifest gives its component layer
    /// (`[distribution] max_component_bytes`).
    ComponentLayer,
    /// The size a signature manifest gives a payload
    /// (`[distribution] max_signature_payload_bytes`).
    SignaturePayload,
    /// A blob in the store, read under the cap of what it is.
    StoredBlob {
        /// The digest it is stored under.
        digest: String,
        /// What it is.
        body: Body,
    },
    /// The lock file, read or (`writing`) about to be written
    /// (`[distribution] max_lock_bytes`).
    LockFile {
        /// Whether the lock file would grow past the cap by a write.
        writing: bool,
    },
    /// A component file to push (the fixed limit for a component).
    ComponentFile,
    /// The layers of a manifest (`[distribution] max_layers`).
    Layers,
}

impl Capped {
    /// The `[distribution]` key that raises the cap, as the operator writes
    /// it; `None` for a fixed cap.
    pub fn key(&self) -> Option<&'static str> {
        match self {
            Capped::ComponentLayer => Some("max_component_bytes"),
            Capped::SignaturePayload => Some("max_signature_payload_bytes"),
            Capped::StoredBlob { body, .. } => body.key(),
            Capped::LockFile { .. } => Some("max_lock_bytes"),
            Capped::ComponentFile => None,
            Capped::Layers => Some("max_layers"),
        }
    }

    fn render(&self, subject: &str, size: u64, cap: u64) -> String {
        match self {
            Capped::ComponentLayer => format!(
                "{subject}: the component layer is {size} bytes, over the {cap}-byte cap ([distribution] \
                 max_component_bytes raises it, up to {})",
                crate::compiler::MAX_COMPONENT_BYTES
            ),
            Capped::SignaturePayload => format!(
                "{subject}: a payload of {size} bytes is over the {cap}-byte cap for a signature payload \
                 ([distribution] max_signature_payload_bytes raises it, up to {})",
                settings::MAX_SIGNATURE_PAYLOAD_BYTES
            ),
            Capped::StoredBlob { digest, body } => {
                format!("{subject}: stored blob {digest} is larger than the {cap}-byte cap ({})", body.raise())
            }
            Capped::LockFile { writing } => format!(
                "{subject}: the lock file {} the {cap}-byte cap ([distribution] max_lock_bytes raises it, up to {})",
                if *writing { "would grow to more than" } else { "is larger than" },
                settings::MAX_LOCK_BYTES
            ),
            Capped::ComponentFile => format!("{subject}: larger than the {cap}-byte limit for a component"),
            Capped::Layers => format!(
                "{subject} has {size} layers: at most {cap} are accepted ([distribution] max_layers raises it, up to \
                 {})",
                settings::MAX_LAYERS
            ),
        }
    }
}

/// Which blob a [`DistributionError::DigestMismatch`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Blob {
    /// A manifest fetched by its digest.
    Manifest,
    /// A component layer.
    ComponentLayer,
    /// A signature payload.
    SignaturePayload,
}

impl Blob {
    fn render(self, subject: &str, expected: &str, actual: &str) -> String {
        let what = match self {
            Blob::Manifest => "manifest",
            Blob::ComponentLayer => "component layer",
            Blob::SignaturePayload => return format!("{subject}: a payload does not match its digest {expected}"),
        };
        format!(
            "{subject}: the registry sent a {what} whose sha256 is {actual}, not the {expected} asked for: refusing it \
             (the registry or something between is serving other content)"
        )
    }
}

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
    fn render(&self, subject: &str) -> String {
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
    #[error("version = {0} is not known: accepted {accepted}", accepted = super::lock::LOCK_VERSION)]
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

/// Why a request to a registry failed before it had an answer to use.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// No connection: name lookup, TCP or TLS.
    #[error("registry {registry} cannot be reached: {why}")]
    Unreachable {
        /// `host[:port]`.
        registry: String,
        /// What failed, with the address tried.
        why: String,
    },
    /// An answer that stopped coming for `[distribution] read_timeout_secs`.
    #[error("{url}: no {waiting} within {secs}s (read_timeout_secs)")]
    Stalled {
        /// The URL asked.
        url: String,
        /// What was waited for: the answer, or further bytes of it.
        waiting: &'static str,
        /// The timeout.
        secs: u64,
    },
    /// A request not done within `[distribution] request_timeout_secs`.
    #[error(
        "registry {registry}: {path} was not answered in full within {secs}s ([distribution] request_timeout_secs \
         raises it)"
    )]
    Deadline {
        /// `host[:port]`.
        registry: String,
        /// The path asked.
        path: String,
        /// The deadline.
        secs: u64,
    },
    /// The exchange failed at the HTTP level (the HTTP library's words), or
    /// a URL could not be made.
    #[error("{subject}: {detail}")]
    Protocol {
        /// The URL or registry.
        subject: String,
        /// What failed.
        detail: String,
    },
    /// A redirect that is not followed.
    #[error("{url}: {problem}")]
    Redirect {
        /// The URL that redirected.
        url: String,
        /// Why it is not followed.
        problem: RedirectProblem,
    },
    /// More redirects than `[distribution] max_redirects`.
    #[error(
        "{url}: more than {max} redirects ([distribution] max_redirects raises it, up to {})",
        settings::MAX_REDIRECTS
    )]
    TooManyRedirects {
        /// The URL of the last redirect.
        url: String,
        /// The cap.
        max: usize,
    },
    /// An answer larger than the cap of what it carries; `size` is `None`
    /// when it was counted as it came rather than declared.
    #[error(
        "{url}: the answer is {} bytes, over the {cap}-byte cap ({})",
        size.map_or_else(|| format!("more than {cap}"), |size| size.to_string()),
        body.raise()
    )]
    TooLarge {
        /// The URL asked.
        url: String,
        /// The declared size, if it was declared.
        size: Option<u64>,
        /// The cap.
        cap: u64,
        /// What the answer carries.
        body: Body,
    },
    /// The registry asks for authentication that cannot be given.
    #[error("{}", problem.render(registry))]
    Auth {
        /// `host[:port]`.
        registry: String,
        /// Why.
        problem: AuthProblem,
    },
    /// The operator's credentials for the registry cannot be read.
    #[error(transparent)]
    Credentials(CredentialError),
    /// The host's TLS client could not be set up.
    #[error("the host could not set up TLS: {0}")]
    Tls(String),
}

/// A redirect that is not followed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RedirectProblem {
    /// No `Location`.
    #[error("a redirect without a Location")]
    NoLocation,
    /// A `Location` that is not a URL.
    #[error("redirect to a Location that is not a URL")]
    NotAUrl,
    /// From a registry not on loopback to this machine.
    #[error(
        "redirect to this machine ({0}) refused: a registry that is not on loopback may only redirect to other hosts"
    )]
    ToThisMachine(String),
    /// To plain http from https, or to a host not allowed plain http.
    #[error(
        "redirect to plain http ({0}) refused: only loopback registries and [distribution] insecure_registries are \
         spoken to without TLS, and an https registry never redirects to http"
    )]
    ToPlainHttp(String),
}

/// Why a registry's authentication challenge cannot be answered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthProblem {
    /// A 401 without `WWW-Authenticate`.
    NoChallenge,
    /// Credentials are asked for and the operator has none for the
    /// registry (the auth files looked at).
    NoCredentials(Vec<PathBuf>),
    /// A scheme other than Basic and Bearer.
    Scheme(String),
    /// A Bearer challenge without a realm.
    NoRealm,
    /// A token realm that is not a URL.
    RealmNotAUrl(String),
    /// A token realm over plain http, or on this machine for a registry
    /// that is not.
    RealmRefused(String),
    /// The token server refused the credentials.
    TokenRefused {
        /// The token realm.
        realm: String,
        /// Its HTTP status.
        status: u16,
        /// The start of its answer (capped).
        message: String,
    },
    /// The token server's answer is not JSON.
    TokenNotJson(String),
    /// The token server's answer has no token.
    NoToken(String),
}

impl AuthProblem {
    fn render(&self, registry: &str) -> String {
        match self {
            AuthProblem::NoChallenge => {
                format!("registry {registry} refused the request (401) without saying how to authenticate")
            }
            AuthProblem::NoCredentials(files) => format!(
                "registry {registry} asks for credentials and none were found: add [distribution.credentials.\
                 {registry:?}] to the config, or log in so that one of {:?} has an entry for {registry}",
                files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>()
            ),
            AuthProblem::Scheme(scheme) => {
                format!("registry {registry} asks for {scheme} authentication: accepted are Basic and Bearer")
            }
            AuthProblem::NoRealm => format!("registry {registry}: a Bearer challenge without a realm"),
            AuthProblem::RealmNotAUrl(realm) => format!("registry {registry}: token realm {realm:?} is not a URL"),
            AuthProblem::RealmRefused(realm) => format!(
                "registry {registry}: token realm {realm} refused: it must be https (credentials would travel \
                 unencrypted) and, for a registry that is not on loopback, not on this machine"
            ),
            AuthProblem::TokenRefused { realm, status, message } => format!(
                "registry {registry}: the token server {realm} refused the credentials ({}): {message}",
                status_text(*status)
            ),
            AuthProblem::TokenNotJson(realm) => {
                format!("registry {registry}: the token server {realm} did not answer JSON")
            }
            AuthProblem::NoToken(realm) => format!("registry {registry}: the token server {realm} answered no token"),
        }
    }
}

/// The operator's credentials for a registry cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialError {
    /// `[distribution.credentials."REGISTRY"]` names an unset variable.
    #[error("[distribution.credentials.{registry:?}] names the environment variable {var}, which is not set")]
    EnvUnset {
        /// The registry.
        registry: String,
        /// The variable.
        var: String,
    },
    /// `[distribution.credentials."REGISTRY"] password_file` cannot be
    /// read.
    #[error("[distribution.credentials.{registry:?}] {}", problem.render(path))]
    PasswordFile {
        /// The registry.
        registry: String,
        /// The password file.
        path: PathBuf,
        /// What is wrong with it.
        problem: PasswordFileProblem,
    },
    /// A Docker-style auth file that cannot be used.
    #[error("{}: {problem}", path.display())]
    AuthFile {
        /// The auth file.
        path: PathBuf,
        /// What is wrong with it.
        problem: AuthFileProblem,
    },
}

/// What is wrong with a password file.
#[derive(Debug)]
#[non_exhaustive]
pub enum PasswordFileProblem {
    /// There is no such file.
    Missing,
    /// It cannot be read.
    Read(std::io::Error),
    /// It is not UTF-8 text.
    NotUtf8,
    /// Larger than the fixed cap on a password file.
    TooLarge {
        /// The cap.
        cap: u64,
    },
}

impl PasswordFileProblem {
    fn render(&self, path: &std::path::Path) -> String {
        let path = path.display();
        match self {
            PasswordFileProblem::Missing => format!("password_file {path} does not exist"),
            PasswordFileProblem::Read(err) => format!("{path}: cannot read: {err}"),
            PasswordFileProblem::NotUtf8 => format!("{path}: not UTF-8 text"),
            PasswordFileProblem::TooLarge { cap } => format!(
                "{path}: larger than the {cap}-byte cap (fixed: a password file holds one password or token on its \
                 first line)"
            ),
        }
    }
}

/// What is wrong with a Docker-style auth file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthFileProblem {
    /// It cannot be read.
    #[error("cannot read: {0}")]
    Read(std::io::Error),
    /// It is not UTF-8 text.
    #[error("not UTF-8 text")]
    NotUtf8,
    /// Larger than `[distribution] max_auth_file_bytes`.
    #[error(
        "larger than the {cap}-byte cap ([distribution] max_auth_file_bytes raises it, up to {})",
        settings::MAX_AUTH_FILE_BYTES
    )]
    TooLarge {
        /// The cap.
        cap: u64,
    },
    /// Not JSON (the parser's words).
    #[error("not a Docker auth file (JSON): {0}")]
    NotJson(String),
    /// The registry's `auth` entry is not base64 of `USER:PASSWORD`.
    #[error("auths.{0:?}.auth is not base64 of USER:PASSWORD")]
    BadAuth(String),
}

#[cfg(test)]
mod tests;
