//! What went wrong moving bytes to or from a registry: a blob or manifest
//! missing, a body over its cap or not as it said, a request that failed or
//! was redirected where it may not go.

use super::auth::{AuthProblem, CredentialError};
use crate::distribution::settings;
use std::fmt;

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

/// Which cap a [`DistributionError::OverCap`](super::DistributionError::OverCap) is over.
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

    pub(super) fn render(&self, subject: &str, size: u64, cap: u64) -> String {
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

/// Which blob a [`DistributionError::DigestMismatch`](super::DistributionError::DigestMismatch) is about.
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
    pub(super) fn render(self, subject: &str, expected: &str, actual: &str) -> String {
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
