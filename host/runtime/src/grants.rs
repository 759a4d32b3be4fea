//! Capabilities an operator grants to a tool, and the one function that
//! turns them into a WASI context.
//!
//! # Security
//!
//! [`Grants::default`] grants nothing: no directory, no environment
//! variable, no network, no stdin, and stdout/stderr go to capped in-memory
//! sinks. [`Grants::wasi_ctx`] is the only place a `WasiCtx` is built, so
//! every authority a guest holds is visible here. Directory grants are
//! enforced by wasmtime-wasi through cap-std: `..`, absolute paths and
//! symlinks cannot leave a preopened directory. A network grant is not a
//! socket: raw TCP, UDP and name lookups stay off for every tool, and
//! `wasi:http` requests are checked one by one in [`crate::network`].
//! Random bytes are capped per request at
//! [`MAX_RANDOM_BYTES`](airlock_settings::limits::MAX_RANDOM_BYTES); open files are
//! counted in `budget.rs`.
//!
//! This module owns the grant keys of `[tools.NAME]` (`dirs`, `env`,
//! `env_from_host`, and `network` through [`crate::network`]) and carries
//! `secret_patterns` (checked by [`crate::secrets`]) to the sandbox:
//! [`Grants::from_raw`] checks them once, when the config is loaded.

use crate::capture::CapturedOutput;
use crate::network::{NetworkGrant, RawNetwork};
use crate::secrets::{Scrubber, SecretPatterns};
use airlock_settings::limits::MAX_RANDOM_BYTES;
use anyhow::Context as _;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

/// Access a directory grant allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirAccess {
    /// Read files and list directories; every write fails.
    ReadOnly,
    /// Read, create, overwrite and delete under the directory.
    ReadWrite,
}

/// A host directory made visible to the guest at `guest_path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirGrant {
    /// The directory on the host (canonicalized when the config is loaded).
    pub host_path: PathBuf,
    /// Where the guest sees it, e.g. `/workspace`.
    pub guest_path: String,
    /// Read-only unless the operator wrote `rw`.
    pub access: DirAccess,
}

/// An environment variable the guest may read, with the value fixed by the
/// operator when the config was loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvGrant {
    /// Variable name.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// Everything a tool may touch outside its own memory. Empty by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    /// Preopened directories.
    pub dirs: Vec<DirGrant>,
    /// Environment variables.
    pub env: Vec<EnvGrant>,
    /// Outbound HTTP; `None` refuses every request.
    pub network: Option<Arc<NetworkGrant>>,
    /// The operator's own patterns of secrets withheld from what the tool
    /// hands back (`secret_patterns`, [`crate::secrets`]): a restriction,
    /// not a grant.
    pub secret_patterns: Option<Arc<SecretPatterns>>,
}

/// One entry of `[tools.NAME] dirs` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDir {
    host: PathBuf,
    guest: String,
    #[serde(default = "default_access")]
    access: String,
}

fn default_access() -> String {
    "ro".into()
}

/// The grant keys of `[tools.NAME]` as written. They sit in the tool's own
/// table, so the tool's settings read them as their own fields (a flattened
/// table would lose the line numbers of type errors) and hand them here.
#[derive(Debug, Default)]
pub struct RawGrants {
    /// `dirs`: directories to preopen.
    pub dirs: Vec<RawDir>,
    /// `env`: variables with their values.
    pub env: BTreeMap<String, String>,
    /// `env_from_host`: variables whose values are read from the host's
    /// environment at load time.
    pub env_from_host: Vec<String>,
    /// `[tools.NAME.network]`.
    pub network: Option<RawNetwork>,
    /// `secret_patterns`: regular expressions of the operator's secrets.
    pub secret_patterns: Vec<String>,
}

impl Grants {
    /// Check raw grants: directories exist and are canonicalized (relative
    /// host paths through `resolve`), guest paths are absolute, variables
    /// from the host are set, the network grant is valid.
    ///
    /// # Errors
    ///
    /// The first grant that cannot be given, naming its key and what is
    /// accepted.
    pub fn from_raw(raw: RawGrants, resolve: &dyn Fn(&Path) -> PathBuf) -> Result<Grants, String> {
        let mut grants = Grants::default();
        for dir in &raw.dirs {
            let access = match dir.access.as_str() {
                "ro" => DirAccess::ReadOnly,
                "rw" => DirAccess::ReadWrite,
                other => return Err(format!("dirs: access = {other:?} is not accepted: use \"ro\" or \"rw\"")),
            };
            if !dir.guest.starts_with('/') || dir.guest.split('/').any(|part| part == "..") {
                return Err(format!(
                    "dirs: guest = {:?} must be an absolute guest path without `..`, e.g. \"/workspace\"",
                    dir.guest
                ));
            }
            let host = resolve(&dir.host);
            let host_path = host.canonicalize().map_err(|err| format!("dirs: host = {:?}: {err}", host.display()))?;
            if !host_path.is_dir() {
                return Err(format!("dirs: host = {:?} is not a directory", host.display()));
            }
            if host_path == Path::new("/") {
                return Err(
                    "dirs: granting the host's root directory is refused; grant the directory the tool needs".into()
                );
            }
            grants.dirs.push(DirGrant { host_path, guest_path: dir.guest.clone(), access });
        }
        for (name, value) in raw.env {
            grants.env.push(EnvGrant { name, value });
        }
        for name in raw.env_from_host {
            let value = std::env::var(&name)
                .map_err(|_| format!("env_from_host: {name:?} is not set in the host environment"))?;
            grants.env.push(EnvGrant { name, value });
        }
        if let Some(network) = raw.network {
            grants.network = Some(Arc::new(NetworkGrant::from_raw(network, resolve)?));
        }
        if !raw.secret_patterns.is_empty() {
            grants.secret_patterns = Some(Arc::new(SecretPatterns::new(raw.secret_patterns)?));
        }
        Ok(grants)
    }

    /// What the host withholds from the texts of these grants' calls: the
    /// network grant's secret values and the operator's patterns, besides
    /// well-known credentials.
    pub fn scrubber(&self) -> Scrubber {
        Scrubber::new(self.network.clone(), self.secret_patterns.clone())
    }

    /// True when nothing is granted.
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty() && self.env.is_empty() && self.network.is_none()
    }

    /// These grants as they apply to one call of `principal`: credentials
    /// the operator keeps per principal (`value_dir` of a secret header)
    /// are read for that principal, and a principal without one is refused
    /// the origin. Borrowed when nothing is kept per principal.
    pub fn for_principal(&self, principal: &str) -> std::borrow::Cow<'_, Grants> {
        match self.network.as_deref().and_then(|network| network.for_principal(principal)) {
            Some(network) => std::borrow::Cow::Owned(Grants { network: Some(Arc::new(network)), ..self.clone() }),
            None => std::borrow::Cow::Borrowed(self),
        }
    }

    /// A short human summary, e.g. `/data (ro), env LANG`.
    pub fn summary(&self) -> String {
        let dirs = self.dirs.iter().map(|d| {
            let mode = match d.access {
                DirAccess::ReadOnly => "ro",
                DirAccess::ReadWrite => "rw",
            };
            format!("{} ({mode})", d.guest_path)
        });
        let env = self.env.iter().map(|e| format!("env {}", e.name));
        let network = self.network.iter().map(|n| n.summary());
        let parts: Vec<String> = dirs.chain(env).chain(network).collect();
        if parts.is_empty() { "none".to_owned() } else { parts.join(", ") }
    }

    /// Build the WASI context of one call from these grants: the only
    /// function that creates a `WasiCtx`.
    ///
    /// Stdin is closed, stdout/stderr go to the given capped sinks, TCP, UDP
    /// and name lookups are off, and only the granted directories and
    /// variables exist.
    ///
    /// # Errors
    ///
    /// A granted directory that cannot be opened (deleted since load).
    pub fn wasi_ctx(&self, stdout: CapturedOutput, stderr: CapturedOutput) -> anyhow::Result<WasiCtx> {
        let mut builder = WasiCtxBuilder::new();
        builder.stdout(stdout).stderr(stderr);
        builder.allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
        // wasmtime-wasi answers up to 64 MiB per `get-random-bytes` call,
        // allocated on the host; no tool needs more than a seed's worth.
        builder.max_random_size(MAX_RANDOM_BYTES);
        for grant in &self.env {
            builder.env(&grant.name, &grant.value);
        }
        for dir in &self.dirs {
            let perms = match dir.access {
                DirAccess::ReadOnly => FsPerms::ReadOnly,
                DirAccess::ReadWrite => FsPerms::ReadWrite,
            };
            builder
                .preopened_dir(&dir.host_path, &dir.guest_path, perms)
                .map_err(anyhow::Error::from)
                .with_context(|| format!("opening granted directory {}", dir.host_path.display()))?;
        }
        Ok(builder.build())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_grants_nothing() {
        let grants = Grants::default();
        assert!(grants.is_empty());
        assert_eq!(grants.summary(), "none");
    }

    #[test]
    fn summary_lists_dirs_and_env() {
        let grants = Grants {
            dirs: vec![DirGrant { host_path: "/tmp".into(), guest_path: "/data".into(), access: DirAccess::ReadOnly }],
            env: vec![EnvGrant { name: "LANG".into(), value: "C".into() }],
            network: None,
            secret_patterns: None,
        };
        assert_eq!(grants.summary(), "/data (ro), env LANG");
    }

    #[test]
    fn missing_directory_is_an_error_naming_it() {
        let grants = Grants {
            dirs: vec![DirGrant {
                host_path: "/nonexistent/airlock-test".into(),
                guest_path: "/data".into(),
                access: DirAccess::ReadWrite,
            }],
            env: vec![],
            network: None,
            secret_patterns: None,
        };
        let Err(err) = grants.wasi_ctx(CapturedOutput::new(1), CapturedOutput::new(1)) else {
            panic!("opened a missing directory")
        };
        assert!(format!("{err:#}").contains("/nonexistent/airlock-test"));
    }
}
