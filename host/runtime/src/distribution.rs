//! Components from OCI registries: `component = "oci://REGISTRY/REPO@sha256:…"`
//! in `airlock.toml`, `airlock pull` and `airlock push`.
//!
//! **What is trusted.** The operator's config, lock file and public keys.
//! Nothing from a registry is trusted until it is verified: a manifest is
//! read under a size cap and used only if its sha256 is the digest the
//! config or the lock file pins; a component layer is used only if its
//! sha256 is the one that manifest names (checked as it is downloaded, and
//! again by the loader on every load, which compiles exactly the bytes it
//! hashed); a signature counts only if one of the operator's keys verifies
//! it and it names that very manifest digest (`signature.rs`). A tag is a
//! name the registry may move: it is resolved once by `airlock pull` and
//! pinned in `airlock.lock` (`lock.rs`), and loads use the pin only.
//!
//! **The store** (`store.rs`) keeps every verified blob under its digest, so
//! a pinned component keeps loading when the registry is down; each read
//! from it is verified again, and a load reaches the network only for what
//! the store lacks.
//!
//! Files: `reference.rs` (the `oci://` grammar), `settings.rs`
//! (`[distribution]` and the OCI keys of `[tools.NAME]`), `client.rs` (the
//! registry API under caps and timeouts), `auth.rs` (credentials),
//! `manifest.rs` (the Wasm artifact layout), `signature.rs` (cosign
//! signatures and keys), `error.rs` ([`DistributionError`], the one error
//! type of this API, and the problems it nests).

mod auth;
mod client;
mod error;
mod lock;
mod manifest;
mod reference;
mod settings;
mod signature;
mod store;

pub use error::{
    Asked, AuthFileProblem, AuthProblem, Blame, Blob, Body, Capped, CredentialError, DistributionError, InvalidDigest,
    InvalidReference, KeyProblem, LockProblem, ManifestProblem, Missing, PasswordFileProblem, RedirectProblem,
    ReferenceProblem, RequestError, UploadProblem,
};
pub use lock::Lock;
pub use reference::{MAX_REFERENCE_LEN, OciRef};
pub use settings::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_AUTH_FILE_BYTES, DEFAULT_MAX_LAYER_BYTES, DEFAULT_MAX_LAYERS,
    DEFAULT_MAX_LOCK_BYTES, DEFAULT_MAX_MANIFEST_BYTES, DEFAULT_MAX_REDIRECTS, DEFAULT_MAX_SIGNATURE_PAYLOAD_BYTES,
    DEFAULT_MAX_SIGNATURES, DEFAULT_MAX_TOKEN_RESPONSE_BYTES, DEFAULT_READ_TIMEOUT, DISTRIBUTION, DistributionSettings,
    MAX_KEYS, MAX_MANIFEST_BYTES, OciSource, RawDistribution, SignaturePolicy,
};
pub use signature::generate as generate_keys;

use bytes::Bytes;
use client::{Cap, Client};
use http::{Method, StatusCode, header};
use manifest::{Descriptor, MANIFEST_MEDIA_TYPE, Manifest};
use serde::Serialize;
use signature::Signed;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use store::{Store, sha256_digest};

/// Where a component pulled from a registry came from, as verified when it
/// was loaded. Host-only: it reaches `airlock tools`, `inspect` and audit
/// records, never a model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Origin {
    /// The reference pinned to its manifest digest:
    /// `oci://REGISTRY/REPOSITORY@sha256:…`.
    pub reference: String,
    /// The tag it was resolved from, if the config names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    /// The manifest digest.
    pub manifest_digest: String,
    /// The key that verified its signature (`FILE sha256:FINGERPRINT`), if
    /// any did.
    pub signer: Option<String>,
}

/// A component in the store, verified.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// Where it came from.
    pub origin: Origin,
    /// `sha256:HEX` of the component bytes (the layer).
    pub layer_digest: String,
    /// Its size in bytes.
    pub size: u64,
    /// The component file in the store.
    pub path: PathBuf,
}

/// Whether `text` is an `oci://` reference rather than a file.
pub fn is_reference(text: &Path) -> bool {
    text.to_str().is_some_and(|s| s.starts_with(reference::SCHEME))
}

fn store_of(settings: &DistributionSettings) -> Result<Store, DistributionError> {
    let root = settings.store.as_deref().ok_or(DistributionError::NoStore)?;
    Ok(Store::new(root))
}

fn manifest_cap(settings: &DistributionSettings) -> Cap {
    Cap::of(Body::Manifest, settings.max_manifest_bytes)
}

/// The component `source` names, for the loader: the digest from the
/// reference or the lock file, the blobs from the store, or from the
/// registry if the store lacks them.
///
/// # Errors
///
/// An unpinned tag ([`DistributionError::Unpinned`], with the command that
/// pins it), a digest mismatch, a missing or wrong signature (naming the
/// keys and the digest), an unreachable registry for something the store
/// lacks; [`DistributionError::blame`] says who has to act.
pub async fn materialize(
    settings: &Arc<DistributionSettings>,
    source: &OciSource,
) -> Result<Pulled, DistributionError> {
    let digest = match &source.reference.digest {
        Some(digest) => digest.clone(),
        None => {
            let key = source.reference.tag_key().unwrap_or_default();
            let lock = Lock::read(&settings.lock_file, settings.max_lock_bytes)?;
            match lock.pins.get(&key) {
                Some(digest) => digest.clone(),
                None => return Err(DistributionError::Unpinned { tag: key, lock_file: settings.lock_file.clone() }),
            }
        }
    };
    obtain(settings, source, &digest, false).await
}

/// What `airlock pull` did.
#[derive(Debug, Clone)]
pub struct PullReport {
    /// The verified component.
    pub pulled: Pulled,
    /// The digest the lock file pinned before, when a tag moved and
    /// `--update` accepted it.
    pub replaced: Option<String>,
}

/// `airlock pull`: resolve a tag (checking it against the lock file), fetch
/// the manifest, component and signatures afresh, verify them, and pin a
/// tag's digest in the lock file.
///
/// # Errors
///
/// As [`materialize`], and a tag that now names another digest than its pin
/// unless `update` ([`DistributionError::TagMoved`]).
pub async fn pull(
    settings: &Arc<DistributionSettings>,
    source: &OciSource,
    update: bool,
) -> Result<PullReport, DistributionError> {
    let client = Client::new(settings.clone());
    let store = store_of(settings)?;
    let reference = &source.reference;
    let (digest, key) = match (&reference.digest, reference.tag_key()) {
        (Some(digest), _) => (digest.clone(), None),
        (None, Some(key)) => {
            let tag = reference.tag.clone().unwrap_or_default();
            let (bytes, digest) = fetch_manifest(&client, reference, &tag)
                .await?
                .ok_or_else(|| DistributionError::NotFound { reference: reference.to_string(), what: Missing::Tag })?;
            store.put(&bytes)?;
            (digest, Some(key))
        }
        (None, None) => {
            // `OciRef::parse` refuses such a reference; one built by hand
            // is refused the same way.
            let text = reference.to_string().chars().take(80).collect();
            return Err(InvalidReference { text, problem: ReferenceProblem::Unnamed }.into());
        }
    };
    let mut lock = Lock::read(&settings.lock_file, settings.max_lock_bytes)?;
    let mut replaced = None;
    if let Some(key) = &key
        && let Some(pinned) = lock.pins.get(key)
        && *pinned != digest
    {
        if !update {
            return Err(DistributionError::TagMoved {
                tag: key.clone(),
                now: digest,
                pinned: pinned.clone(),
                lock_file: settings.lock_file.clone(),
            });
        }
        replaced = Some(pinned.clone());
    }
    let pulled = obtain(settings, source, &digest, true).await?;
    if let Some(key) = key
        && lock.pins.get(&key) != Some(&digest)
    {
        lock.pins.insert(key, digest);
        lock.write(&settings.lock_file, settings.max_lock_bytes)?;
    }
    Ok(PullReport { pulled, replaced })
}

/// The manifest `digest` of `source`, its component and its signature
/// check, from the store or the registry; `fresh` fetches the signatures
/// from the registry even when the store has some.
async fn obtain(
    settings: &Arc<DistributionSettings>,
    source: &OciSource,
    digest: &str,
    fresh: bool,
) -> Result<Pulled, DistributionError> {
    let client = Client::new(settings.clone());
    let store = store_of(settings)?;
    let reference = &source.reference;
    let pinned = reference.pinned(digest);
    let bytes = match store.read(digest, settings.max_manifest_bytes, Body::Manifest)? {
        Some(bytes) => bytes,
        None => {
            let (bytes, actual) = fetch_manifest(&client, reference, digest)
                .await?
                .ok_or_else(|| DistributionError::NotFound { reference: pinned.clone(), what: Missing::Manifest })?;
            if actual != digest {
                return Err(digest_mismatch(&pinned, Blob::Manifest, digest, actual));
            }
            store.put(&bytes)?;
            bytes
        }
    };
    let manifest = Manifest::parse(&bytes, &pinned, settings.max_layers)?;
    let layer = manifest.component_layer(&pinned)?.clone();
    if layer.size > settings.max_component_bytes {
        return Err(DistributionError::OverCap {
            subject: pinned,
            what: Capped::ComponentLayer,
            size: layer.size,
            cap: settings.max_component_bytes,
        });
    }
    let path = store.blob_path(&layer.digest)?;
    if !path.is_file() {
        let cap = Cap::of(Body::Component, layer.size.min(settings.max_component_bytes));
        let bytes = fetch_blob(&client, reference, &layer.digest, cap).await?;
        let actual = sha256_digest(&bytes);
        if actual != layer.digest {
            return Err(digest_mismatch(&pinned, Blob::ComponentLayer, &layer.digest, actual));
        }
        store.put(&bytes)?;
    }
    let policy = settings.policy_for(source);
    let signer = check_signatures(&client, &store, source, &policy, digest, fresh).await?;
    let origin = Origin { reference: pinned, tag: reference.tag.clone(), manifest_digest: digest.to_owned(), signer };
    Ok(Pulled { origin, layer_digest: layer.digest, size: layer.size, path })
}

fn digest_mismatch(pinned: &str, what: Blob, expected: &str, actual: String) -> DistributionError {
    DistributionError::DigestMismatch { subject: pinned.to_owned(), what, expected: expected.to_owned(), actual }
}

/// The signer of `digest` under `policy`, or the refusal.
async fn check_signatures(
    client: &Client,
    store: &Store,
    source: &OciSource,
    policy: &SignaturePolicy,
    digest: &str,
    fresh: bool,
) -> Result<Option<String>, DistributionError> {
    let pinned = source.reference.pinned(digest);
    if policy.keys.is_empty() {
        if policy.required {
            return Err(DistributionError::NoKeys { reference: pinned });
        }
        return Ok(None);
    }
    let keys = signature::load_keys(&policy.keys)?;
    let stored = if fresh { None } else { stored_signatures(store, digest, client.settings())? };
    let mut fetched = false;
    let mut found = match stored {
        Some(found) => found,
        None if fresh || policy.required => {
            fetched = true;
            fetch_signatures(client, store, &source.reference, digest).await?
        }
        None => Found::default(),
    };
    let mut signer = signature::verify(&found.checked, digest, &keys).map(signature::PublicKey::signer);
    // A stored signature that no longer verifies (keys rotated, a new
    // signature pushed) is looked up afresh once before refusing.
    if signer.is_none() && policy.required && !fetched {
        found = fetch_signatures(client, store, &source.reference, digest).await?;
        signer = signature::verify(&found.checked, digest, &keys).map(signature::PublicKey::signer);
    }
    if signer.is_some() {
        return Ok(signer);
    }
    let accepted: Vec<String> = keys.iter().map(signature::PublicKey::signer).collect();
    if !policy.required {
        if found.total > 0 {
            let unchecked = error::unchecked(found.total, found.checked.len());
            tracing::warn!("{pinned}: signed, but by none of the keys {accepted:?}; loaded as unsigned{unchecked}");
        }
        return Ok(None);
    }
    Err(if found.total == 0 {
        DistributionError::NotSigned {
            reference: pinned,
            signature_tag: signature::signature_tag(digest),
            repository: source.reference.docker_reference(),
            accepted,
        }
    } else {
        DistributionError::NoAcceptedSignature {
            reference: pinned,
            signatures: found.total,
            checked: found.checked.len(),
            accepted,
        }
    })
}

/// The signatures of a component: the first `[distribution]
/// max_signatures` of its signature manifest, and how many it has.
#[derive(Debug, Default)]
struct Found {
    /// The signatures read, to be checked.
    checked: Vec<Signed>,
    /// How many the signature manifest carries.
    total: usize,
}

/// The signatures of `digest` kept in the store, if a fetch stored some.
fn stored_signatures(
    store: &Store,
    digest: &str,
    settings: &DistributionSettings,
) -> Result<Option<Found>, DistributionError> {
    let Some(signature_digest) = store.signature_of(digest)? else { return Ok(None) };
    let Some(bytes) = store.read(&signature_digest, settings.max_manifest_bytes, Body::Manifest)? else {
        return Ok(None);
    };
    let what = format!("the stored signature manifest {signature_digest}");
    let manifest = Manifest::parse(&bytes, &what, settings.max_layers)?;
    let (layers, total) = signature_layers(&manifest, settings.max_signatures);
    let mut checked = Vec::new();
    for (layer, signature_b64) in layers {
        let Some(payload) = store.read(&layer.digest, settings.max_signature_payload_bytes, Body::SignaturePayload)?
        else {
            return Ok(None);
        };
        checked.push(Signed { payload, signature_b64 });
    }
    Ok(Some(Found { checked, total }))
}

/// The payload layers of a signature manifest with their signatures: the
/// first `max`, and how many there are.
fn signature_layers(manifest: &Manifest, max: usize) -> (Vec<(&Descriptor, String)>, usize) {
    let signed =
        manifest.layers.iter().filter(|layer| layer.media_type == signature::PAYLOAD_MEDIA_TYPE).filter_map(|layer| {
            let signature = layer.annotations.as_ref()?.get(signature::SIGNATURE_ANNOTATION)?;
            Some((layer, signature))
        });
    let total = signed.clone().count();
    (signed.take(max).map(|(layer, signature)| (layer, signature.clone())).collect(), total)
}

/// Fetch the signature image of `digest` and store it; no image is no
/// signatures.
async fn fetch_signatures(
    client: &Client,
    store: &Store,
    reference: &OciRef,
    digest: &str,
) -> Result<Found, DistributionError> {
    let settings = client.settings();
    let tag = signature::signature_tag(digest);
    let Some((bytes, signature_digest)) = fetch_manifest(client, reference, &tag).await? else {
        return Ok(Found::default());
    };
    let what = format!("the signature manifest {}:{tag}", reference.docker_reference());
    let manifest = Manifest::parse(&bytes, &what, settings.max_layers)?;
    store.put(&bytes)?;
    let (layers, total) = signature_layers(&manifest, settings.max_signatures);
    let mut checked = Vec::new();
    for (layer, signature_b64) in layers {
        let max = settings.max_signature_payload_bytes;
        if layer.size > max {
            return Err(DistributionError::OverCap {
                subject: what,
                what: Capped::SignaturePayload,
                size: layer.size,
                cap: max,
            });
        }
        let payload = fetch_blob(client, reference, &layer.digest, Cap::of(Body::SignaturePayload, max)).await?;
        let actual = sha256_digest(&payload);
        if actual != layer.digest {
            return Err(digest_mismatch(&what, Blob::SignaturePayload, &layer.digest, actual));
        }
        store.put(&payload)?;
        checked.push(Signed { payload, signature_b64 });
    }
    store.set_signature_of(digest, &signature_digest)?;
    Ok(Found { checked, total })
}

/// The manifest `tag_or_digest` of `reference`'s repository and its digest
/// (computed here); `None` if the registry has none.
async fn fetch_manifest(
    client: &Client,
    reference: &OciRef,
    tag_or_digest: &str,
) -> Result<Option<(Vec<u8>, String)>, DistributionError> {
    let path = format!("/v2/{}/manifests/{tag_or_digest}", reference.repository);
    let accept = format!("{MANIFEST_MEDIA_TYPE}, application/vnd.docker.distribution.manifest.v2+json");
    let answer = client
        .send(
            &reference.registry,
            Method::GET,
            &path,
            &[(header::ACCEPT, accept)],
            Bytes::new(),
            manifest_cap(client.settings()),
        )
        .await
        .map_err(|problem| at(reference, problem))?;
    if answer.status == StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !answer.status.is_success() {
        return Err(answered(reference, &answer, Asked::Manifest(tag_or_digest.to_owned())));
    }
    let digest = sha256_digest(&answer.body);
    Ok(Some((answer.body.to_vec(), digest)))
}

async fn fetch_blob(client: &Client, reference: &OciRef, digest: &str, cap: Cap) -> Result<Vec<u8>, DistributionError> {
    let path = format!("/v2/{}/blobs/{digest}", reference.repository);
    let answer = client
        .send(&reference.registry, Method::GET, &path, &[], Bytes::new(), cap)
        .await
        .map_err(|problem| at(reference, problem))?;
    if !answer.status.is_success() {
        return Err(answered(reference, &answer, Asked::Blob(digest.to_owned())));
    }
    Ok(answer.body.to_vec())
}

/// A request for `reference` that failed before it had an answer.
fn at(reference: &OciRef, problem: RequestError) -> DistributionError {
    DistributionError::Request { reference: reference.to_string(), problem }
}

/// The registry answered `asked` for `reference` with an error status.
fn answered(reference: &OciRef, answer: &client::Answer, asked: Asked) -> DistributionError {
    DistributionError::Answered {
        reference: reference.to_string(),
        status: answer.status.as_u16(),
        request: asked,
        message: answer.quoted(),
    }
}

/// Largest body read from an answer that should carry none (an upload's).
const SMALL_ANSWER_BYTES: u64 = 4 << 10;

/// What `airlock push` did.
#[derive(Debug, Clone)]
pub struct PushReport {
    /// The pushed reference pinned to its manifest digest.
    pub pinned: String,
    /// The manifest digest.
    pub digest: String,
    /// The key that signed it, if asked to.
    pub signed_by: Option<String>,
}

/// `airlock push FILE REF [--sign KEY]`: upload the component as a Wasm OCI
/// artifact under REF's tag and, with a key, a cosign signature of it.
///
/// # Errors
///
/// The file is not a component, the reference has no tag
/// ([`DistributionError::PushNeedsTag`]), the key cannot be read, or the
/// registry refuses an upload.
pub async fn push(
    settings: &Arc<DistributionSettings>,
    file: &Path,
    reference: &OciRef,
    sign: Option<&Path>,
) -> Result<PushReport, DistributionError> {
    let Some(tag) = &reference.tag else {
        return Err(DistributionError::PushNeedsTag { reference: reference.to_string() });
    };
    let key = sign.map(signature::SigningKey::load).transpose()?;
    let component = read_component(file)?;
    let client = Client::new(settings.clone());
    let artifact = Artifact {
        config_media_type: manifest::WASM_CONFIG_MEDIA_TYPE,
        config: manifest::wasm_config,
        layer_media_type: manifest::WASM_LAYER_MEDIA_TYPE,
        layer: component,
        annotations: None,
    };
    let digest = push_artifact(&client, reference, tag, artifact).await?;
    let signed_by = match key {
        None => None,
        Some(key) => {
            let payload = signature::payload(&reference.docker_reference(), &digest);
            let signature_b64 = key.sign(&payload)?;
            let annotations = [(signature::SIGNATURE_ANNOTATION.to_owned(), signature_b64)].into_iter().collect();
            let artifact = Artifact {
                config_media_type: signature::SIGNATURE_CONFIG_MEDIA_TYPE,
                config: signature::config,
                layer_media_type: signature::PAYLOAD_MEDIA_TYPE,
                layer: payload,
                annotations: Some(annotations),
            };
            push_artifact(&client, reference, &signature::signature_tag(&digest), artifact).await?;
            sign.map(|p| p.display().to_string())
        }
    };
    Ok(PushReport { pinned: reference.pinned(&digest), digest, signed_by })
}

fn read_component(file: &Path) -> Result<Vec<u8>, DistributionError> {
    let max = crate::compiler::MAX_COMPONENT_BYTES;
    let too_large = |path: PathBuf, size| DistributionError::OverCap {
        subject: path.display().to_string(),
        what: Capped::ComponentFile,
        size,
        cap: max,
    };
    let bytes = store::read_capped(file, max)
        .map_err(|failure| failure.into_error(file.to_owned(), too_large))?
        .ok_or_else(|| DistributionError::NoSuchFile { path: file.to_owned() })?;
    crate::compiler::check_header(&bytes)
        .map_err(|why| DistributionError::NotAComponent { path: file.to_owned(), why })?;
    Ok(bytes)
}

/// An OCI artifact of one layer: a component, or a signature image.
struct Artifact {
    /// The media type of its config blob.
    config_media_type: &'static str,
    /// Its config blob, made from the layer's digest.
    config: fn(&str) -> Vec<u8>,
    /// The media type of its layer.
    layer_media_type: &'static str,
    /// The layer's bytes.
    layer: Vec<u8>,
    /// The layer's annotations.
    annotations: Option<std::collections::BTreeMap<String, String>>,
}

/// Upload `artifact`'s layer and config blobs and put its manifest under
/// `tag`; the manifest digest.
async fn push_artifact(
    client: &Client,
    reference: &OciRef,
    tag: &str,
    artifact: Artifact,
) -> Result<String, DistributionError> {
    let layer_size = artifact.layer.len() as u64;
    let layer_digest = upload_blob(client, reference, Bytes::from(artifact.layer)).await?;
    let config = (artifact.config)(&layer_digest);
    let config_size = config.len() as u64;
    let config_digest = upload_blob(client, reference, Bytes::from(config)).await?;
    let manifest = manifest::build(
        Descriptor {
            media_type: artifact.config_media_type.into(),
            digest: config_digest,
            size: config_size,
            annotations: None,
        },
        vec![Descriptor {
            media_type: artifact.layer_media_type.into(),
            digest: layer_digest,
            size: layer_size,
            annotations: artifact.annotations,
        }],
    );
    let digest = sha256_digest(&manifest);
    put_manifest(client, reference, tag, manifest).await?;
    Ok(digest)
}

/// Upload `bytes` as a blob unless the registry has it; its digest.
async fn upload_blob(client: &Client, reference: &OciRef, bytes: Bytes) -> Result<String, DistributionError> {
    let digest = sha256_digest(&bytes);
    let repo = &reference.repository;
    let registry = &reference.registry;
    let small = Cap::fixed(SMALL_ANSWER_BYTES);
    let upload = |problem| DistributionError::Upload { reference: reference.to_string(), problem };
    let head = client
        .send(registry, Method::HEAD, &format!("/v2/{repo}/blobs/{digest}"), &[], Bytes::new(), small)
        .await
        .map_err(|problem| at(reference, problem))?;
    if head.status.is_success() {
        return Ok(digest);
    }
    let start = client
        .send(registry, Method::POST, &format!("/v2/{repo}/blobs/uploads/"), &[], Bytes::new(), small)
        .await
        .map_err(|problem| at(reference, problem))?;
    if start.status != StatusCode::ACCEPTED {
        return Err(answered(reference, &start, Asked::StartUpload));
    }
    let location = start
        .headers
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| upload(UploadProblem::NoLocation))?;
    let uri: http::Uri = location.parse().map_err(|_| upload(UploadProblem::NotAUrl(location.to_owned())))?;
    if let Some(authority) = uri.authority()
        && authority.as_str() != registry.as_str()
    {
        return Err(upload(UploadProblem::OtherHost(authority.to_string())));
    }
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let separator = if path.contains('?') { '&' } else { '?' };
    let put = client
        .send(
            registry,
            Method::PUT,
            &format!("{path}{separator}digest={digest}"),
            &[(header::CONTENT_TYPE, "application/octet-stream".to_owned())],
            bytes,
            small,
        )
        .await
        .map_err(|problem| at(reference, problem))?;
    if put.status != StatusCode::CREATED {
        return Err(answered(reference, &put, Asked::BlobUpload));
    }
    Ok(digest)
}

async fn put_manifest(
    client: &Client,
    reference: &OciRef,
    tag: &str,
    manifest: Vec<u8>,
) -> Result<(), DistributionError> {
    let path = format!("/v2/{}/manifests/{tag}", reference.repository);
    let answer = client
        .send(
            &reference.registry,
            Method::PUT,
            &path,
            &[(header::CONTENT_TYPE, MANIFEST_MEDIA_TYPE.to_owned())],
            Bytes::from(manifest),
            Cap::fixed(SMALL_ANSWER_BYTES),
        )
        .await
        .map_err(|problem| at(reference, problem))?;
    if answer.status != StatusCode::CREATED {
        return Err(answered(reference, &answer, Asked::PutManifest));
    }
    Ok(())
}
