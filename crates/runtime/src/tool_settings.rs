//! `[tools.NAME]`: the operator's settings of one tool, everything
//! host-side that is not the component itself, and the rule for tool names.
//!
//! None of it comes from the component, and none of it reaches a model
//! except through the projection (`projection.rs`). Each group of keys is
//! checked by the module that enforces it: limits by [`airlock_settings::limits`],
//! grants by [`crate::grants`] (and `network` by [`crate::network`]),
//! `[tools.NAME.sessions]` by its `sessions` part; this module checks what concerns the
//! tool as a whole (its name, its pin, limits against grants).

use crate::distribution::OciSource;
use crate::grants::{Grants, RawDir, RawGrants};
use crate::network::RawNetwork;
use airlock_policy::card::Template;
use airlock_settings::limits::{Limits, RawLimits};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod sessions;

pub use sessions::{DEFAULT_IDLE, DEFAULT_MAX_LIVE, MAX_MAX_LIVE, RawSessions, SessionSettings};

/// Longest tool name accepted (the name must also match `^[A-Za-z0-9_-]+$`).
pub const MAX_NAME_LEN: usize = 64;
/// Hex digits of a `sha256` pin.
const SHA256_HEX_LEN: usize = 64;

/// Operator settings for one tool: everything host-side that is not the
/// component itself. None of it comes from the component.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolSettings {
    /// Limits of each call (and of reading the metadata).
    pub limits: Limits,
    /// Directories and variables the tool may touch.
    pub grants: Grants,
    /// Sessions (one live instance reused by calls with the same `session`
    /// id); `None` keeps them off, and every call gets a fresh instance.
    pub sessions: Option<SessionSettings>,
    /// Calls may run in parallel with other calls. Off unless the operator
    /// says so.
    pub concurrency_safe: bool,
    /// The tool changes something outside itself (writes, sends, pays). The
    /// default policy asks for confirmation before such calls.
    pub side_effect: bool,
    /// Offer the tool to models as deferred (loaded on demand by providers
    /// that support tool search).
    pub defer_loading: bool,
    /// Refuse to load unless the component's sha256 is this (lowercase hex).
    pub sha256: Option<String>,
    /// The confirmation card (`confirm`), rendered from the validated
    /// arguments and the caller when a call asks for confirmation.
    pub confirm: Option<Template>,
    /// The one-line presentation of a result (`present_result`) for logs
    /// and UIs, rendered from the structured result; never sent to a model.
    pub present_result: Option<Template>,
}

/// Settings of one configured tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolConfig {
    /// Explicit component file; otherwise the tool is found in `tool_dirs`
    /// (or pulled, with `oci`).
    pub component: Option<PathBuf>,
    /// `component = "oci://…"`: the reference and the tool's OCI keys.
    pub oci: Option<OciSource>,
    /// Host-side settings.
    pub settings: ToolSettings,
}

/// `[tools.NAME]` as written. The grant keys are fields of their own here,
/// not a flattened table, so that a type error in them keeps its line.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawTool {
    component: Option<PathBuf>,
    allow_tags: Option<bool>,
    require_signature: Option<bool>,
    keys: Option<Vec<PathBuf>>,
    sha256: Option<String>,
    #[serde(flatten)]
    limits: RawLimits,
    #[serde(default)]
    concurrency_safe: bool,
    side_effect: Option<bool>,
    #[serde(default)]
    defer_loading: bool,
    #[serde(default)]
    dirs: Vec<RawDir>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    env_from_host: Vec<String>,
    network: Option<RawNetwork>,
    sessions: Option<RawSessions>,
    confirm: Option<String>,
    present_result: Option<String>,
}

impl ToolConfig {
    /// Check `[tools.NAME]` over the `defaults` limits; relative paths are
    /// resolved by `resolve`. A tool that does not say otherwise has side
    /// effects.
    ///
    /// # Errors
    ///
    /// The first key refused, as `[tools.NAME] KEY ...` with what is
    /// accepted.
    pub fn from_raw(
        name: &str,
        raw: RawTool,
        defaults: Limits,
        resolve: &dyn Fn(&Path) -> PathBuf,
    ) -> Result<ToolConfig, String> {
        let ctx = format!("[tools.{name}]");
        let in_ctx = |m: String| format!("{ctx} {m}");
        check_name(name).map_err(in_ctx)?;
        let limits = Limits::from_raw(defaults, &raw.limits).map_err(in_ctx)?;
        let grants = Grants::from_raw(
            RawGrants { dirs: raw.dirs, env: raw.env, env_from_host: raw.env_from_host, network: raw.network },
            resolve,
        )
        .map_err(in_ctx)?;
        // Granted directories stay open for the whole call and count
        // against the open-file cap; leave room to open something.
        if grants.dirs.len() >= limits.max_open_files {
            return Err(format!(
                "{ctx} max_open_files = {} leaves no room to open a file next to the {} granted directories: \
                 accepted {}..={}",
                limits.max_open_files,
                grants.dirs.len(),
                grants.dirs.len() + 1,
                airlock_settings::limits::MAX_OPEN_FILES
            ));
        }
        if let Some(pin) = &raw.sha256
            && (pin.len() != SHA256_HEX_LEN || !pin.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            return Err(format!("{ctx} sha256 = {pin:?} is not a sha256: expected {SHA256_HEX_LEN} hex digits"));
        }
        let sessions = SessionSettings::from_raw(raw.sessions.as_ref(), limits.memory_bytes).map_err(in_ctx)?;
        // Templates are checked now: a call never meets a syntax error.
        let template = |key: &str, text: Option<&String>, one_line: bool| {
            text.map(|t| Template::parse(t, one_line).map_err(|m| format!("{ctx} {key} = {t:?} {m}"))).transpose()
        };
        let confirm = template("confirm", raw.confirm.as_ref(), false)?;
        let present_result = template("present_result", raw.present_result.as_ref(), true)?;
        let settings = ToolSettings {
            limits,
            grants,
            sessions,
            concurrency_safe: raw.concurrency_safe,
            side_effect: raw.side_effect.unwrap_or(true),
            defer_loading: raw.defer_loading,
            sha256: raw.sha256.map(|s| s.to_ascii_lowercase()),
            confirm,
            present_result,
        };
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
mod tests {
    use super::*;

    fn check(name: &str, ok: bool) {
        assert_eq!(check_name(name).is_ok(), ok, "{name:?}");
    }

    #[test]
    fn names() {
        check("read_file", true);
        check("a-B_9", true);
        check(&"x".repeat(64), true);
        check(&"x".repeat(65), false);
        check("", false);
        check("bad name!", false);
        check("ünïcode", false);
    }
}
