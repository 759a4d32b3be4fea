//! `[tools.NAME]`: what the runtime needs of the operator's settings of one
//! tool to load and run it (where the component is and how it is pinned,
//! its limits, grants and sessions), and the rule for tool names.
//!
//! None of it comes from the component, and none of it reaches a model.
//! Every key is declared once: the runtime's here ([`TOOL`]), the limits in
//! `[defaults]` ([`airlock_settings::limits`]), `[tools.NAME.sessions]` in
//! [`SESSIONS`], and the keys the pipeline enforces (cards, approvals,
//! `side_effect`, `concurrency_safe`, `defer_loading`) by the host, which
//! reads the one table into each owner's part
//! ([`airlock_settings::shared_table`]). Each group of keys is checked by
//! the module that enforces it: limits by [`airlock_settings::limits`],
//! grants by [`crate::grants`] (and `network` by [`crate::network`]),
//! `[tools.NAME.sessions]` by its `sessions` part; this module checks what
//! concerns the tool as a whole (its name, its pins, limits against
//! grants).

use crate::distribution::OciSource;
use crate::grants::{Grants, RawDir, RawGrants};
use crate::network::RawNetwork;
use airlock_settings::key_doc::{Unit, check_range};
use airlock_settings::limits::{Limits, RawLimits};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod sessions;

pub use sessions::{DEFAULT_IDLE, DEFAULT_MAX_LIVE, MAX_MAX_LIVE, RawSessions, SESSIONS, SessionSettings};

/// Longest tool name accepted (the name must also match `^[A-Za-z0-9_-]+$`).
pub const MAX_NAME_LEN: usize = 64;
/// Hex digits of a `sha256` pin.
const SHA256_HEX_LEN: usize = 64;

/// The runtime's part of one configured tool: where its component is and
/// the settings it is loaded and run under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolConfig {
    /// Explicit component file; otherwise the tool is found in `tool_dirs`
    /// (or pulled, with `oci`).
    pub component: Option<PathBuf>,
    /// `component = "oci://…"`: the reference and the tool's OCI keys.
    pub oci: Option<OciSource>,
    /// What loading and the sandbox need.
    pub settings: ToolSettings,
}

airlock_settings::section! {
    /// The runtime's keys of `[tools.NAME]`: besides them a tool's table
    /// takes the limit keys of `[defaults]` and the pipeline's keys, which
    /// the host declares.
    pub const TOOL: Section<ToolConfig> = "tools.NAME";
    /// The runtime's keys of `[tools.NAME]` as written, one part of the
    /// table ([`airlock_settings::shared_table`]): each is read straight
    /// from the file, so that a type error in one keeps its line.
    pub struct RawTool {
        sessions: Option<RawSessions>,
    }
    hand {
        /// the component file, or `oci://REGISTRY/REPOSITORY[:TAG][@sha256:…]` to pull it from a registry
        component: Option<PathBuf>, Reload, accepts "a path or an `oci://` reference",
            unset "not set: found by its declared name in `tool_dirs`", example "\"tools/echo.wasm\"";
        /// refuse to load the component unless its sha256 is this
        sha256: Option<String>, Reload, accepts "64 hex digits", unset "not set: any digest",
            example "\"…64 hex digits…\"";
        /// refuse to serve the tool unless its revision (component and definition, as `airlock tools` shows it) is this; overrides the lock file's pin
        pin: Option<String>, Reload, accepts "`sha256:` and 64 lowercase hex digits",
            unset "not set: the revision `airlock lock` wrote to the lock file, if any", example "\"sha256:…64 hex digits…\"";
        /// for an `oci://` component: accept a tag, not only a digest
        allow_tags: Option<bool>, Reload, accepts "`true` or `false`", unset "`[distribution] allow_tags`",
            example "false";
        /// for an `oci://` component: refuse it unless one of `keys` signed it
        require_signature: Option<bool>, Reload, accepts "`true` or `false`",
            unset "`[distribution] require_signature`", example "true";
        /// for an `oci://` component: the public keys its signature is checked against
        keys: Option<Vec<PathBuf>>, Reload, accepts "an array of at most 32 paths", unset "`[distribution] keys`",
            example "[\"keys/publisher.pub\"]";
        /// directories the tool may reach, read-only unless `access = "rw"`
        dirs: Option<Vec<RawDir>>, Reload, accepts "an array of `{ host, guest, access }` (`\"ro\"` or `\"rw\"`)",
            unset "`[]`: no directory", example "[{ host = \"./workspace\", guest = \"/workspace\", access = \"ro\" }]";
        /// environment variables with fixed values
        env: Option<BTreeMap<String, String>>, Reload, accepts "a table of strings", unset "`{}`: no variable",
            example "{ GREETING = \"hello\" }";
        /// environment variables copied from the host when the tool is loaded
        env_from_host: Option<Vec<String>>, Reload, accepts "an array of variable names", unset "`[]`",
            example "[\"TZ\"]";
        /// outbound HTTP: the origins, methods, private addresses and secret headers allowed (`[tools.NAME.network]`, book/src/operator/network.md)
        network: Option<RawNetwork>, Reload, accepts "a table (see the network grant rules)",
            unset "not set: every request is refused", example "{ allow = [\"https://api.github.com\"] }";
        /// secrets of the operator's own, as regular expressions (Rust's regex syntax): withheld, like secret header values and well-known credentials, from the tool's result, output, content blocks and the log lines its client receives
        secret_patterns: Option<Vec<String>>, Reload, accepts "an array of at most 64 regular expressions of at most 1024 bytes, none matching empty text",
            unset "`[]`: secret header values and well-known credentials only", example "[\"acme_[a-z0-9]{32}\"]";
    }
}

/// The runtime's settings of one tool: what loading and the sandbox need,
/// everything host-side that is not the component itself and not the
/// pipeline's. None of it comes from the component.
/// `ToolSettings::default()` is a tool with no operator settings at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSettings {
    /// Limits of each call (and of reading the metadata).
    pub limits: Limits,
    /// Directories and variables the tool may touch.
    pub grants: Grants,
    /// Sessions (one live instance reused by calls with the same `session`
    /// id); `None` keeps them off, and every call gets a fresh instance.
    pub sessions: Option<SessionSettings>,
    /// Refuse to load unless the component's sha256 is this (lowercase hex).
    pub sha256: Option<String>,
    /// Refuse to serve the tool unless its revision is this
    /// (`sha256:HEX`); the lock file's pin applies when this is `None`.
    pub pin: Option<String>,
}

impl ToolConfig {
    /// Check the runtime's keys of `[tools.NAME]` (`raw`) and its limit
    /// keys (`limits`) over the `defaults` limits; relative paths are
    /// resolved by `resolve`.
    ///
    /// # Errors
    ///
    /// The first key refused, as `[tools.NAME] KEY ...` with what is
    /// accepted.
    pub fn from_raw(
        name: &str,
        raw: RawTool,
        limits: &RawLimits,
        defaults: Limits,
        resolve: &dyn Fn(&Path) -> PathBuf,
    ) -> Result<ToolConfig, String> {
        let ctx = format!("[tools.{name}]");
        let in_ctx = |m: String| format!("{ctx} {m}");
        check_name(name).map_err(in_ctx)?;
        let mut settings =
            ToolSettings { limits: Limits::from_raw(defaults, limits, &ctx)?, ..ToolSettings::default() };
        settings.grants = Grants::from_raw(
            RawGrants {
                dirs: raw.dirs.unwrap_or_default(),
                env: raw.env.unwrap_or_default(),
                env_from_host: raw.env_from_host.unwrap_or_default(),
                network: raw.network,
                secret_patterns: raw.secret_patterns.unwrap_or_default(),
            },
            resolve,
        )
        .map_err(in_ctx)?;
        // Granted directories stay open for the whole call and count
        // against the open-file cap; leave room to open something.
        let dirs = settings.grants.dirs.len();
        if dirs >= settings.limits.max_open_files {
            let (least, most) = (dirs as u64 + 1, airlock_settings::limits::MAX_OPEN_FILES as u64);
            let open = settings.limits.max_open_files as u64;
            let about = format!("room to open a file next to the {dirs} granted directories");
            check_range(&ctx, "max_open_files", open, least, most, Unit::Count, &about)?;
        }
        if let Some(pin) = &raw.sha256
            && (pin.len() != SHA256_HEX_LEN || !pin.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            return Err(format!("{ctx} sha256 = {pin:?} is not a sha256: expected {SHA256_HEX_LEN} hex digits"));
        }
        settings.sha256 = raw.sha256.map(|s| s.to_ascii_lowercase());
        if let Some(pin) = &raw.pin
            && !crate::revision::is_revision(pin)
        {
            return Err(format!(
                "{ctx} pin = {pin:?} is not a revision: expected \"sha256:\" and {SHA256_HEX_LEN} lowercase hex digits, \
                 as `airlock tools` shows it"
            ));
        }
        settings.pin = raw.pin;
        let sessions = format!("[tools.{name}.sessions]");
        settings.sessions = SessionSettings::from_raw(raw.sessions.as_ref(), settings.limits.memory_bytes, &sessions)?;
        let oci = match raw.component.as_deref() {
            Some(component) if crate::distribution::is_reference(component) => Some(
                OciSource::from_raw(
                    &component.to_string_lossy(),
                    raw.allow_tags,
                    raw.require_signature,
                    raw.keys,
                    resolve,
                )
                .map_err(in_ctx)?,
            ),
            _ if raw.allow_tags.is_some() || raw.require_signature.is_some() || raw.keys.is_some() => {
                return Err(format!(
                    "{ctx} allow_tags, require_signature and keys apply only to a component = \"oci://…\" \
                     pulled from a registry"
                ));
            }
            _ => None,
        };
        let component = if oci.is_some() { None } else { raw.component.as_deref().map(resolve) };
        Ok(ToolConfig { component, oci, settings })
    }
}

/// Check a tool name against `^[A-Za-z0-9_-]{1,64}$`.
///
/// # Errors
///
/// The name (its first 80 characters) and the pattern it must match.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok_chars = name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if name.is_empty() || name.len() > MAX_NAME_LEN || !ok_chars {
        let shown: String = name.chars().take(80).collect();
        return Err(format!("tool name {shown:?} is invalid: names must match ^[A-Za-z0-9_-]{{1,64}}$"));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
