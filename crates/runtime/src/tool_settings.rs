//! `[tools.NAME]`: the operator's settings of one tool, everything
//! host-side that is not the component itself, and the rule for tool names.
//!
//! None of it comes from the component, and none of it reaches a model
//! except through the projection (`projection.rs`). Every key is declared
//! once, here ([`TOOL`]), in `[defaults]` ([`airlock_settings::limits`])
//! or in `[tools.NAME.sessions]` ([`SESSIONS`]). Each group of keys is
//! checked by the module that enforces it: limits by
//! [`airlock_settings::limits`], grants by [`crate::grants`] (and `network`
//! by [`crate::network`]), `[tools.NAME.sessions]` by its `sessions` part;
//! this module checks what concerns the tool as a whole (its name, its pins,
//! limits against grants).

use crate::distribution::OciSource;
use crate::grants::{Grants, RawDir, RawGrants};
use crate::network::RawNetwork;
use airlock_policy::card::Template;
use airlock_policy::confirm::{ApprovalMode, Approver};
use airlock_settings::limits::{Limits, RawLimits};
use airlock_settings::section::{Unit, check_range};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod sessions;
mod task;

pub use sessions::{DEFAULT_IDLE, DEFAULT_MAX_LIVE, MAX_MAX_LIVE, RawSessions, SESSIONS, SessionSettings};
pub use task::{MAX_TASK_TIMEOUT, TaskSupport};

/// Longest tool name accepted (the name must also match `^[A-Za-z0-9_-]+$`).
pub const MAX_NAME_LEN: usize = 64;
/// Hex digits of a `sha256` pin.
const SHA256_HEX_LEN: usize = 64;

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

airlock_settings::section! {
    /// The keys of `[tools.NAME]` besides the limit keys of `[defaults]`,
    /// which a tool's table may set too.
    pub const TOOL: Section<ToolConfig> = "tools.NAME";
    /// `[tools.NAME]` as written. The grant keys are fields of their own
    /// here, not a flattened table, so that a type error in them keeps its
    /// line.
    pub struct RawTool {
        #[serde(flatten)]
        limits: RawLimits,
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
        /// the confirmation card a person approves, rendered from the validated arguments and the caller
        confirm: Option<String>, Reload, accepts "a card template", unset "not set: the generic question",
            example "\"Write {content|json} to {path} for {caller.principal}\"";
        /// one line for logs and UIs, rendered from the result; never sent to a model
        present_result: Option<String>, Reload, accepts "a one-line card template", unset "not set",
            example "\"Wrote {bytes_written} bytes to {path}\"";
        /// how a call the policy asks about is confirmed for this tool: by the MCP client, on Airlock's page, or on the page when one is served
        approvals: Option<String>, Reload, accepts "`\"client\"`, `\"page\"` or `\"page-when-possible\"`",
            unset "`[approvals] mode`", example "\"page\"";
        /// who must approve this tool's calls instead of the caller (four eyes): a principal, or a Cedar entity whose members may; a policy's `@approver` comes first
        approver: Option<String>, Reload, accepts "a principal (`\"carol\"`) or an entity (`\"Role::\\\"supervisors\\\"\"`)",
            unset "not set: the caller (or the policy's `@approver`)", example "\"Role::\\\"supervisors\\\"\"";
        /// whether a call may run as an MCP task (its result kept for the client to fetch): never, for a client that declared the tasks extension, or only as a task
        task: Option<String>, Reload, accepts "`\"never\"`, `\"optional\"` or `\"required\"`",
            unset "`\"never\"`: every call runs while the client waits",
            show |t: &ToolConfig| Some(airlock_settings::section::Value::Text(t.settings.task.as_str().to_owned())),
            example "\"optional\"";
    }
    /// Operator settings for one tool: everything host-side that is not the
    /// component itself. None of it comes from the component.
    /// `ToolSettings::default()` is a tool with no operator settings at all
    /// (no side effects); a `[tools.NAME]` table that does not say
    /// otherwise has side effects.
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    group pub struct ToolSettings (RawToolKeys) at (settings) {
        /// Limits of each call (and of reading the metadata).
        pub limits: Limits = Limits::default(),
        /// Directories and variables the tool may touch.
        pub grants: Grants = Grants::default(),
        /// Sessions (one live instance reused by calls with the same `session`
        /// id); `None` keeps them off, and every call gets a fresh instance.
        pub sessions: Option<SessionSettings> = None,
        /// Refuse to load unless the component's sha256 is this (lowercase hex).
        pub sha256: Option<String> = None,
        /// Refuse to serve the tool unless its revision is this
        /// (`sha256:HEX`); the lock file's pin applies when this is `None`.
        pub pin: Option<String> = None,
        /// The confirmation card (`confirm`), rendered from the validated
        /// arguments and the caller when a call asks for confirmation.
        pub confirm: Option<Template> = None,
        /// The one-line presentation of a result (`present_result`) for logs
        /// and UIs, rendered from the structured result; never sent to a model.
        pub present_result: Option<Template> = None,
        /// How this tool's asked calls are confirmed (`approvals`); `None`:
        /// `[approvals] mode`.
        pub approvals: Option<ApprovalMode> = None,
        /// Who must approve this tool's asked calls (`approver`) when the
        /// policy names no `@approver`; `None`: the caller.
        pub approver: Option<Approver> = None,
        /// Whether a call may run as an MCP task (`task`).
        pub task: TaskSupport = TaskSupport::Never;
        /// calls may run in parallel with other calls that may
        concurrency_safe => concurrency_safe: bool = false, Reload;
        /// the tool changes something outside itself (writes, sends, pays): the default policy asks first
        side_effect => side_effect: bool = true, Reload;
        /// offer the tool to models as deferred (loaded on demand by providers with tool search)
        defer_loading => defer_loading: bool = false, Reload;
        /// the deadline of a call that runs as a task, instead of `timeout_ms` (never below it); fuel that follows the deadline follows this one
        task_timeout_ms => task_timeout: Option<std::time::Duration> = None, Reload,
            range Millis 1..=MAX_TASK_TIMEOUT.as_millis() as u64, unset "the tool's `timeout_ms`", example "600000";
    }
}

impl ToolSettings {
    /// The limits of one call: the tool's, or, for a call that runs as a
    /// task of a tool whose calls may be tasks, the same with its
    /// `task_timeout_ms` (when set) as the deadline.
    pub fn limits_for(&self, as_task: bool) -> Limits {
        match self.task_timeout {
            Some(timeout) if as_task && self.task.allows_tasks() => self.limits.with_deadline(timeout),
            _ => self.limits,
        }
    }
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
        let mut settings = ToolSettings::from_keys(&(&raw).into(), &ToolSettings::defaults(), &ctx)?;
        settings.limits = Limits::from_raw(defaults, &raw.limits, &ctx)?;
        settings.grants = Grants::from_raw(
            RawGrants {
                dirs: raw.dirs.unwrap_or_default(),
                env: raw.env.unwrap_or_default(),
                env_from_host: raw.env_from_host.unwrap_or_default(),
                network: raw.network,
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
        // Templates are checked now: a call never meets a syntax error.
        let template = |key: &str, text: Option<&String>, one_line: bool| {
            text.map(|t| Template::parse(t, one_line).map_err(|m| format!("{ctx} {key} = {t:?} {m}"))).transpose()
        };
        settings.confirm = template("confirm", raw.confirm.as_ref(), false)?;
        settings.present_result = template("present_result", raw.present_result.as_ref(), true)?;
        settings.approvals = raw
            .approvals
            .as_deref()
            .map(ApprovalMode::parse)
            .transpose()
            .map_err(|m| format!("{ctx} approvals = {m}"))?;
        settings.approver =
            raw.approver.as_deref().map(Approver::parse).transpose().map_err(|m| format!("{ctx} approver = {m}"))?;
        settings.task = raw
            .task
            .as_deref()
            .map(TaskSupport::parse)
            .transpose()
            .map_err(|m| format!("{ctx} task = {m}"))?
            .unwrap_or_default();
        task::check(&ctx, settings.task, settings.task_timeout, &settings.limits)?;
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
