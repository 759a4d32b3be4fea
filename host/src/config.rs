//! The operator's `airlock.toml`: read into raw serde types that refuse
//! unknown keys, then converted once into validated types. The rest of the
//! host only sees the validated [`Config`].
//!
//! Every error names the file, the key and what is accepted.

use crate::audit::{AuditSettings, Durability};
use crate::engine::EngineSettings;
use crate::grants::{DirAccess, DirGrant, EnvGrant, Grants};
use crate::limits::Limits;
use crate::loader::{ToolSettings, check_name};
use crate::network::{NetworkGrant, RawNetwork};
use crate::quota::{Quotas, RawQuotas};
use crate::session::{DEFAULT_IDLE, DEFAULT_MAX_LIVE, SessionSettings};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod layer;
mod show;

/// The configuration used when there is no `airlock.toml`: the bundled tools
/// with safe defaults and no grants.
pub const BUILTIN_CONFIG: &str = include_str!("builtin.toml");

/// A configuration error: which file, which key, what is accepted.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ConfigError {
    /// The config file (or `<built-in>`).
    pub file: String,
    /// What is wrong and what would be accepted.
    pub message: String,
}

/// Validated operator configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it came from (`None` for the built-in configuration).
    pub file: Option<PathBuf>,
    /// Directories whose `*.wasm` files are all loaded.
    pub tool_dirs: Vec<PathBuf>,
    /// Engine-wide settings.
    pub engine: EngineSettings,
    /// Limits of tools that do not override them.
    pub defaults: Limits,
    /// Per-tool settings, by tool name.
    pub tools: BTreeMap<String, ToolConfig>,
    /// Authorization policy files.
    pub policy: PolicyFiles,
    /// Audit log settings; `None` keeps no log.
    pub audit: Option<AuditSettings>,
    /// MCP HTTP transport settings.
    pub http: HttpSettings,
    /// The merged configuration table and where each of its values came
    /// from (for [`Config::describe`]).
    layers: layer::Layered,
    /// Per-principal quotas (`[quotas]`).
    pub quotas: std::sync::Arc<Quotas>,
}

/// Settings of one configured tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolConfig {
    /// Explicit component file; otherwise the tool is found in `tool_dirs`.
    pub component: Option<PathBuf>,
    /// Host-side settings.
    pub settings: ToolSettings,
}

/// Cedar policy and entity files named in the config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyFiles {
    /// Cedar policies; `None` uses the default policy (allow tools without
    /// side effects, ask for the others).
    pub policies: Option<PathBuf>,
    /// Cedar entities (JSON): users, roles, what they own.
    pub entities: Option<PathBuf>,
}

/// A bearer token accepted by the MCP HTTP transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BearerToken {
    /// The secret value.
    pub token: String,
    /// The principal a request with this token acts as.
    pub principal: String,
    /// The file the token was read from (`token_file`), which
    /// `serve --watch` watches.
    pub file: Option<PathBuf>,
}

/// MCP streamable-HTTP settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpSettings {
    /// Accepted bearer tokens; empty means no authentication (loopback only).
    pub tokens: Vec<BearerToken>,
    /// Extra `Origin` values accepted besides loopback origins.
    pub allowed_origins: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    /// Consumed by the layering (`config/layer.rs`); read here only so that
    /// a file that sets it passes `deny_unknown_fields`.
    #[serde(default)]
    #[allow(dead_code)]
    builtin_settings: Option<bool>,
    #[serde(default)]
    tool_dirs: Vec<PathBuf>,
    #[serde(default)]
    engine: RawEngine,
    #[serde(default)]
    defaults: RawLimits,
    #[serde(default)]
    tools: BTreeMap<String, RawTool>,
    #[serde(default)]
    policy: RawPolicy,
    audit: Option<RawAudit>,
    #[serde(default)]
    http: RawHttp,
    #[serde(default)]
    quotas: RawQuotas,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawEngine {
    cache: Option<bool>,
    cache_dir: Option<PathBuf>,
    wasm_stack_kib: Option<usize>,
    max_live_instances: Option<u32>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    timeout_ms: Option<u64>,
    fuel: Option<u64>,
    memory_mib: Option<usize>,
    table_elements: Option<usize>,
    instances: Option<usize>,
    max_output_bytes: Option<usize>,
    max_stdio_bytes: Option<usize>,
    host_memory_mib: Option<usize>,
    max_open_files: Option<usize>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTool {
    component: Option<PathBuf>,
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
}

/// `[tools.NAME.sessions]`: present means sessions are on for the tool.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSessions {
    #[serde(default = "default_true")]
    enabled: bool,
    max_live: Option<usize>,
    idle_secs: Option<u64>,
    memory_mib: Option<usize>,
}

fn default_true() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDir {
    host: PathBuf,
    guest: String,
    #[serde(default = "default_access")]
    access: String,
}

fn default_access() -> String {
    "ro".into()
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    policies: Option<PathBuf>,
    entities: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAudit {
    file: PathBuf,
    durability: Option<String>,
    #[serde(default)]
    record_arguments: bool,
    #[serde(default)]
    redact_keys: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawHttp {
    #[serde(default)]
    tokens: Vec<RawToken>,
    #[serde(default)]
    allowed_origins: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToken {
    token: Option<String>,
    token_env: Option<String>,
    token_file: Option<PathBuf>,
    principal: String,
}

impl Config {
    /// Read and validate a config file over the built-in settings of the
    /// bundled tools: the file overrides them key by key, unless its top
    /// level says `builtin_settings = false`. Relative paths in it are
    /// relative to the file's directory.
    ///
    /// # Errors
    ///
    /// The file cannot be read, has unknown keys or impossible values.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|err| ConfigError { file: path.display().to_string(), message: format!("cannot read: {err}") })?;
        let base = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let mut config = Self::layered(&text, &path.display().to_string(), base)?;
        config.file = Some(path.to_owned());
        Ok(config)
    }

    /// Config text over the built-in settings of the bundled tools, as
    /// [`Config::from_file`] reads a file; `file` names it in errors, `base`
    /// resolves paths.
    ///
    /// # Errors
    ///
    /// Unknown keys, wrong types, impossible values.
    pub fn layered(text: &str, file: &str, base: &Path) -> Result<Self, ConfigError> {
        let error = |message: String| ConfigError { file: file.to_owned(), message };
        // The text alone first, so that its errors point at its own lines.
        let alone = Self::parse(text, file, base)?;
        let table: toml::Table = toml::from_str(text).map_err(|err| error(err.to_string().trim_end().to_owned()))?;
        if !layer::wants_builtin(&table).map_err(error)? {
            return Ok(Config { layers: layer::layer(None, table, file), ..alone });
        }
        let builtin: toml::Table = toml::from_str(BUILTIN_CONFIG)
            .map_err(|err| ConfigError { file: "<built-in>".into(), message: err.to_string() })?;
        let layers = layer::layer(Some(&builtin), table, file);
        let raw: RawConfig = layers.table.clone().try_into().map_err(|err: toml::de::Error| {
            error(format!("over the built-in settings: {}", err.to_string().trim_end()))
        })?;
        let mut config = Self::from_raw(raw, file, base)?;
        config.layers = layers;
        Ok(config)
    }

    /// The built-in configuration: the bundled tools in `tools_dir` with
    /// safe defaults and no grants.
    pub fn builtin(tools_dir: &Path) -> Self {
        match Self::parse(BUILTIN_CONFIG, "<built-in>", Path::new(".")) {
            Ok(mut config) => {
                config.tool_dirs = vec![tools_dir.to_owned()];
                let table: toml::Table = toml::from_str(BUILTIN_CONFIG).unwrap_or_default();
                config.layers = layer::layer(Some(&table), toml::Table::new(), "<built-in>");
                config
            }
            // The built-in text is tested below; an error here is a bug in
            // this crate, not something a user can cause.
            Err(err) => unreachable!("built-in config is invalid: {err}"),
        }
    }

    /// Parse config text alone, with no built-in base (every tool it does
    /// not configure gets the plain defaults); `file` names it in errors,
    /// `base` resolves paths.
    ///
    /// # Errors
    ///
    /// Unknown keys, wrong types, impossible values.
    pub fn parse(text: &str, file: &str, base: &Path) -> Result<Self, ConfigError> {
        let raw: RawConfig = toml::from_str(text)
            .map_err(|err| ConfigError { file: file.to_owned(), message: err.to_string().trim_end().to_owned() })?;
        let mut config = Self::from_raw(raw, file, base)?;
        if let Ok(table) = toml::from_str::<toml::Table>(text) {
            config.layers = layer::layer(None, table, file);
        }
        Ok(config)
    }

    /// Validate raw config values; `file` names them in errors, `base`
    /// resolves paths.
    fn from_raw(raw: RawConfig, file: &str, base: &Path) -> Result<Self, ConfigError> {
        let error = |message: String| ConfigError { file: file.to_owned(), message };
        let resolve = |p: &Path| if p.is_absolute() { p.to_owned() } else { base.join(p) };

        let defaults = apply_limits(Limits::default(), &raw.defaults).map_err(|m| error(format!("[defaults] {m}")))?;
        let mut tools = BTreeMap::new();
        for (name, tool) in raw.tools {
            let ctx = format!("[tools.{name}]");
            check_name(&name).map_err(|m| error(format!("{ctx} {m}")))?;
            let limits = apply_limits(defaults, &tool.limits).map_err(|m| error(format!("{ctx} {m}")))?;
            let mut grants = tool_grants(&tool, &resolve).map_err(|m| error(format!("{ctx} {m}")))?;
            // Granted directories stay open for the whole call and count
            // against the open-file cap; leave room to open something.
            if grants.dirs.len() >= limits.max_open_files {
                return Err(error(format!(
                    "{ctx} max_open_files = {} leaves no room to open a file next to the {} granted directories: \
                     accepted {}..={}",
                    limits.max_open_files,
                    grants.dirs.len(),
                    grants.dirs.len() + 1,
                    crate::limits::MAX_OPEN_FILES
                )));
            }
            if let Some(network) = tool.network {
                let grant = NetworkGrant::from_raw(network, &resolve).map_err(|m| error(format!("{ctx} {m}")))?;
                grants.network = Some(std::sync::Arc::new(grant));
            }
            if let Some(pin) = &tool.sha256
                && (pin.len() != 64 || !pin.bytes().all(|b| b.is_ascii_hexdigit()))
            {
                return Err(error(format!("{ctx} sha256 = {pin:?} is not a sha256: expected 64 hex digits")));
            }
            let sessions = tool_sessions(&limits, tool.sessions.as_ref()).map_err(|m| error(format!("{ctx} {m}")))?;
            let settings = ToolSettings {
                limits,
                grants,
                sessions,
                concurrency_safe: tool.concurrency_safe,
                side_effect: tool.side_effect.unwrap_or(true),
                defer_loading: tool.defer_loading,
                sha256: tool.sha256.map(|s| s.to_ascii_lowercase()),
            };
            tools.insert(name, ToolConfig { component: tool.component.as_deref().map(resolve), settings });
        }

        let engine_defaults = EngineSettings::default();
        let wasm_stack_bytes = match raw.engine.wasm_stack_kib {
            Some(kib) if !(64..=16 * 1024).contains(&kib) => {
                return Err(error(format!("[engine] wasm_stack_kib = {kib} is out of range: accepted 64..=16384")));
            }
            Some(kib) => kib << 10,
            None => engine_defaults.wasm_stack_bytes,
        };
        let max_live_instances = match raw.engine.max_live_instances {
            Some(n) if !(1..=10_000).contains(&n) => {
                return Err(error(format!("[engine] max_live_instances = {n} is out of range: accepted 1..=10000")));
            }
            Some(n) => n,
            None => engine_defaults.max_live_instances,
        };
        let cache_dir = match raw.engine.cache {
            Some(false) => None,
            _ => raw.engine.cache_dir.as_deref().map(resolve).or_else(default_cache_dir),
        };
        let engine = EngineSettings { wasm_stack_bytes, cache_dir, max_live_instances };
        // Every live session holds an instance from the pool; calls in flight
        // need the rest.
        let session_slots: usize = tools.values().filter_map(|t| t.settings.sessions).map(|s| s.max_live).sum();
        if session_slots >= max_live_instances as usize {
            return Err(error(format!(
                "the tools' [tools.NAME.sessions] max_live add up to {session_slots}, which leaves no room for calls \
                 in [engine] max_live_instances = {max_live_instances}: lower max_live or raise max_live_instances"
            )));
        }

        let audit = match raw.audit {
            None => None,
            Some(audit) => {
                let durability = match audit.durability.as_deref() {
                    None | Some("flush") => Durability::Flush,
                    Some("fsync") => Durability::Fsync,
                    Some(other) => {
                        return Err(error(format!(
                            "[audit] durability = {other:?} is not accepted: use \"flush\" or \"fsync\""
                        )));
                    }
                };
                Some(AuditSettings {
                    file: resolve(&audit.file),
                    durability,
                    record_arguments: audit.record_arguments,
                    redact_keys: audit.redact_keys.iter().map(|k| k.to_ascii_lowercase()).collect(),
                })
            }
        };

        let mut tokens = Vec::new();
        for (i, token) in raw.http.tokens.into_iter().enumerate() {
            let ctx = format!("[[http.tokens]] #{}", i + 1);
            let (value, file) = match (token.token, token.token_env, token.token_file) {
                (Some(value), None, None) => (value, None),
                (None, Some(var), None) => (
                    std::env::var(&var).map_err(|_| {
                        error(format!("{ctx} token_env = {var:?}: that environment variable is not set"))
                    })?,
                    None,
                ),
                (None, None, Some(file)) => {
                    let path = resolve(&file);
                    let text = std::fs::read_to_string(&path).map_err(|err| {
                        error(format!("{ctx} token_file = {:?} cannot be read: {err}", path.display()))
                    })?;
                    // One token per file; the line break an editor adds is not part of it.
                    (text.trim_end_matches(['\r', '\n']).to_owned(), Some(path))
                }
                _ => return Err(error(format!("{ctx} needs exactly one of `token`, `token_env` or `token_file`"))),
            };
            if value.len() < 16 {
                return Err(error(format!(
                    "{ctx} the token is {} characters; use at least 16 random characters",
                    value.len()
                )));
            }
            tokens.push(BearerToken { token: value, principal: token.principal, file });
        }

        let quotas = Quotas::from_raw(raw.quotas).map_err(error)?;

        Ok(Config {
            file: None,
            tool_dirs: raw.tool_dirs.iter().map(|p| resolve(p)).collect(),
            engine,
            defaults,
            tools,
            policy: PolicyFiles {
                policies: raw.policy.policies.as_deref().map(resolve),
                entities: raw.policy.entities.as_deref().map(resolve),
            },
            audit,
            http: HttpSettings { tokens, allowed_origins: raw.http.allowed_origins },
            layers: layer::Layered::default(),
            quotas: std::sync::Arc::new(quotas),
        })
    }

    /// Settings for a tool: its `[tools.NAME]` section, or the defaults with
    /// `side_effect = true` (an unknown tool asks before it runs).
    pub fn settings_for(&self, name: &str) -> ToolSettings {
        match self.tools.get(name) {
            Some(tool) => tool.settings.clone(),
            None => ToolSettings { limits: self.defaults, side_effect: true, ..ToolSettings::default() },
        }
    }
}

/// The compiled-component cache used when the config names none:
/// `$AIRLOCK_CACHE_DIR`, else `$XDG_CACHE_HOME/airlock`, else
/// `$HOME/.cache/airlock` — directories only the user running Airlock can
/// write.
fn default_cache_dir() -> Option<PathBuf> {
    let non_empty = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from);
    non_empty("AIRLOCK_CACHE_DIR")
        .or_else(|| non_empty("XDG_CACHE_HOME").map(|d| d.join("airlock")))
        .or_else(|| non_empty("HOME").map(|d| d.join(".cache/airlock")))
}

fn apply_limits(mut limits: Limits, raw: &RawLimits) -> Result<Limits, String> {
    // A fuel budget nobody set follows the deadline (see
    // `FUEL_PER_DEADLINE_SECOND`): the deadline binds first on any CPU. One
    // set explicitly, here or in `[defaults]`, is kept as it is.
    let fuel_follows_deadline = limits.fuel == Limits::fuel_for(limits.timeout);
    if let Some(ms) = raw.timeout_ms {
        limits.timeout = Duration::from_millis(ms);
    }
    if let Some(fuel) = raw.fuel {
        limits.fuel = fuel;
    } else if fuel_follows_deadline {
        limits.fuel = Limits::fuel_for(limits.timeout);
    }
    if let Some(mib) = raw.memory_mib {
        limits.memory_bytes = mib.saturating_mul(1 << 20);
    }
    if let Some(n) = raw.table_elements {
        limits.table_elements = n;
    }
    if let Some(n) = raw.instances {
        limits.instances = n;
    }
    if let Some(n) = raw.max_output_bytes {
        limits.max_output_bytes = n;
    }
    if let Some(n) = raw.max_stdio_bytes {
        limits.max_stdio_bytes = n;
    }
    if let Some(mib) = raw.host_memory_mib {
        limits.host_memory_bytes = mib.saturating_mul(1 << 20);
    }
    if let Some(n) = raw.max_open_files {
        limits.max_open_files = n;
    }
    limits.check()?;
    Ok(limits)
}

/// The session settings of a tool: `None` unless its `[tools.NAME.sessions]`
/// table is present (and not `enabled = false`). The memory cap defaults to
/// the tool's own.
fn tool_sessions(limits: &Limits, raw: Option<&RawSessions>) -> Result<Option<SessionSettings>, String> {
    let Some(raw) = raw.filter(|raw| raw.enabled) else { return Ok(None) };
    let settings = SessionSettings {
        max_live: raw.max_live.unwrap_or(DEFAULT_MAX_LIVE),
        idle: raw.idle_secs.map_or(DEFAULT_IDLE, Duration::from_secs),
        memory_bytes: raw.memory_mib.map_or(limits.memory_bytes, |mib| mib.saturating_mul(1 << 20)),
    };
    settings.check().map_err(|m| format!("sessions: {m}"))?;
    Ok(Some(settings))
}

fn tool_grants(tool: &RawTool, resolve: &dyn Fn(&Path) -> PathBuf) -> Result<Grants, String> {
    let mut grants = Grants::default();
    for dir in &tool.dirs {
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
    for (name, value) in &tool.env {
        grants.env.push(EnvGrant { name: name.clone(), value: value.clone() });
    }
    for name in &tool.env_from_host {
        let value =
            std::env::var(name).map_err(|_| format!("env_from_host: {name:?} is not set in the host environment"))?;
        grants.env.push(EnvGrant { name: name.clone(), value });
    }
    Ok(grants)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, "airlock.toml", Path::new(".")).map_err(|e| e.to_string())
    }

    fn check_err(text: &str, expect: &[&str]) {
        let err = parse(text).err().unwrap_or_else(|| panic!("accepted: {text}"));
        for needle in expect {
            assert!(err.contains(needle), "{err:?} should contain {needle:?}");
        }
    }

    #[test]
    fn builtin_config_is_valid() {
        let config = Config::builtin(Path::new("/guests"));
        assert_eq!(config.tool_dirs, vec![PathBuf::from("/guests")]);
        assert!(!config.settings_for("echo").side_effect);
        assert!(config.settings_for("write_file").side_effect);
        assert!(config.settings_for("echo").grants.is_empty(), "built-in config grants nothing");
        assert!(config.settings_for("echo").sessions.is_none(), "only the interpreters keep sessions");
        assert!(config.settings_for("run_python").sessions.is_some());
        assert!(config.settings_for("run_js").sessions.is_some());
    }

    #[test]
    fn empty_config_is_defaults() {
        let config = parse("").unwrap();
        assert_eq!(config.defaults, Limits::default());
        let unknown = config.settings_for("anything");
        assert!(unknown.side_effect, "unconfigured tools ask");
        assert!(!unknown.concurrency_safe, "unconfigured tools run exclusively");
        assert!(unknown.grants.is_empty());
    }

    #[test]
    fn per_tool_overrides_defaults() {
        let config = parse(
            "[defaults]\ntimeout_ms = 500\n[tools.echo]\nfuel = 1000\nside_effect = false\nconcurrency_safe = true\n",
        )
        .unwrap();
        let echo = config.settings_for("echo");
        assert_eq!(echo.limits.timeout, Duration::from_millis(500));
        assert_eq!(echo.limits.fuel, 1000);
        assert!(echo.concurrency_safe && !echo.side_effect);
        let config = parse("[tools.echo]\nhost_memory_mib = 16\nmax_open_files = 8\n").unwrap();
        let echo = config.settings_for("echo").limits;
        assert_eq!((echo.host_memory_bytes, echo.max_open_files), (16 << 20, 8));
    }

    #[test]
    fn unset_fuel_follows_the_deadline_and_set_fuel_is_kept() {
        let config = parse(
            "[defaults]\ntimeout_ms = 500\n[tools.a]\ntimeout_ms = 2000\n[tools.b]\nfuel = 7\ntimeout_ms = 2000\n",
        )
        .unwrap();
        assert_eq!(config.defaults.fuel, Limits::fuel_for(Duration::from_millis(500)));
        assert_eq!(config.settings_for("a").limits.fuel, Limits::fuel_for(Duration::from_secs(2)));
        assert_eq!(config.settings_for("b").limits.fuel, 7);
        let config = parse("[defaults]\nfuel = 5\n[tools.a]\ntimeout_ms = 2000\n").unwrap();
        assert_eq!(config.settings_for("a").limits.fuel, 5, "an explicit default budget is inherited");
    }

    #[test]
    fn errors_name_file_key_and_accepted_values() {
        check_err("bogus = 1", &["airlock.toml", "bogus"]);
        check_err("[tools.echo]\ntimeout = 5", &["airlock.toml", "timeout"]);
        check_err("[defaults]\nmemory_mib = 999999", &["[defaults]", "memory_bytes", "accepted"]);
        check_err("[tools.echo]\ntimeout_ms = 0", &["[tools.echo]", "timeout_ms", "accepted"]);
        check_err("[tools.\"bad name\"]", &["bad name", "^[A-Za-z0-9_-]"]);
        check_err("[tools.echo]\nsha256 = \"abc\"", &["sha256", "64 hex"]);
        check_err(
            "[tools.echo]\ndirs = [{ host = \".\", guest = \"/w\", access = \"rwx\" }]",
            &["access", "\"ro\" or \"rw\""],
        );
        check_err("[tools.echo]\ndirs = [{ host = \".\", guest = \"w\" }]", &["guest", "absolute"]);
        check_err("[tools.echo]\ndirs = [{ host = \"/no/such/dir\", guest = \"/w\" }]", &["/no/such/dir"]);
        check_err("[tools.echo]\ndirs = [{ host = \"/\", guest = \"/w\" }]", &["root directory"]);
        check_err("[tools.echo]\nenv_from_host = [\"AIRLOCK_SURELY_UNSET_VAR\"]", &["AIRLOCK_SURELY_UNSET_VAR"]);
        check_err("[audit]\nfile = \"a.jsonl\"\ndurability = \"maybe\"", &["durability", "fsync"]);
        check_err("[engine]\nwasm_stack_kib = 1", &["wasm_stack_kib", "accepted"]);
        check_err("[[http.tokens]]\ntoken = \"short\"\nprincipal = \"a\"", &["at least 16"]);
        check_err("[[http.tokens]]\nprincipal = \"a\"", &["exactly one of"]);
        check_err(
            "[[http.tokens]]\ntoken_file = \"/no/such/token\"\nprincipal = \"a\"",
            &["token_file", "/no/such/token"],
        );
        check_err("[tools.echo.sessions]\nmax_live = 0", &["[tools.echo]", "sessions: max_live = 0", "accepted 1..="]);
        check_err("[tools.echo.sessions]\nidle_secs = 0", &["[tools.echo]", "idle_secs", "accepted"]);
        check_err("[tools.echo.sessions]\nmemory_mib = 0", &["memory_mib", "accepted"]);
        check_err("[tools.echo.sessions]\nttl = 5", &["ttl"]);
        check_err("[tools.echo]\nhost_memory_mib = 0", &["[tools.echo]", "host_memory_mib = 0", "accepted 4..=4096"]);
        check_err("[tools.echo]\nmax_open_files = 0", &["[tools.echo]", "max_open_files = 0", "accepted 1..=1024"]);
        check_err(
            "[tools.echo]\nmax_open_files = 1\ndirs = [{ host = \".\", guest = \"/w\" }]",
            &["max_open_files = 1", "granted directories", "accepted 2..="],
        );
        check_err("[quotas]\ncalls_in_flight = 0", &["airlock.toml", "[quotas] calls_in_flight = 0", "accepted 1..="]);
        check_err("[quotas.principals.alice]\nhttp_sessions = 0", &["[quotas.principals.alice] http_sessions"]);
        check_err("[quotas]\nburst = 1", &["burst"]);
        check_err(
            "[engine]\nmax_live_instances = 8\n[tools.echo.sessions]\nmax_live = 8",
            &["max_live", "max_live_instances"],
        );
    }

    #[test]
    fn sessions_are_off_unless_configured() {
        let config = parse("[tools.a]\nmemory_mib = 64\n[tools.a.sessions]\nidle_secs = 9\n[tools.b]\n[tools.c.sessions]\nenabled = false\n").unwrap();
        let a = config.settings_for("a").sessions.unwrap();
        assert_eq!((a.max_live, a.idle, a.memory_bytes), (DEFAULT_MAX_LIVE, Duration::from_secs(9), 64 << 20));
        assert_eq!(config.settings_for("b").sessions, None);
        assert_eq!(config.settings_for("c").sessions, None);
        assert_eq!(config.settings_for("unknown").sessions, None);
    }

    #[test]
    fn grants_are_parsed_and_canonicalized() {
        let dir = std::env::temp_dir();
        let text = format!(
            "[tools.rf]\ndirs = [{{ host = {:?}, guest = \"/data\" }}]\nenv = {{ LANG = \"C\" }}\n",
            dir.display()
        );
        let config = parse(&text).unwrap();
        let grants = config.settings_for("rf").grants;
        assert_eq!(grants.dirs[0].access, DirAccess::ReadOnly, "directories are read-only unless rw");
        assert_eq!(grants.dirs[0].host_path, dir.canonicalize().unwrap());
        assert_eq!(grants.env, vec![EnvGrant { name: "LANG".into(), value: "C".into() }]);
    }
}

#[cfg(test)]
mod example_tests {
    use super::*;

    #[test]
    fn the_commented_example_config_is_valid() {
        let base = std::env::temp_dir().join(format!("airlock-example-{}", std::process::id()));
        std::fs::create_dir_all(base.join("workspace")).unwrap();
        let text = include_str!("../../airlock.example.toml");
        let config = Config::parse(text, "airlock.example.toml", &base).unwrap();
        assert!(config.settings_for("write_file").side_effect);
        assert!(config.audit.is_some());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
