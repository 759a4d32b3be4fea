//! `[distribution]` and the OCI keys of `[tools.NAME]`: where pulled
//! components are stored, the lock file, which tags and registries are
//! accepted, the signing keys, the caps and timeouts, and where registry
//! credentials come from.
//!
//! All of it is the operator's; nothing here is ever read from a registry
//! or a component.

use super::reference::OciRef;
use airlock_settings::key_doc::Value;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Largest manifest read from a registry (a component's or a signature's)
/// unless `[distribution] max_manifest_bytes` says otherwise.
pub const DEFAULT_MAX_MANIFEST_BYTES: u64 = 256 << 10;
/// The highest `max_manifest_bytes` accepted (the distribution server's own
/// limit for a manifest).
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;
/// Largest component layer pulled unless `[distribution] max_component_bytes`
/// says otherwise: the loader's own cap on a component file.
pub const DEFAULT_MAX_LAYER_BYTES: u64 = crate::compiler::MAX_COMPONENT_BYTES;
/// Connect timeout for a registry unless `connect_timeout_secs` says otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for the next bytes of a registry's answer unless
/// `read_timeout_secs` says otherwise.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// The highest connect or read timeout accepted, in seconds.
pub const MAX_TIMEOUT_SECS: u64 = 600;
/// Longest a whole registry request may take (redirects, the token
/// exchange and the whole body) unless `request_timeout_secs` says
/// otherwise: a registry that sends a byte just within every read timeout
/// cannot hold a load for longer (256 MiB at 0.5 MB/s).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// The highest `request_timeout_secs` accepted.
pub const MAX_REQUEST_TIMEOUT_SECS: u64 = 86_400;
/// Largest signature payload read from a registry unless
/// `[distribution] max_signature_payload_bytes` says otherwise (a cosign
/// simple-signing payload is a few hundred bytes).
pub const DEFAULT_MAX_SIGNATURE_PAYLOAD_BYTES: u64 = 64 << 10;
/// The highest `max_signature_payload_bytes` accepted.
pub const MAX_SIGNATURE_PAYLOAD_BYTES: u64 = 1 << 20;
/// Signatures checked per component unless `[distribution] max_signatures`
/// says otherwise.
pub const DEFAULT_MAX_SIGNATURES: usize = 16;
/// The highest `max_signatures` accepted.
pub const MAX_SIGNATURES: u64 = 256;
/// Redirects followed per registry request unless `[distribution]
/// max_redirects` says otherwise.
pub const DEFAULT_MAX_REDIRECTS: usize = 5;
/// The highest `max_redirects` accepted.
pub const MAX_REDIRECTS: u64 = 20;
/// Largest token answer read from a registry's auth server unless
/// `[distribution] max_token_response_bytes` says otherwise.
pub const DEFAULT_MAX_TOKEN_RESPONSE_BYTES: u64 = 64 << 10;
/// The highest `max_token_response_bytes` accepted.
pub const MAX_TOKEN_RESPONSE_BYTES: u64 = 1 << 20;
/// Largest lock file read unless `[distribution] max_lock_bytes` says
/// otherwise.
pub const DEFAULT_MAX_LOCK_BYTES: u64 = 1 << 20;
/// The highest `max_lock_bytes` accepted.
pub const MAX_LOCK_BYTES: u64 = 64 << 20;
/// Largest Docker-style auth file read unless `[distribution]
/// max_auth_file_bytes` says otherwise.
pub const DEFAULT_MAX_AUTH_FILE_BYTES: u64 = 1 << 20;
/// The highest `max_auth_file_bytes` accepted.
pub const MAX_AUTH_FILE_BYTES: u64 = 64 << 20;
/// Layers accepted in a manifest from a registry (a component's or a
/// signature's) unless `[distribution] max_layers` says otherwise.
pub const DEFAULT_MAX_LAYERS: usize = 64;
/// The highest `max_layers` accepted.
pub const MAX_LAYERS: u64 = 1024;
/// At most this many public keys in one list.
pub const MAX_KEYS: usize = 32;
/// The lock file's name next to the config unless `lock_file` says otherwise.
pub const LOCK_FILE_NAME: &str = "airlock.lock";

/// `[distribution.credentials."REGISTRY"]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCredential {
    username: Option<String>,
    username_env: Option<String>,
    password_env: Option<String>,
    password_file: Option<PathBuf>,
}

/// Where one registry's credentials come from (read when they are used,
/// so a secret never sits in the config's printed form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialSource {
    /// The user name, or the variable holding it.
    pub username: Secretless,
    /// The variable or file holding the password (or token).
    pub password: Secret,
}

/// A user name, written out or named by an environment variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Secretless {
    /// Written in the config.
    Value(String),
    /// In this environment variable.
    Env(String),
}

/// Where a password is: never in the config itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Secret {
    /// In this environment variable.
    Env(String),
    /// In this file (its first line).
    File(PathBuf),
}

airlock_settings::section! {
    /// The keys of `[distribution]`.
    pub const DISTRIBUTION: Section<DistributionSettings> = "distribution";
    /// `[distribution]` as written.
    pub struct RawDistribution {}
    hand {
        /// the content-addressed store of pulled manifests and components
        store: Option<PathBuf>, Reload, accepts "a path",
            unset "`$XDG_CACHE_HOME/airlock/oci`, else `~/.cache/airlock/oci`",
            show |d: &DistributionSettings| d.store.as_deref().map(Value::path),
            example "\"/var/lib/airlock/oci\"";
        /// the lock file pinning each tag pulled to its digest (`airlock pull` writes it)
        lock_file: Option<PathBuf>, Reload, accepts "a path", unset "`airlock.lock` beside the config",
            show |d: &DistributionSettings| Some(Value::path(&d.lock_file)),
            example "\"airlock.lock\"";
        /// public keys (PEM, ECDSA P-256, as `cosign generate-key-pair` writes them) a signature is checked against
        keys: Option<Vec<PathBuf>>, Reload, accepts "an array of at most 32 paths", unset "`[]`",
            show |d: &DistributionSettings| Some(Value::List(d.keys.iter().map(|k| k.display().to_string()).collect())),
            example "[\"keys/publisher.pub\"]";
        /// a Docker-style auth file (`~/.docker/config.json`) for registries without `credentials`
        auth_file: Option<PathBuf>, Reload, accepts "a path", unset "not set",
            show |d: &DistributionSettings| d.auth_file.as_deref().map(Value::path),
            example "\"~/.docker/config.json\"";
        /// credentials per registry (`host[:port]`): `username` or `username_env`, and `password_env` or `password_file`; never a password itself
        credentials: Option<BTreeMap<String, RawCredential>>, Reload,
            accepts "a table of `\"REGISTRY\" = { … }`, one per registry",
            unset "`{}`",
            example "{ \"ghcr.io\" = { username = \"bot\", password_env = \"GHCR_TOKEN\" } }";
    }
    /// Validated `[distribution]`.
    #[derive(Debug, Clone, PartialEq, Eq)]
    group pub struct DistributionSettings: Default (RawDistributionKeys) at () {
        /// The content-addressed store of pulled manifests and components;
        /// `None` when neither the config nor the environment names one.
        pub store: Option<PathBuf> = default_store(),
        /// The lock file pinning tags to digests.
        pub lock_file: PathBuf = PathBuf::from(LOCK_FILE_NAME),
        /// Public keys (PEM, ECDSA P-256, as `cosign generate-key-pair` writes).
        pub keys: Vec<PathBuf> = Vec::new(),
        /// A Docker-style auth file named by the config.
        pub auth_file: Option<PathBuf> = None,
        /// Credentials per registry (`host[:port]`).
        pub credentials: BTreeMap<String, CredentialSource> = BTreeMap::new();
        /// accept tags (names a registry can move) for every tool, not only where a tool says so
        allow_tags => allow_tags: bool = false, Reload;
        /// every pulled component must be signed by one of `keys`
        require_signature => require_signature: bool = false, Reload;
        /// registries spoken to over plain http besides loopback ones (`host` or `host:port`)
        insecure_registries => insecure_registries: Vec<String> = Vec::new(), Reload;
        /// the largest manifest read from a registry (a component's or a signature's)
        max_manifest_bytes => max_manifest_bytes: u64 = DEFAULT_MAX_MANIFEST_BYTES, Reload,
            range Bytes 1024..=MAX_MANIFEST_BYTES;
        /// the largest component layer pulled (at most the loader's own cap)
        max_component_bytes => max_component_bytes: u64 = DEFAULT_MAX_LAYER_BYTES, Reload,
            range Bytes 1..=crate::compiler::MAX_COMPONENT_BYTES;
        /// how long connecting to a registry may take
        connect_timeout_secs => connect_timeout: Duration = DEFAULT_CONNECT_TIMEOUT, Reload,
            range Secs 1..=MAX_TIMEOUT_SECS;
        /// the longest wait for the next bytes of a registry's answer
        read_timeout_secs => read_timeout: Duration = DEFAULT_READ_TIMEOUT, Reload, range Secs 1..=MAX_TIMEOUT_SECS;
        /// how long one whole registry request may take: redirects, the token exchange and the body
        request_timeout_secs => request_timeout: Duration = DEFAULT_REQUEST_TIMEOUT, Reload,
            range Secs 1..=MAX_REQUEST_TIMEOUT_SECS;
        /// the largest signature payload read from a registry
        max_signature_payload_bytes => max_signature_payload_bytes: u64 = DEFAULT_MAX_SIGNATURE_PAYLOAD_BYTES, Reload,
            range Bytes 1..=MAX_SIGNATURE_PAYLOAD_BYTES;
        /// signatures checked per component (the first ones of its signature manifest)
        max_signatures => max_signatures: usize = DEFAULT_MAX_SIGNATURES, Reload, range Count 1..=MAX_SIGNATURES;
        /// redirects followed per registry request
        max_redirects => max_redirects: usize = DEFAULT_MAX_REDIRECTS, Reload, range Count 0..=MAX_REDIRECTS;
        /// the largest token answer read from a registry's auth server
        max_token_response_bytes => max_token_response_bytes: u64 = DEFAULT_MAX_TOKEN_RESPONSE_BYTES, Reload,
            range Bytes 1024..=MAX_TOKEN_RESPONSE_BYTES;
        /// the largest lock file read or written
        max_lock_bytes => max_lock_bytes: u64 = DEFAULT_MAX_LOCK_BYTES, Reload, range Bytes 1024..=MAX_LOCK_BYTES;
        /// the largest Docker-style auth file read
        max_auth_file_bytes => max_auth_file_bytes: u64 = DEFAULT_MAX_AUTH_FILE_BYTES, Reload,
            range Bytes 1024..=MAX_AUTH_FILE_BYTES;
        /// layers accepted in a manifest from a registry
        max_layers => max_layers: usize = DEFAULT_MAX_LAYERS, Reload, range Count 1..=MAX_LAYERS;
    }
}

/// The store used when the config names none: `$XDG_CACHE_HOME/airlock/oci`,
/// else `$HOME/.cache/airlock/oci`.
fn default_store() -> Option<PathBuf> {
    let non_empty = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    non_empty("XDG_CACHE_HOME")
        .map(|d| d.join("airlock/oci"))
        .or_else(|| non_empty("HOME").map(|d| d.join(".cache/airlock/oci")))
}

impl DistributionSettings {
    /// Check `[distribution]`; relative paths are resolved by `resolve`.
    ///
    /// # Errors
    ///
    /// The key refused and what is accepted.
    pub fn from_raw(raw: RawDistribution, resolve: &dyn Fn(&Path) -> PathBuf) -> Result<Self, String> {
        let scope = DISTRIBUTION.scope();
        let mut settings = Self::from_keys(&(&raw).into(), &Self::defaults(), &scope)?;
        let keys = raw.keys.unwrap_or_default();
        check_keys(&format!("{scope} keys"), &keys)?;
        for registry in &settings.insecure_registries {
            OciRef::parse(&format!("oci://{registry}/x:y"), true)
                .map_err(|_| format!("{scope} insecure_registries: {registry:?} is not a host or host:port"))?;
        }
        let mut credentials = BTreeMap::new();
        for (registry, raw) in raw.credentials.unwrap_or_default() {
            let ctx = format!("{scope} credentials.{registry:?}");
            let username = match (raw.username, raw.username_env) {
                (Some(name), None) => Secretless::Value(name),
                (None, Some(var)) => Secretless::Env(var),
                _ => return Err(format!("{ctx} needs exactly one of username or username_env")),
            };
            let password = match (raw.password_env, raw.password_file) {
                (Some(var), None) => Secret::Env(var),
                (None, Some(file)) => Secret::File(resolve(&file)),
                _ => {
                    return Err(format!(
                        "{ctx} needs exactly one of password_env or password_file (a password is never written in \
                         the config)"
                    ));
                }
            };
            credentials.insert(registry, CredentialSource { username, password });
        }
        if let Some(store) = raw.store.as_deref() {
            settings.store = Some(resolve(store));
        }
        settings.lock_file = resolve(raw.lock_file.as_deref().unwrap_or(Path::new(LOCK_FILE_NAME)));
        settings.keys = keys.iter().map(|k| resolve(k)).collect();
        settings.auth_file = raw.auth_file.as_deref().map(resolve);
        settings.credentials = credentials;
        Ok(settings)
    }

    /// Whether `registry` is spoken to over plain http: a loopback host, or
    /// one the operator listed in `insecure_registries`.
    pub fn plain_http(&self, registry: &str) -> bool {
        let host = super::reference::host_of(registry);
        is_loopback(registry) || self.insecure_registries.iter().any(|r| r == registry || r == host)
    }

    /// What a tool from a registry must satisfy: the tool's own keys, else
    /// the config's.
    pub fn policy_for(&self, source: &OciSource) -> SignaturePolicy {
        SignaturePolicy {
            required: source.require_signature.unwrap_or(self.require_signature),
            keys: source.keys.clone().unwrap_or_else(|| self.keys.clone()),
        }
    }
}

/// Which signatures a component must carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignaturePolicy {
    /// Refuse a component no key verifies.
    pub required: bool,
    /// The public keys a signature is checked against.
    pub keys: Vec<PathBuf>,
}

/// A tool whose `component` is an `oci://` reference, with its OCI keys of
/// `[tools.NAME]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciSource {
    /// The reference as written.
    pub reference: OciRef,
    /// `allow_tags` of the tool, if it says.
    pub allow_tags: Option<bool>,
    /// `require_signature` of the tool, if it says.
    pub require_signature: Option<bool>,
    /// `keys` of the tool, if it names its own.
    pub keys: Option<Vec<PathBuf>>,
}

impl OciSource {
    /// Check the OCI keys of `[tools.NAME]` (without the `[tools.NAME]`
    /// prefix in errors).
    ///
    /// # Errors
    ///
    /// A bad reference or too many keys.
    pub fn from_raw(
        reference: &str,
        allow_tags: Option<bool>,
        require_signature: Option<bool>,
        keys: Option<Vec<PathBuf>>,
        resolve: &dyn Fn(&Path) -> PathBuf,
    ) -> Result<OciSource, String> {
        let reference = OciRef::parse(reference, true).map_err(|m| format!("component: {m}"))?;
        if let Some(keys) = &keys {
            check_keys("keys", keys)?;
        }
        Ok(OciSource {
            reference,
            allow_tags,
            require_signature,
            keys: keys.map(|keys| keys.iter().map(|k| resolve(k)).collect()),
        })
    }

    /// Whether a tag-only reference is acceptable under `settings`.
    pub fn tag_allowed(&self, settings: &DistributionSettings) -> bool {
        self.reference.digest.is_some() || self.allow_tags.unwrap_or(settings.allow_tags)
    }
}

/// `check_keys` refuses a list longer than [`MAX_KEYS`], naming `key`.
fn check_keys(key: &str, keys: &[PathBuf]) -> Result<(), String> {
    if keys.len() > MAX_KEYS {
        return Err(format!("{key} lists {} public keys; at most {MAX_KEYS} are accepted", keys.len()));
    }
    Ok(())
}

/// Whether `authority` (`HOST[:PORT]`) names this machine: `localhost` or a
/// loopback address. A name that merely resolves to one is not seen here.
pub fn is_loopback(authority: &str) -> bool {
    airlock_core::plaintext::is_loopback(super::reference::host_of(authority))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<DistributionSettings, String> {
        let raw: RawDistribution = toml::from_str(text).map_err(|err| err.to_string())?;
        DistributionSettings::from_raw(raw, &|p| p.to_owned())
    }

    #[test]
    fn generated_docs_are_current() {
        DISTRIBUTION.ensure_documents("book/src/operator/installing-tools.md").unwrap();
    }

    #[test]
    fn every_cap_has_a_default_and_refuses_values_out_of_its_range_by_name() {
        let defaults = parse("").unwrap();
        assert_eq!(defaults, DistributionSettings { store: defaults.store.clone(), ..DistributionSettings::default() });
        assert_eq!(defaults.max_signature_payload_bytes, 64 << 10);
        assert_eq!(defaults.max_signatures, 16);
        assert_eq!(defaults.max_redirects, 5);
        assert_eq!(defaults.max_token_response_bytes, 64 << 10);
        assert_eq!(defaults.max_lock_bytes, 1 << 20);
        assert_eq!(defaults.max_auth_file_bytes, 1 << 20);
        assert_eq!(defaults.max_layers, 64);
        // (key, lowest accepted, highest accepted)
        let caps: [(&str, u64, u64); 12] = [
            ("request_timeout_secs", 1, MAX_REQUEST_TIMEOUT_SECS),
            ("max_manifest_bytes", 1024, MAX_MANIFEST_BYTES),
            ("max_component_bytes", 1, crate::compiler::MAX_COMPONENT_BYTES),
            ("connect_timeout_secs", 1, MAX_TIMEOUT_SECS),
            ("read_timeout_secs", 1, MAX_TIMEOUT_SECS),
            ("max_signature_payload_bytes", 1, MAX_SIGNATURE_PAYLOAD_BYTES),
            ("max_signatures", 1, MAX_SIGNATURES),
            ("max_redirects", 0, MAX_REDIRECTS),
            ("max_token_response_bytes", 1024, MAX_TOKEN_RESPONSE_BYTES),
            ("max_lock_bytes", 1024, MAX_LOCK_BYTES),
            ("max_auth_file_bytes", 1024, MAX_AUTH_FILE_BYTES),
            ("max_layers", 1, MAX_LAYERS),
        ];
        for (key, min, max) in caps {
            parse(&format!("{key} = {min}")).unwrap_or_else(|err| panic!("{key} = {min}: {err}"));
            parse(&format!("{key} = {max}")).unwrap_or_else(|err| panic!("{key} = {max}: {err}"));
            let accepted = format!("accepted {min}..={max}");
            for bad in [max + 1].into_iter().chain(min.checked_sub(1)) {
                let err = parse(&format!("{key} = {bad}")).unwrap_err();
                assert!(err.contains(&format!("{key} = {bad}")) && err.contains(&accepted), "{err}");
            }
        }
        let set = parse(
            "max_signature_payload_bytes = 100\nmax_signatures = 2\nmax_redirects = 0\nmax_token_response_bytes = 2048\n\
             max_lock_bytes = 4096\nmax_auth_file_bytes = 8192\nmax_layers = 3",
        )
        .unwrap();
        assert_eq!(
            (
                set.max_signature_payload_bytes,
                set.max_signatures,
                set.max_redirects,
                set.max_token_response_bytes,
                set.max_lock_bytes,
                set.max_auth_file_bytes,
                set.max_layers
            ),
            (100, 2, 0, 2048, 4096, 8192, 3)
        );
    }

    #[test]
    fn key_lists_are_accepted_up_to_max_keys() {
        let keys = |n: usize| (0..n).map(|i| format!("\"k{i}.pub\"")).collect::<Vec<_>>().join(", ");
        assert_eq!(parse(&format!("keys = [{}]", keys(MAX_KEYS))).unwrap().keys.len(), MAX_KEYS);
        let err = parse(&format!("keys = [{}]", keys(MAX_KEYS + 1))).unwrap_err();
        assert!(err.contains("lists 33 public keys") && err.contains("at most 32 are accepted"), "{err}");
        let reference = "oci://r.example/a@sha256:".to_owned() + &"0".repeat(64);
        let tool_keys = |n: usize| (0..n).map(|i| PathBuf::from(format!("k{i}.pub"))).collect::<Vec<_>>();
        OciSource::from_raw(&reference, None, None, Some(tool_keys(MAX_KEYS)), &|p| p.to_owned()).unwrap();
        let err =
            OciSource::from_raw(&reference, None, None, Some(tool_keys(MAX_KEYS + 1)), &|p| p.to_owned()).unwrap_err();
        assert!(err.contains("at most 32 are accepted"), "{err}");
    }
}
