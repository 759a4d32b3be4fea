//! [`State`]: everything a host runs that is built from the operator's
//! files (the config in force, the registry of tools with their settings,
//! the Cedar policy and entities, the audit log, the quotas, the cap on
//! calls in flight, the HTTP bearer tokens and allowed origins), made by
//! one function ([`State::load`]) at start and at every reload, and swapped
//! whole by [`Host`](crate::Host).
//!
//! A state is immutable once built. A call takes the state in force when it
//! is received (one `Arc`) and uses it until its result is returned: a
//! reload during the call changes nothing for it, and no call sees the
//! policy of one config with the tools or the audit log of another.
//!
//! Trusts the operator's files as far as the config parser, the loader and
//! the policy parser check them: a state is only built when every part of
//! it could be, so a failed reload leaves the old state serving unchanged.
//!
//! What outlives a state is kept by the host, not here: the wasmtime
//! runtime, the scheduler (its cap follows the state in force), the live
//! sessions (kept across a reload for tools that did not change) and the
//! quota tracker of calls in flight. The audit log is carried deliberately:
//! a new state for the same `[audit] file` continues the running log's hash
//! chain ([`AuditLog::reconfigured`]); another file is opened fresh.

use crate::access::Access;
use crate::config::{Config, ConfigError};
use crate::quota::Quotas;
use crate::registry::{LoadProgress, Registry, RegistryError};
use airlock_policy::audit::{AuditError, AuditLog};
use airlock_policy::authorize::{Policy, PolicyError};
use airlock_runtime::engine::Runtime;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

/// Why a host could not start (or reload).
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The config file is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The engine could not be set up.
    #[error("{0:#}")]
    Engine(anyhow::Error),
    /// Some tools could not be loaded.
    #[error("{} tool(s) could not be loaded:\n{}", .0.len(), .0.iter().map(|e| format!("  - {e}")).collect::<Vec<_>>().join("\n"))]
    Load(Vec<RegistryError>),
    /// The policy files are invalid.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// The audit log cannot be opened.
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// A reload changed settings that are fixed while the host runs; each
    /// sentence names the key.
    #[error("{}", .0.join("; "))]
    NeedsRestart(Vec<String>),
    /// A reload would leave a running server unsafe (a non-loopback HTTP
    /// server without bearer tokens).
    #[error("{0}")]
    Refused(String),
}

/// What the host runs, built from one config. Cheap to share
/// ([`Host::state`](crate::Host::state) hands out an `Arc`).
#[derive(Debug)]
pub struct State {
    config: Config,
    registry: Arc<Registry>,
    policy: Arc<Policy>,
    audit: Option<Arc<AuditLog>>,
    access: Arc<Access>,
    max_in_flight: usize,
}

/// The files and directories a state is built from: what `serve --watch`
/// watches.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Sources {
    /// Files read to build the state: the config file, explicit
    /// components, policy and entities files, token files, secret files.
    pub files: BTreeSet<PathBuf>,
    /// Directories whose `*.wasm` files are loaded.
    pub tool_dirs: BTreeSet<PathBuf>,
}

/// What to do with components that fail to load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadErrors {
    /// Any load error fails the build (a reload, a strict start).
    Refuse,
    /// Log them and build without those tools (`allow_load_errors`).
    Log,
}

impl State {
    /// Build the state for `config`: the policy first (cheap, so that a
    /// broken policy fails before any component compiles), then the
    /// registry, then the rest ([`State::build`]). `previous` is the state
    /// in force, if any: its audit log is continued when `[audit] file` is
    /// unchanged, and its tools are reused where nothing about them changed
    /// (so that their sessions live on).
    ///
    /// # Errors
    ///
    /// See [`HostError`]; nothing is changed on error.
    pub(crate) async fn load(
        runtime: &Runtime,
        config: Config,
        previous: Option<&State>,
        progress: &dyn LoadProgress,
        load_errors: LoadErrors,
    ) -> Result<State, HostError> {
        let policy = policy_of(&config)?;
        let (registry, errors) = Registry::load(runtime, &config, progress).await;
        if !errors.is_empty() {
            if load_errors == LoadErrors::Refuse {
                return Err(HostError::Load(errors));
            }
            for error in &errors {
                tracing::error!("{error}");
            }
        }
        let registry = match previous {
            Some(previous) => registry.reusing(&previous.registry),
            None => registry,
        };
        Self::assemble(config, Arc::new(registry), policy, previous)
    }

    /// Build the state for `config` around a registry built separately
    /// (one loaded in the background, or by a library user): the policy,
    /// the audit log (continued from `previous` when its file is
    /// unchanged), the HTTP access rules and the cap on calls in flight.
    ///
    /// # Errors
    ///
    /// The policy or entities are invalid, or the audit log cannot be
    /// opened.
    pub fn build(config: Config, registry: Arc<Registry>, previous: Option<&State>) -> Result<State, HostError> {
        let policy = policy_of(&config)?;
        Self::assemble(config, registry, policy, previous)
    }

    /// The same state with another registry (the config, policy, audit log
    /// and the rest unchanged).
    pub fn with_registry(&self, registry: Arc<Registry>) -> State {
        State {
            config: self.config.clone(),
            registry,
            policy: self.policy.clone(),
            audit: self.audit.clone(),
            access: self.access.clone(),
            max_in_flight: self.max_in_flight,
        }
    }

    /// The last step of every build. The audit log is opened last: it is
    /// the only part with an effect outside the process (a new file), so
    /// nothing after it can fail.
    fn assemble(
        config: Config,
        registry: Arc<Registry>,
        policy: Policy,
        previous: Option<&State>,
    ) -> Result<State, HostError> {
        let access = Arc::new(Access::new(&config.http));
        // Live sessions hold pool instances of their own (the config checks
        // that their max_live leave room); calls in flight get the rest.
        let session_slots: usize = config.tools.values().filter_map(|t| t.settings.sessions).map(|s| s.max_live).sum();
        let max_in_flight = (config.engine.max_live_instances as usize).saturating_sub(session_slots).max(1);
        let audit = match &config.audit {
            None => None,
            Some(settings) => {
                let running = previous.and_then(|p| p.audit.as_deref()).and_then(|log| log.reconfigured(settings));
                match running {
                    Some(log) => Some(Arc::new(log)),
                    None => Some(Arc::new(AuditLog::open(settings.clone())?)),
                }
            }
        };
        Ok(State { config, registry, policy: Arc::new(policy), audit, access, max_in_flight })
    }

    /// The configuration this state was built from: what is in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The tools.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The authorization policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The per-principal quotas (`[quotas]`).
    pub fn quotas(&self) -> &Arc<Quotas> {
        &self.config.quotas
    }

    /// The cap on calls in flight: `[engine] max_live_instances` less the
    /// instances the tools' sessions may hold.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight
    }

    /// The audit log, if kept.
    pub(crate) fn audit(&self) -> Option<&AuditLog> {
        self.audit.as_deref()
    }

    /// The HTTP bearer tokens and allowed origins.
    pub(crate) fn access(&self) -> &Arc<Access> {
        &self.access
    }

    /// The files and directories this state was built from.
    pub fn sources(&self) -> Sources {
        Sources::of(&self.config)
    }
}

impl Sources {
    /// The files and directories a state for `config` is built from.
    pub fn of(config: &Config) -> Sources {
        let mut sources = Sources::default();
        let files = &mut sources.files;
        files.extend(config.file.clone());
        files.extend(config.tools.values().filter_map(|tool| tool.component.clone()));
        files.extend(config.policy.policies.clone());
        files.extend(config.policy.entities.clone());
        files.extend(config.http.tokens.iter().filter_map(|token| token.file.clone()));
        // `airlock pull --update` changes what a tag loads.
        if config.tools.values().any(|tool| tool.oci.is_some()) {
            files.extend(std::iter::once(config.distribution.lock_file.clone()));
        }
        for tool in config.tools.values() {
            if let Some(network) = &tool.settings.grants.network {
                files.extend(network.secrets.iter().filter_map(|secret| secret.file.clone()));
            }
        }
        sources.tool_dirs.extend(config.tool_dirs.iter().cloned());
        sources
    }
}

/// The policy `config` names, or the default one.
fn policy_of(config: &Config) -> Result<Policy, HostError> {
    Ok(match &config.policy.policies {
        Some(path) => Policy::from_files(path, config.policy.entities.as_deref())?,
        None => Policy::default_policy(),
    })
}

/// Why `next` cannot replace `current` without a restart: one sentence per
/// setting fixed at start that differs, naming the key. Empty when the
/// change can be applied.
pub fn needs_restart(current: &Config, next: &Config) -> Vec<String> {
    let (now, new) = (&current.engine, &next.engine);
    let mut changed = Vec::new();
    let mut check = |key: &str, from: String, to: String| {
        if from != to {
            changed.push(format!("{key} changed from {from} to {to}; restart airlock serve to apply it"));
        }
    };
    check("engine.max_live_instances", now.max_live_instances.to_string(), new.max_live_instances.to_string());
    check("engine.wasm_stack_kib", (now.wasm_stack_bytes >> 10).to_string(), (new.wasm_stack_bytes >> 10).to_string());
    let dir = |d: &Option<PathBuf>| d.as_ref().map_or_else(|| "none (cache off)".to_owned(), |d| format!("{d:?}"));
    check("engine.cache_dir", dir(&now.cache_dir), dir(&new.cache_dir));
    check("engine.compile_timeout_secs", now.compile_timeout_secs.to_string(), new.compile_timeout_secs.to_string());
    check("engine.compile_memory_mib", now.compile_memory_mib.to_string(), new.compile_memory_mib.to_string());
    // The connection and body caps, the session table and the table of
    // waiting confirmations are set up when the server starts.
    let (now, new) = (&current.http.caps, &next.http.caps);
    let secs = |d: std::time::Duration| format!("{} s", d.as_secs());
    check("http.header_timeout_secs", secs(now.header_timeout), secs(new.header_timeout));
    check("http.body_timeout_secs", secs(now.body_timeout), secs(new.body_timeout));
    check("http.max_connections", now.max_connections.to_string(), new.max_connections.to_string());
    check(
        "http.max_connections_per_peer",
        now.max_connections_per_peer.to_string(),
        new.max_connections_per_peer.to_string(),
    );
    check(
        "http.max_unauthenticated_connections",
        now.max_unauthenticated_connections.to_string(),
        new.max_unauthenticated_connections.to_string(),
    );
    check("http.unauthenticated_timeout_secs", secs(now.unauthenticated_timeout), secs(new.unauthenticated_timeout));
    check("http.max_body_bytes", now.max_body_bytes.to_string(), new.max_body_bytes.to_string());
    check("http.max_sessions", now.max_sessions.to_string(), new.max_sessions.to_string());
    check(
        "http.max_pending_confirmations",
        now.max_pending_confirmations.to_string(),
        new.max_pending_confirmations.to_string(),
    );
    if current.http.trusted_proxies != next.http.trusted_proxies {
        changed.push("http.trusted_proxies changed; restart airlock serve to apply it".to_owned());
    }
    // The JWT verifier (and its key cache) is built when the HTTP server
    // starts.
    if current.http.jwt != next.http.jwt {
        changed.push("http.jwt changed; restart airlock serve to apply it".to_owned());
    }
    // The signer of requestStates and its Redis connection, and the audit
    // shipper, are started with the server.
    if current.fleet != next.fleet {
        changed.push("fleet changed; restart airlock serve to apply it".to_owned());
    }
    let postgres = |c: &Config| c.audit.as_ref().and_then(|a| a.postgres.clone());
    if postgres(current) != postgres(next) {
        changed.push("audit.postgres changed; restart airlock serve to apply it".to_owned());
    }
    // The shipper follows the file it was started with: a new `[audit] file`
    // would be written but never shipped.
    let shipped_file = |c: &Config| c.audit.as_ref().filter(|a| a.postgres.is_some()).map(|a| a.file.clone());
    if let Some(shipped) = shipped_file(current) {
        let next_file = next.audit.as_ref().map(|a| a.file.clone());
        if next_file.as_ref().is_some_and(|file| *file != shipped) {
            changed.push(format!(
                "audit.file changed from {shipped:?} while [audit.postgres] ships it; restart airlock serve to apply it"
            ));
        }
    }
    // The metrics registry, its listener and the span exporter are built
    // when the host starts.
    if current.metrics != next.metrics {
        changed.push("[metrics] changed; restart airlock serve to apply it".to_owned());
    }
    if current.traces != next.traces {
        changed.push("[traces] changed; restart airlock serve to apply it".to_owned());
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(text: &str) -> Config {
        Config::parse(text, "airlock.toml", Path::new("/etc/airlock")).expect("valid config")
    }

    #[test]
    fn an_engine_change_is_refused_naming_the_key() {
        let current = parse("[engine]\nmax_live_instances = 100\ncache_dir = \"/c\"\n");
        let next = parse("[engine]\nmax_live_instances = 50\ncache_dir = \"/c\"\n");
        assert_eq!(
            needs_restart(&current, &next),
            vec!["engine.max_live_instances changed from 100 to 50; restart airlock serve to apply it".to_owned()]
        );
        let next =
            parse("[engine]\nmax_live_instances = 100\ncache_dir = \"/c\"\nwasm_stack_kib = 64\ncache = false\n");
        let refused = needs_restart(&current, &next).join("\n");
        for needle in ["engine.wasm_stack_kib changed from", "to 64;", "engine.cache_dir changed", "cache off"] {
            assert!(refused.contains(needle), "{refused:?} should contain {needle:?}");
        }
    }

    #[test]
    fn an_http_cap_change_is_refused_naming_the_key() {
        let current = parse("[http]\nmax_connections = 100\n");
        let next = parse("[http]\nmax_connections = 50\nheader_timeout_secs = 3\n");
        assert_eq!(
            needs_restart(&current, &next),
            vec![
                "http.header_timeout_secs changed from 10 s to 3 s; restart airlock serve to apply it".to_owned(),
                "http.max_connections changed from 100 to 50; restart airlock serve to apply it".to_owned(),
            ]
        );
    }

    #[test]
    fn other_changes_need_no_restart() {
        let current = parse("[engine]\nmax_live_instances = 100\n");
        let next = parse(
            "[engine]\nmax_live_instances = 100\n[quotas]\ncalls_in_flight = 3\n[policy]\npolicies = \"p.cedar\"\n\
             [cards]\nmax_card_bytes = 100\n",
        );
        assert!(needs_restart(&current, &next).is_empty());
    }

    #[test]
    fn a_new_audit_file_needs_a_restart_while_it_is_shipped() {
        let audit = |file: &str, postgres: bool| {
            let shipped = "[audit.postgres]\nurl = \"postgresql://a@127.0.0.1/db\"\nreplica = \"r1\"\n";
            parse(&format!("[audit]\nfile = \"{file}\"\n{}", if postgres { shipped } else { "" }))
        };
        let refused = needs_restart(&audit("a.jsonl", true), &audit("b.jsonl", true));
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].contains("audit.file changed") && refused[0].contains("restart"), "{refused:?}");
        assert!(needs_restart(&audit("a.jsonl", true), &audit("a.jsonl", true)).is_empty());
        // Without shipping, the log's file may change on a reload.
        assert!(needs_restart(&audit("a.jsonl", false), &audit("b.jsonl", false)).is_empty());
    }

    #[test]
    fn sources_name_every_file_read() {
        let config = parse(
            r#"
            tool_dirs = ["tools"]
            [policy]
            policies = "policy.cedar"
            entities = "entities.json"
            [tools.echo]
            component = "echo.wasm"
            "#,
        );
        let state = State::build(config, Arc::new(Registry::default()), None);
        // The policy files do not exist here: build the sources from a
        // state with the default policy instead.
        assert!(state.is_err(), "a missing policy file fails the build");
        let mut config = parse("tool_dirs = [\"tools\"]\n[tools.echo]\ncomponent = \"echo.wasm\"\n");
        config.policy.entities = Some("/etc/airlock/entities.json".into());
        config.file = Some("/etc/airlock/airlock.toml".into());
        let state = State::build(config, Arc::new(Registry::default()), None).expect("state");
        let sources = state.sources();
        let files: Vec<_> = sources.files.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            files,
            ["/etc/airlock/airlock.toml", "/etc/airlock/echo.wasm", "/etc/airlock/entities.json"],
            "{files:?}"
        );
        assert_eq!(sources.tool_dirs.iter().collect::<Vec<_>>(), [Path::new("/etc/airlock/tools")]);
    }
}
