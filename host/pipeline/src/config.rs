//! The operator's `airlock.toml`: read, layered over the built-in settings,
//! and assembled into the validated [`Config`] the rest of the host sees.
//!
//! Each section is declared once and parsed and checked by the module that
//! enforces it, from a raw serde type that refuses unknown keys:
//! `[defaults]` by [`airlock_settings::limits`], `[tools.NAME]` by
//! [`crate::tool_settings`] (the pipeline's keys; the runtime's go to
//! [`airlock_runtime::tool_settings`], which hands its grants to
//! [`airlock_runtime::grants`] and [`airlock_runtime::network`] and checks
//! its sessions itself), `[engine]` by [`airlock_settings::engine`],
//! `[policy]` by [`airlock_policy::authorize`], `[audit]` by
//! [`airlock_policy::audit`], `[http]` by [`airlock_settings::http`],
//! `[quotas]` by [`crate::quota`], `[fleet]` by [`crate::fleet`],
//! `[cards]` by [`airlock_policy::card`], `[approvals]` by
//! [`crate::approval`], `[tasks]` by [`crate::tasks`], `[distribution]` by
//! [`airlock_runtime::distribution`], `[metrics]`, `[traces]`, `[serve]` and
//! `[log]` by [`airlock_settings::service`]; the top-level keys here
//! ([`TOP`]). This module reads the file, layers it (`config/layer.rs`),
//! calls each owner, names the file in every error, and checks what spans
//! sections.
//!
//! Every error names the file, the key and what is accepted.

use crate::fleet::{FleetSettings, RawFleet};
use crate::quota::{Quotas, RawQuotas};
use crate::tool_settings::{PipelineSettings, RawTool};
use airlock_policy::audit::{AuditSettings, RawAudit};
use airlock_policy::authorize::RawPolicy;
use airlock_policy::card::{CardSettings, RawCards};
use airlock_policy::principal::principal_fault;
use airlock_runtime::distribution::{DistributionSettings, RawDistribution};
use airlock_runtime::tool_settings::ToolSettings;
use airlock_settings::engine::{EngineSettings, RawEngine};
use airlock_settings::http::RawHttp;
use airlock_settings::key_doc::Value;
use airlock_settings::limits::{DEFAULTS, Limits, RawDefaults};
use airlock_settings::service::{
    LogSettings, MetricsSettings, RawLog, RawMetrics, RawServe, RawTraces, ServeSettings, TraceSettings,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod bundled;
mod keys;
mod layer;
mod show;

pub use bundled::{BundledTools, TOOLS_DIR_ENV};
pub use keys::Restart;

pub use crate::tool_settings::ToolConfig;
pub use airlock_policy::authorize::PolicyFiles;
pub use airlock_settings::http::{BearerToken, HttpCaps, HttpSettings, JwksSource, JwtCaps, JwtSettings};

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
    /// Where the bundled tools were looked for, when `tool_dirs` is theirs
    /// (the built-in configuration, or a file over it that names no
    /// directory or component of its own); `None` otherwise.
    pub bundled: Option<BundledTools>,
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
    /// What the replicas of a fleet share (`[fleet]`); `None` for one
    /// server on its own.
    pub fleet: Option<FleetSettings>,
    /// The merged configuration table and where each of its values came
    /// from (for [`Config::describe`]).
    layers: layer::Layered,
    /// Per-principal quotas (`[quotas]`).
    pub quotas: std::sync::Arc<Quotas>,
    /// Components from OCI registries (`[distribution]`).
    pub distribution: std::sync::Arc<DistributionSettings>,
    /// Where `/metrics` is served (`[metrics]`).
    pub metrics: MetricsSettings,
    /// OpenTelemetry spans over OTLP (`[traces]`); `None` sends none.
    pub traces: Option<TraceSettings>,
    /// Service behaviour of `airlock serve` (`[serve]`).
    pub serve: ServeSettings,
    /// How errors a client causes are logged (`[log]`).
    pub log: LogSettings,
    /// How long confirmation cards and presented results may be
    /// (`[cards]`).
    pub cards: CardSettings,
    /// Whether the tool revisions pinned in the lock file are enforced: a
    /// tool whose revision is not its pin is not loaded. Not a key: `true`
    /// for every config, and set to `false` only by `airlock lock`, which
    /// loads the tools as they are in order to pin them anew. (`[tools.NAME]
    /// pin` is enforced either way.)
    pub lock_pins: bool,
    /// Approvals on Airlock's own page (`[approvals]`).
    pub approvals: crate::approval::ApprovalSettings,
    /// MCP tasks: how long results are kept, and the caps (`[tasks]`).
    pub tasks: crate::tasks::TaskSettings,
}

airlock_settings::section! {
    /// The keys at the top level of `airlock.toml` (every other key is in a
    /// section, declared by the section's owner).
    pub const TOP: Section<Config> = "";
    /// `airlock.toml` as written: the top-level keys and every section.
    struct RawConfig {
        #[serde(default)]
        engine: RawEngine,
        #[serde(default)]
        defaults: RawDefaults,
        #[serde(default)]
        tools: BTreeMap<String, RawTool>,
        #[serde(default)]
        policy: RawPolicy,
        audit: Option<RawAudit>,
        #[serde(default)]
        http: RawHttp,
        #[serde(default)]
        quotas: RawQuotas,
        fleet: Option<RawFleet>,
        #[serde(default)]
        distribution: RawDistribution,
        #[serde(default)]
        metrics: RawMetrics,
        #[serde(default)]
        traces: RawTraces,
        #[serde(default)]
        serve: RawServe,
        #[serde(default)]
        log: RawLog,
        #[serde(default)]
        cards: RawCards,
        #[serde(default)]
        approvals: crate::approval::RawApprovals,
        #[serde(default)]
        tasks: crate::tasks::RawTasks,
    }
    hand {
        /// `false`: start from nothing instead of over the built-in settings of the bundled tools
        builtin_settings: Option<bool>, Reload, accepts "`true` or `false`", unset "`true`",
            show |c: &Config| Some(Value::Bool(c.layers.origins.values().any(|s| *s == layer::Source::BuiltIn))),
            example "true";
        /// directories whose `*.wasm` files are all loaded as tools
        tool_dirs: Option<Vec<PathBuf>>, Reload, accepts "an array of paths",
            unset "the bundled tools, unless a `[tools.NAME]` names a `component`",
            show |c: &Config| Some(Value::List(c.tool_dirs.iter().map(|d| d.display().to_string()).collect())),
            set "[\"target/guests\"]";
    }
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
        if config.keeps_bundled_tools() {
            config.use_bundled(BundledTools::find());
        }
        Ok(config)
    }

    /// Whether the bundled tools stay loaded under this file: it is layered
    /// over the built-in settings and names no `tool_dirs` and no
    /// `component` of its own. A file that names its own components has
    /// chosen its tools (add the bundled directory to `tool_dirs` to keep
    /// them too).
    fn keeps_bundled_tools(&self) -> bool {
        let table = &self.layers.table;
        let layered_over_builtin = self.layers.origins.values().any(|source| *source == layer::Source::BuiltIn);
        layered_over_builtin
            && !table.contains_key("tool_dirs")
            && self.tools.values().all(|t| t.runtime.component.is_none() && t.runtime.oci.is_none())
    }

    /// Load the bundled tools from where `found` says they are.
    fn use_bundled(&mut self, found: BundledTools) {
        self.tool_dirs = found.dir.iter().cloned().collect();
        self.bundled = Some(found);
    }

    /// The built-in configuration over the bundled tools wherever
    /// [`BundledTools::find`] finds them (no directory when none exists).
    pub fn builtin_bundled() -> Self {
        let mut config = Self::builtin(Path::new("."));
        config.use_bundled(BundledTools::find());
        config
    }

    /// What to tell an operator when no tool is loaded: the directories
    /// this configuration looked in and the keys that name them.
    pub fn no_tools_hint(&self) -> String {
        match &self.bundled {
            Some(found) => found.explain(),
            None if self.tool_dirs.is_empty() => {
                let file = self.file.as_ref().map_or_else(|| "<built-in>".to_owned(), |f| f.display().to_string());
                format!(
                    "{file} names no tool directory and no loadable component: set tool_dirs = [\"DIR\"] or \
                     [tools.NAME] component = \"FILE.wasm\""
                )
            }
            None => {
                let dirs: Vec<String> = self.tool_dirs.iter().map(|d| d.display().to_string()).collect();
                format!(
                    "no loadable tool in tool_dirs = [{}]: put .wasm components there or change tool_dirs",
                    dirs.join(", ")
                )
            }
        }
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
        // The text alone is read first, so that its type errors point at
        // its own lines; its values are checked once, in the config they
        // end up in (token and secret files are read once).
        let alone: RawConfig = toml::from_str(text).map_err(|err| error(err.to_string().trim_end().to_owned()))?;
        let table: toml::Table = toml::from_str(text).map_err(|err| error(err.to_string().trim_end().to_owned()))?;
        if !layer::wants_builtin(&table).map_err(error)? {
            let config = Self::from_raw(alone, file, base)?;
            return Ok(Config { layers: layer::layer(None, table, file), ..config });
        }
        drop(alone);
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

    /// Assemble raw config values, each section checked by its owner;
    /// `file` names them in errors, `base` resolves paths.
    fn from_raw(raw: RawConfig, file: &str, base: &Path) -> Result<Self, ConfigError> {
        let error = |message: String| ConfigError { file: file.to_owned(), message };
        let resolve = |p: &Path| if p.is_absolute() { p.to_owned() } else { base.join(p) };

        let defaults =
            Limits::from_raw(Limits::default(), &(&raw.defaults).into(), &DEFAULTS.scope()).map_err(error)?;
        let mut tools = BTreeMap::new();
        for (name, tool) in raw.tools {
            let tool = ToolConfig::from_raw(&name, tool, defaults, &resolve).map_err(error)?;
            tools.insert(name, tool);
        }
        let engine = EngineSettings::from_raw(raw.engine, &resolve).map_err(error)?;
        // Every live session holds an instance from the pool; calls in flight
        // need the rest.
        let session_slots: usize = tools.values().filter_map(|t| t.runtime.settings.sessions).map(|s| s.max_live).sum();
        if session_slots >= engine.max_live_instances as usize {
            return Err(error(format!(
                "the tools' [tools.NAME.sessions] max_live add up to {session_slots}, which leaves no room for calls \
                 in [engine] max_live_instances = {}: lower max_live or raise max_live_instances",
                engine.max_live_instances
            )));
        }
        let audit = raw.audit.map(|audit| AuditSettings::from_raw(audit, &resolve)).transpose().map_err(error)?;
        let http = HttpSettings::from_raw(raw.http, &resolve).map_err(error)?;
        // A token's principal is a name as any other front end's is.
        for (i, token) in http.tokens.iter().enumerate() {
            let cap = "the longest principal";
            if let Some(fault) = principal_fault(&token.principal, airlock_core::call::MAX_PRINCIPAL_LEN, cap) {
                return Err(error(format!("[[http.tokens]] #{} principal {fault}", i + 1)));
            }
        }
        let quotas = Quotas::from_raw(raw.quotas).map_err(error)?;
        let fleet = raw.fleet.map(|f| FleetSettings::from_raw(f, &resolve)).transpose().map_err(error)?;
        let distribution = DistributionSettings::from_raw(raw.distribution, &resolve).map_err(error)?;
        // A tag is a name the registry can move: only where the operator
        // allows it.
        for (name, tool) in &tools {
            if let Some(source) = &tool.runtime.oci
                && !source.tag_allowed(&distribution)
            {
                return Err(error(format!(
                    "[tools.{name}] component = \"{}\" names a tag, and tags are not allowed: pin a digest \
                     (oci://…@sha256:…, printed by `airlock pull`) or set allow_tags = true in [tools.{name}] or \
                     [distribution]",
                    source.reference
                )));
            }
        }
        let metrics = MetricsSettings::from_raw(raw.metrics).map_err(error)?;
        let traces = TraceSettings::from_raw(raw.traces).map_err(error)?;
        let serve = ServeSettings::from_raw(raw.serve).map_err(error)?;
        let log = LogSettings::from_raw(raw.log).map_err(error)?;
        let cards = CardSettings::from_raw(raw.cards).map_err(error)?;
        let approvals = crate::approval::ApprovalSettings::from_raw(raw.approvals, &resolve).map_err(error)?;
        let tasks = crate::tasks::TaskSettings::from_raw(raw.tasks).map_err(error)?;

        Ok(Config {
            file: None,
            tool_dirs: raw.tool_dirs.unwrap_or_default().iter().map(|p| resolve(p)).collect(),
            bundled: None,
            engine,
            defaults,
            tools,
            policy: PolicyFiles::from_raw(raw.policy, &resolve),
            audit,
            http,
            fleet,
            layers: layer::Layered::default(),
            quotas: std::sync::Arc::new(quotas),
            distribution: std::sync::Arc::new(distribution),
            metrics,
            traces,
            serve,
            log,
            cards,
            lock_pins: true,
            approvals,
            tasks,
        })
    }

    /// Where approvals and passkeys are kept: `[approvals] state_dir`, else
    /// the directory of `[audit] file`, else nowhere (approvals live in the
    /// process, and nobody can have a passkey).
    pub fn state_dir(&self) -> Option<PathBuf> {
        self.approvals.state_dir_with(self.audit.as_ref().map(|a| a.file.as_path()))
    }

    /// The runtime's settings of a tool: from its `[tools.NAME]` section,
    /// or the `[defaults]` limits and nothing granted.
    pub fn settings_for(&self, name: &str) -> ToolSettings {
        match self.tools.get(name) {
            Some(tool) => tool.runtime.settings.clone(),
            None => ToolSettings { limits: self.defaults, ..ToolSettings::default() },
        }
    }

    /// The pipeline's settings of a tool: from its `[tools.NAME]` section,
    /// or `side_effect = true` and nothing else (an unknown tool asks
    /// before it runs).
    pub fn pipeline_for(&self, name: &str) -> PipelineSettings {
        match self.tools.get(name) {
            Some(tool) => tool.pipeline.clone(),
            None => PipelineSettings { side_effect: true, ..PipelineSettings::default() },
        }
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Helpers for the config tests of each section's owner.

    use super::*;

    /// `text` read as `airlock.toml` alone, relative paths from `.`.
    pub(crate) fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, "airlock.toml", Path::new(".")).map_err(|e| e.to_string())
    }

    /// `text` is refused with a message containing every one of `expect`.
    pub(crate) fn check_err(text: &str, expect: &[&str]) {
        let err = parse(text).err().unwrap_or_else(|| panic!("accepted: {text}"));
        for needle in expect {
            assert!(err.contains(needle), "{err:?} should contain {needle:?}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{check_err, parse};
    use super::*;

    #[test]
    fn builtin_config_is_valid() {
        let config = Config::builtin(Path::new("/guests"));
        assert_eq!(config.tool_dirs, vec![PathBuf::from("/guests")]);
        assert!(!config.pipeline_for("echo").side_effect);
        assert!(config.pipeline_for("write_file").side_effect);
        assert!(config.settings_for("echo").grants.is_empty(), "built-in config grants nothing");
        assert!(config.settings_for("echo").sessions.is_none(), "only the interpreters keep sessions");
        assert!(config.settings_for("run_python").sessions.is_some());
        assert!(config.settings_for("run_js").sessions.is_some());
    }

    #[test]
    fn empty_config_is_defaults() {
        let config = parse("").unwrap();
        assert_eq!(config.defaults, Limits::default());
        let unknown = config.pipeline_for("anything");
        assert!(unknown.side_effect, "unconfigured tools ask");
        assert!(!unknown.concurrency_safe, "unconfigured tools run exclusively");
        assert!(config.settings_for("anything").grants.is_empty());
    }

    #[test]
    fn errors_name_file_key_and_accepted_values() {
        check_err("bogus = 1", &["airlock.toml", "bogus", "tool_dirs"]);
        check_err("[policy]\nbogus = 1", &["airlock.toml", "bogus", "entities"]);
        check_err(
            "[engine]\nmax_live_instances = 8\n[tools.echo.sessions]\nmax_live = 8",
            &["max_live", "max_live_instances"],
        );
    }

    #[test]
    fn relative_paths_are_relative_to_the_file() {
        let config = Config::parse(
            "tool_dirs = [\"t\"]\n[policy]\npolicies = \"p.cedar\"\n[audit]\nfile = \"/var/a.jsonl\"",
            "airlock.toml",
            Path::new("/etc/airlock"),
        )
        .unwrap();
        assert_eq!(config.tool_dirs, vec![PathBuf::from("/etc/airlock/t")]);
        assert_eq!(config.policy.policies, Some(PathBuf::from("/etc/airlock/p.cedar")));
        assert_eq!(config.audit.map(|a| a.file), Some(PathBuf::from("/var/a.jsonl")));
    }
}

#[cfg(test)]
mod example_tests {
    use super::*;

    #[test]
    fn the_commented_example_config_is_valid() {
        let base = std::env::temp_dir().join(format!("airlock-example-{}", std::process::id()));
        std::fs::create_dir_all(base.join("workspace")).unwrap();
        let text = include_str!("../../../airlock.example.toml");
        let config = Config::parse(text, "airlock.example.toml", &base).unwrap();
        assert!(config.pipeline_for("write_file").side_effect);
        assert!(config.audit.is_some());
        std::fs::remove_dir_all(&base).unwrap();
    }
}
