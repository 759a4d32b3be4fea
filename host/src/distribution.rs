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
//! `manifest.rs` (the Wasm artifact layout), `cli.rs` (the subcommands).

mod auth;
pub mod cli;
mod client;
mod lock;
mod manifest;
mod reference;
mod settings;
mod signature;
mod store;

pub use lock::{Lock, MAX_LOCK_BYTES};
pub use reference::{MAX_REFERENCE_LEN, OciRef};
pub use settings::{
    DEFAULT_CONNECT_TIMEOUT, DEFAULT_MAX_LAYER_BYTES, DEFAULT_MAX_MANIFEST_BYTES, DEFAULT_READ_TIMEOUT,
    DistributionSettings, MAX_KEYS, MAX_MANIFEST_BYTES, OciSource, RawDistribution, SignaturePolicy,
};
pub use signature::{MAX_PAYLOAD_BYTES, MAX_SIGNATURES};

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

fn store_of(settings: &DistributionSettings) -> Result<Store, String> {
    let root = settings.store.as_deref().ok_or_else(|| {
        "no store for pulled components: set [distribution] store = \"DIR\" (or HOME or XDG_CACHE_HOME)".to_owned()
    })?;
    Ok(Store::new(root))
}

fn manifest_cap(settings: &DistributionSettings) -> Cap {
    Cap { bytes: settings.max_manifest_bytes, key: "[distribution] max_manifest_bytes" }
}

/// The component `source` names, for the loader: the digest from the
/// reference or the lock file, the blobs from the store, or from the
/// registry if the store lacks them.
///
/// # Errors
///
/// An unpinned tag (with the command that pins it), a digest mismatch, a
/// missing or wrong signature (naming the keys and the digest), an
/// unreachable registry for something the store lacks.
pub async fn materialize(settings: &Arc<DistributionSettings>, source: &OciSource) -> Result<Pulled, String> {
    let digest = match &source.reference.digest {
        Some(digest) => digest.clone(),
        None => {
            let key = source.reference.tag_key().unwrap_or_default();
            let lock = Lock::read(&settings.lock_file)?;
            lock.pins.get(&key).cloned().ok_or_else(|| {
                format!(
                    "{key} is a tag that {} does not pin yet: run `airlock pull` to resolve it and pin its digest",
                    settings.lock_file.display()
                )
            })?
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
/// unless `update`.
pub async fn pull(
    settings: &Arc<DistributionSettings>,
    source: &OciSource,
    update: bool,
) -> Result<PullReport, String> {
    let client = Client::new(settings.clone());
    let store = store_of(settings)?;
    let reference = &source.reference;
    let (digest, key) = match (&reference.digest, reference.tag_key()) {
        (Some(digest), _) => (digest.clone(), None),
        (None, Some(key)) => {
            let tag = reference.tag.clone().unwrap_or_default();
            let (bytes, digest) = fetch_manifest(&client, reference, &tag)
                .await?
                .ok_or_else(|| format!("{reference}: the registry has no such tag"))?;
            store.put(&bytes)?;
            (digest, Some(key))
        }
        (None, None) => return Err(format!("{reference} names neither a tag nor a digest")),
    };
    let mut lock = Lock::read(&settings.lock_file)?;
    let mut replaced = None;
    if let Some(key) = &key
        && let Some(pinned) = lock.pins.get(key)
        && *pinned != digest
    {
        if !update {
            return Err(format!(
                "{key} now names {digest}, but {} pins {pinned}: refusing the changed tag (the pinned component \
                 stays in use); to accept the new one run `airlock pull --update {key}`",
                settings.lock_file.display()
            ));
        }
        replaced = Some(pinned.clone());
    }
    let pulled = obtain(settings, source, &digest, true).await?;
    if let Some(key) = key
        && lock.pins.get(&key) != Some(&digest)
    {
        lock.pins.insert(key, digest);
        lock.write(&settings.lock_file)?;
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
) -> Result<Pulled, String> {
    let client = Client::new(settings.clone());
    let store = store_of(settings)?;
    let reference = &source.reference;
    let pinned = reference.pinned(digest);
    let bytes = match store.read(digest, settings.max_manifest_bytes)? {
        Some(bytes) => bytes,
        None => {
            let (bytes, actual) = fetch_manifest(&client, reference, digest)
                .await?
                .ok_or_else(|| format!("{pinned}: the registry has no such manifest"))?;
            if actual != digest {
                return Err(digest_mismatch(&pinned, "manifest", digest, &actual));
            }
            store.put(&bytes)?;
            bytes
        }
    };
    let manifest = Manifest::parse(&bytes, &pinned)?;
    let layer = manifest.component_layer(&pinned)?.clone();
    if layer.size > settings.max_component_bytes {
        return Err(format!(
            "{pinned}: the component layer is {} bytes, over the {}-byte cap ([distribution] max_component_bytes \
             raises it up to {})",
            layer.size,
            settings.max_component_bytes,
            crate::loader::MAX_COMPONENT_BYTES
        ));
    }
    let path = store.blob_path(&layer.digest)?;
    if !path.is_file() {
        let cap =
            Cap { bytes: layer.size.min(settings.max_component_bytes), key: "[distribution] max_component_bytes" };
        let bytes = fetch_blob(&client, reference, &layer.digest, cap).await?;
        let actual = sha256_digest(&bytes);
        if actual != layer.digest {
            return Err(digest_mismatch(&pinned, "component layer", &layer.digest, &actual));
        }
        store.put(&bytes)?;
    }
    let policy = settings.policy_for(source);
    let signer = check_signatures(&client, &store, source, &policy, digest, fresh).await?;
    let origin = Origin { reference: pinned, tag: reference.tag.clone(), manifest_digest: digest.to_owned(), signer };
    Ok(Pulled { origin, layer_digest: layer.digest, size: layer.size, path })
}

fn digest_mismatch(pinned: &str, what: &str, expected: &str, actual: &str) -> String {
    format!(
        "{pinned}: the registry sent a {what} whose sha256 is {actual}, not the {expected} asked for: refusing it \
         (the registry or something between is serving other content)"
    )
}

/// The signer of `digest` under `policy`, or the refusal.
async fn check_signatures(
    client: &Client,
    store: &Store,
    source: &OciSource,
    policy: &SignaturePolicy,
    digest: &str,
    fresh: bool,
) -> Result<Option<String>, String> {
    let pinned = source.reference.pinned(digest);
    if policy.keys.is_empty() {
        if policy.required {
            return Err(format!(
                "{pinned}: require_signature is set but no public keys are configured: add keys = [\"cosign.pub\"] \
                 to [distribution] or to the tool"
            ));
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
        None => Vec::new(),
    };
    let mut signer = signature::verify(&found, digest, &keys).map(signature::PublicKey::signer);
    // A stored signature that no longer verifies (keys rotated, a new
    // signature pushed) is looked up afresh once before refusing.
    if signer.is_none() && policy.required && !fetched {
        found = fetch_signatures(client, store, &source.reference, digest).await?;
        signer = signature::verify(&found, digest, &keys).map(signature::PublicKey::signer);
    }
    if signer.is_some() {
        return Ok(signer);
    }
    let accepted: Vec<String> = keys.iter().map(signature::PublicKey::signer).collect();
    if !policy.required {
        if !found.is_empty() {
            tracing::warn!("{pinned}: signed, but by none of the keys {accepted:?}; loaded as unsigned");
        }
        return Ok(None);
    }
    Err(if found.is_empty() {
        format!(
            "{pinned} is not signed (no cosign signature {} in {}), and require_signature is set: accepted are \
             signatures by {accepted:?}; sign it with `airlock push --sign KEY` or `cosign sign --key KEY`",
            signature::signature_tag(digest),
            source.reference.docker_reference()
        )
    } else {
        format!(
            "{pinned} has {} signature(s), but none verifies with the accepted key(s) {accepted:?}: refusing it",
            found.len()
        )
    })
}

/// The signatures of `digest` kept in the store, if a fetch stored some.
fn stored_signatures(
    store: &Store,
    digest: &str,
    settings: &DistributionSettings,
) -> Result<Option<Vec<Signed>>, String> {
    let Some(signature_digest) = store.signature_of(digest)? else { return Ok(None) };
    let Some(bytes) = store.read(&signature_digest, settings.max_manifest_bytes)? else { return Ok(None) };
    let manifest = Manifest::parse(&bytes, &format!("the stored signature manifest {signature_digest}"))?;
    let mut signed = Vec::new();
    for (layer, signature_b64) in signature_layers(&manifest) {
        let Some(payload) = store.read(&layer.digest, signature::MAX_PAYLOAD_BYTES)? else { return Ok(None) };
        signed.push(Signed { payload, signature_b64 });
    }
    Ok(Some(signed))
}

/// The payload layers of a signature manifest with their signatures.
fn signature_layers(manifest: &Manifest) -> Vec<(&Descriptor, String)> {
    manifest
        .layers
        .iter()
        .filter(|layer| layer.media_type == signature::PAYLOAD_MEDIA_TYPE)
        .filter_map(|layer| {
            let signature = layer.annotations.as_ref()?.get(signature::SIGNATURE_ANNOTATION)?;
            Some((layer, signature.clone()))
        })
        .take(MAX_SIGNATURES)
        .collect()
}

/// Fetch the signature image of `digest` and store it; no image is no
/// signatures.
async fn fetch_signatures(
    client: &Client,
    store: &Store,
    reference: &OciRef,
    digest: &str,
) -> Result<Vec<Signed>, String> {
    let tag = signature::signature_tag(digest);
    let Some((bytes, signature_digest)) = fetch_manifest(client, reference, &tag).await? else { return Ok(Vec::new()) };
    let what = format!("the signature manifest {}:{tag}", reference.docker_reference());
    let manifest = Manifest::parse(&bytes, &what)?;
    store.put(&bytes)?;
    let mut signed = Vec::new();
    for (layer, signature_b64) in signature_layers(&manifest) {
        if layer.size > signature::MAX_PAYLOAD_BYTES {
            return Err(format!(
                "{what}: a payload of {} bytes is over the {}-byte cap for a signature payload",
                layer.size,
                signature::MAX_PAYLOAD_BYTES
            ));
        }
        let cap = Cap { bytes: signature::MAX_PAYLOAD_BYTES, key: "(fixed)" };
        let payload = fetch_blob(client, reference, &layer.digest, cap).await?;
        if sha256_digest(&payload) != layer.digest {
            return Err(format!("{what}: a payload does not match its digest {}", layer.digest));
        }
        store.put(&payload)?;
        signed.push(Signed { payload, signature_b64 });
    }
    store.set_signature_of(digest, &signature_digest)?;
    Ok(signed)
}

/// The manifest `tag_or_digest` of `reference`'s repository and its digest
/// (computed here); `None` if the registry has none.
async fn fetch_manifest(
    client: &Client,
    reference: &OciRef,
    tag_or_digest: &str,
) -> Result<Option<(Vec<u8>, String)>, String> {
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
        .map_err(|m| format!("{reference}: {m}"))?;
    if answer.status == StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !answer.status.is_success() {
        return Err(format!(
            "{reference}: the registry answered {} for the manifest {tag_or_digest}: {}",
            answer.status,
            answer.quoted()
        ));
    }
    let digest = sha256_digest(&answer.body);
    Ok(Some((answer.body.to_vec(), digest)))
}

async fn fetch_blob(client: &Client, reference: &OciRef, digest: &str, cap: Cap) -> Result<Vec<u8>, String> {
    let path = format!("/v2/{}/blobs/{digest}", reference.repository);
    let answer = client
        .send(&reference.registry, Method::GET, &path, &[], Bytes::new(), cap)
        .await
        .map_err(|m| format!("{reference}: {m}"))?;
    if !answer.status.is_success() {
        return Err(format!(
            "{reference}: the registry answered {} for the blob {digest}: {}",
            answer.status,
            answer.quoted()
        ));
    }
    Ok(answer.body.to_vec())
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
/// The file is not a component, the reference has no tag, the key cannot
/// be read, or the registry refuses an upload.
pub async fn push(
    settings: &Arc<DistributionSettings>,
    file: &Path,
    reference: &OciRef,
    sign: Option<&Path>,
) -> Result<PushReport, String> {
    let Some(tag) = &reference.tag else {
        return Err(format!(
            "{reference}: a push needs a tag, oci://REGISTRY/REPOSITORY:TAG (the digest it gets is printed)"
        ));
    };
    let key = sign.map(signature::SigningKey::load).transpose()?;
    let component = read_component(file)?;
    let client = Client::new(settings.clone());
    let layer_digest = upload_blob(&client, reference, Bytes::from(component.clone())).await?;
    let config = manifest::wasm_config(&layer_digest);
    let config_digest = upload_blob(&client, reference, Bytes::from(config.clone())).await?;
    let manifest = manifest::build(
        Descriptor {
            media_type: manifest::WASM_CONFIG_MEDIA_TYPE.into(),
            digest: config_digest,
            size: config.len() as u64,
            annotations: None,
        },
        vec![Descriptor {
            media_type: manifest::WASM_LAYER_MEDIA_TYPE.into(),
            digest: layer_digest,
            size: component.len() as u64,
            annotations: None,
        }],
    );
    let digest = sha256_digest(&manifest);
    put_manifest(&client, reference, tag, manifest).await?;
    let signed_by = match key {
        None => None,
        Some(key) => {
            let payload = signature::payload(&reference.docker_reference(), &digest);
            let signature_b64 = key.sign(&payload)?;
            let payload_digest = upload_blob(&client, reference, Bytes::from(payload.clone())).await?;
            let config = serde_json::to_vec(&serde_json::json!({
                "architecture": "", "os": "", "config": {},
                "rootfs": { "type": "layers", "diff_ids": [payload_digest] },
            }))
            .unwrap_or_default();
            let config_digest = upload_blob(&client, reference, Bytes::from(config.clone())).await?;
            let annotations = [(signature::SIGNATURE_ANNOTATION.to_owned(), signature_b64)].into_iter().collect();
            let manifest = manifest::build(
                Descriptor {
                    media_type: signature::SIGNATURE_CONFIG_MEDIA_TYPE.into(),
                    digest: config_digest,
                    size: config.len() as u64,
                    annotations: None,
                },
                vec![Descriptor {
                    media_type: signature::PAYLOAD_MEDIA_TYPE.into(),
                    digest: payload_digest,
                    size: payload.len() as u64,
                    annotations: Some(annotations),
                }],
            );
            put_manifest(&client, reference, &signature::signature_tag(&digest), manifest).await?;
            sign.map(|p| p.display().to_string())
        }
    };
    Ok(PushReport { pinned: reference.pinned(&digest), digest, signed_by })
}

fn read_component(file: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    let max = crate::loader::MAX_COMPONENT_BYTES;
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(max + 1).read_to_end(&mut bytes))
        .map_err(|err| format!("{}: cannot read: {err}", file.display()))?;
    if bytes.len() as u64 > max {
        return Err(format!("{}: larger than the {max}-byte limit for a component", file.display()));
    }
    crate::loader::check_header(&bytes).map_err(|m| format!("{}: {m}", file.display()))?;
    Ok(bytes)
}

/// Upload `bytes` as a blob unless the registry has it; its digest.
async fn upload_blob(client: &Client, reference: &OciRef, bytes: Bytes) -> Result<String, String> {
    let digest = sha256_digest(&bytes);
    let repo = &reference.repository;
    let registry = &reference.registry;
    let small = Cap { bytes: SMALL_ANSWER_BYTES, key: "(fixed)" };
    let fail = |what: &str, answer: &client::Answer| {
        format!("{reference}: the registry answered {} to {what}: {}", answer.status, answer.quoted())
    };
    let head = client
        .send(registry, Method::HEAD, &format!("/v2/{repo}/blobs/{digest}"), &[], Bytes::new(), small)
        .await
        .map_err(|m| format!("{reference}: {m}"))?;
    if head.status.is_success() {
        return Ok(digest);
    }
    let start = client
        .send(registry, Method::POST, &format!("/v2/{repo}/blobs/uploads/"), &[], Bytes::new(), small)
        .await
        .map_err(|m| format!("{reference}: {m}"))?;
    if start.status != StatusCode::ACCEPTED {
        return Err(fail("starting an upload", &start));
    }
    let location = start
        .headers
        .get(header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| format!("{reference}: the registry started an upload without a Location"))?;
    let uri: http::Uri =
        location.parse().map_err(|_| format!("{reference}: upload Location {location:?} is not a URL"))?;
    if let Some(authority) = uri.authority()
        && authority.as_str() != registry.as_str()
    {
        return Err(format!("{reference}: the registry sends uploads to another host ({authority}); not supported"));
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
        .map_err(|m| format!("{reference}: {m}"))?;
    if put.status != StatusCode::CREATED {
        return Err(fail("a blob upload", &put));
    }
    Ok(digest)
}

async fn put_manifest(client: &Client, reference: &OciRef, tag: &str, manifest: Vec<u8>) -> Result<(), String> {
    let path = format!("/v2/{}/manifests/{tag}", reference.repository);
    let answer = client
        .send(
            &reference.registry,
            Method::PUT,
            &path,
            &[(header::CONTENT_TYPE, MANIFEST_MEDIA_TYPE.to_owned())],
            Bytes::from(manifest),
            Cap { bytes: SMALL_ANSWER_BYTES, key: "(fixed)" },
        )
        .await
        .map_err(|m| format!("{reference}: {m}"))?;
    if answer.status != StatusCode::CREATED {
        return Err(format!(
            "{reference}: the registry answered {} to the manifest: {}",
            answer.status,
            answer.quoted()
        ));
    }
    Ok(())
}
