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
use crate::config::{Config, ConfigError, Restart};
use crate::quota::Quotas;
use crate::registry::{LoadProgress, Registry, RegistryError};
use airlock_policy::audit::{self, AuditError, AuditLog};
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
    /// A reload changed settings that are fixed while the host runs, each
    /// naming its key (`Config::restarts`).
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    NeedsRestart(Vec<Restart>),
    /// A reload would leave the MCP HTTP server listening on this address,
    /// which is not loopback, without bearer tokens.
    #[error(
        "[http] tokens: the config has no bearer tokens and no [http.jwt], but the MCP HTTP server listens on {0}, \
         which is not a loopback address and is never served without them; keep at least one `[[http.tokens]]` \
         entry or the `[http.jwt]` section, or restart airlock serve on 127.0.0.1"
    )]
    Refused(std::net::SocketAddr),
}

impl HostError {
    /// Whether the host failed to start or reload only because it was
    /// busy: every tool that failed, failed because the memory budget had
    /// no room to compile it in time (calls, sessions and other
    /// compilations held it). The same files can load later; any other
    /// error is one of the files' own and fails again until they change.
    pub fn is_busy(&self) -> bool {
        match self {
            HostError::Load(errors) => {
                !errors.is_empty()
                    && errors.iter().all(|err| matches!(err, RegistryError::Load(load) if load.is_busy()))
            }
            _ => false,
        }
    }
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
        let session_slots: usize =
            config.tools.values().filter_map(|t| t.runtime.settings.sessions).map(|s| s.max_live).sum();
        let max_in_flight = (config.engine.max_live_instances as usize).saturating_sub(session_slots).max(1);
        let audit = match &config.audit {
            None => None,
            Some(settings) => {
                // A process writing a sibling `<file>.<n>` (another one
                // holds the configured file) keeps writing it on a reload.
                let running =
                    previous.and_then(|p| p.audit.as_deref()).and_then(|log| audit::reconfigured_shared(log, settings));
                match running {
                    Some(log) => Some(Arc::new(log)),
                    None => Some(Arc::new(audit::open_shared(settings.clone())?)),
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
    pub fn access(&self) -> &Arc<Access> {
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
        files.extend(config.tools.values().filter_map(|tool| tool.runtime.component.clone()));
        files.extend(config.policy.policies.clone());
        files.extend(config.policy.entities.clone());
        files.extend(config.http.tokens.iter().filter_map(|token| token.file.clone()));
        // `airlock pull --update` changes what a tag loads, and `airlock
        // lock` which tool revisions are served.
        if config.tools.values().any(|tool| tool.runtime.oci.is_some()) || config.distribution.lock_file.is_file() {
            files.extend(std::iter::once(config.distribution.lock_file.clone()));
        }
        for tool in config.tools.values() {
            if let Some(network) = &tool.runtime.settings.grants.network {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(text: &str) -> Config {
        Config::parse(text, "airlock.toml", Path::new("/etc/airlock")).expect("valid config")
    }

    /// The sentences of a reload from `current` to `next`.
    fn restarts(current: &Config, next: &Config) -> Vec<String> {
        current.restarts(next).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn an_engine_change_is_refused_naming_the_key() {
        let current = parse("[engine]\nmax_live_instances = 100\ncache_dir = \"/c\"\n");
        let next = parse("[engine]\nmax_live_instances = 50\ncache_dir = \"/c\"\n");
        assert_eq!(
            restarts(&current, &next),
            vec!["engine.max_live_instances changed from 100 to 50; restart airlock serve to apply it".to_owned()]
        );
        let next =
            parse("[engine]\nmax_live_instances = 100\ncache_dir = \"/c\"\nwasm_stack_kib = 64\ncache = false\n");
        let refused = restarts(&current, &next).join("\n");
        for needle in [
            "engine.wasm_stack_kib changed from",
            "to 64;",
            "engine.cache_dir changed",
            "engine.cache changed from true to false",
        ] {
            assert!(refused.contains(needle), "{refused:?} should contain {needle:?}");
        }
    }

    #[test]
    fn an_http_cap_change_is_refused_naming_the_key() {
        let current = parse("[http]\nmax_connections = 100\n");
        let next = parse("[http]\nmax_connections = 50\nheader_timeout_secs = 3\n");
        assert_eq!(
            restarts(&current, &next),
            vec![
                "http.header_timeout_secs changed from 10 to 3; restart airlock serve to apply it".to_owned(),
                "http.max_connections changed from 100 to 50; restart airlock serve to apply it".to_owned(),
            ]
        );
    }

    #[test]
    fn a_reload_names_each_fixed_key_it_would_change_and_never_shows_a_secret() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("state.key");
        std::fs::write(&key, [7u8; 32]).unwrap();
        let config = |password: &str, extra: &str| {
            parse(&format!(
                "[fleet]\nstate_key_file = {:?}\nredis_url = \"redis://:{password}@127.0.0.1:6379\"\n{extra}",
                key.display()
            ))
        };
        let current = config("hunter2", "");
        assert!(restarts(&current, &config("hunter2", "")).is_empty());
        assert_eq!(
            restarts(&current, &config("swordfish", "")),
            ["fleet.redis_url changed; restart airlock serve to apply it"],
            "a secret is named, never shown"
        );
        std::fs::write(&key, [8u8; 32]).unwrap();
        assert_eq!(
            restarts(&current, &config("hunter2", "")),
            ["fleet.state_key_file changed; restart airlock serve to apply it"],
            "the key file's contents count, not only its path"
        );
        std::fs::write(&key, [7u8; 32]).unwrap();
        let next = config("hunter2", "[metrics]\nmax_principals = 7\n[traces]\nendpoint = \"http://127.0.0.1:4318\"\n");
        let said = restarts(&current, &next);
        for start in [
            "metrics.max_principals changed from ",
            "traces.endpoint changed from not set to \"http://127.0.0.1:4318\"",
        ] {
            assert!(said.iter().any(|sentence| sentence.starts_with(start)), "{said:#?} lacks {start:?}");
        }
        assert!(said.iter().all(|sentence| !sentence.contains("hunter2")), "{said:#?}");
    }

    #[test]
    fn other_changes_need_no_restart() {
        let current = parse("[engine]\nmax_live_instances = 100\n");
        let next = parse(
            "[engine]\nmax_live_instances = 100\n[quotas]\ncalls_in_flight = 3\n[policy]\npolicies = \"p.cedar\"\n\
             [cards]\nmax_card_bytes = 100\n",
        );
        assert!(restarts(&current, &next).is_empty());
    }

    #[test]
    fn a_new_audit_file_needs_a_restart_while_it_is_shipped() {
        let audit = |file: &str, postgres: bool| {
            let shipped = "[audit.postgres]\nurl = \"postgresql://a@127.0.0.1/db\"\nreplica = \"r1\"\n";
            parse(&format!("[audit]\nfile = \"{file}\"\n{}", if postgres { shipped } else { "" }))
        };
        let refused = restarts(&audit("a.jsonl", true), &audit("b.jsonl", true));
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].contains("audit.file changed") && refused[0].contains("restart"), "{refused:?}");
        assert!(restarts(&audit("a.jsonl", true), &audit("a.jsonl", true)).is_empty());
        // Without shipping, the log's file may change on a reload.
        assert!(restarts(&audit("a.jsonl", false), &audit("b.jsonl", false)).is_empty());
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
