//! [`Host`]: the library front door. Load tools from a config, list their
//! model-facing schemas, and run calls through the one pipeline.

use crate::audit::{AuditError, AuditLog};
use crate::authorize::{Policy, PolicyError};
use crate::config::{Config, ConfigError};
use crate::confirm::Confirmer;
use crate::engine::Runtime;
use crate::formats::{Format, encode};
use crate::pipeline::{CallRequest, Pipeline, ToolResult};
use crate::projection::{mcp_extras, project};
use crate::quota::{QuotaTracker, Quotas};
use crate::registry::{self, LoadProgress, Registry, RegistryError};
use crate::schedule::Scheduler;
use crate::session::Sessions;
use crate::startup::{self, Readiness, Startup};
use crate::strict::{self, Provider};
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, RwLock};
use tokio_util::sync::CancellationToken;

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
}

/// Builds a [`Host`].
///
/// ```no_run
/// # async fn demo() -> Result<(), airlock::HostError> {
/// use airlock::{CallRequest, Host};
/// let host = Host::builder().config_file("airlock.toml")?.build().await?;
/// let result = host.call(CallRequest::new("alice", "echo", serde_json::json!({"text": "hi"})), None).await;
/// assert!(!result.is_error);
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct HostBuilder {
    config: Option<Config>,
    progress: Option<Box<dyn LoadProgress>>,
    allow_load_errors: bool,
    background: bool,
}

impl HostBuilder {
    /// Use this configuration.
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some(config);
        self
    }

    /// Read the configuration from a file.
    ///
    /// # Errors
    ///
    /// The file is missing or invalid.
    pub fn config_file(self, path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        Ok(self.config(Config::from_file(path.as_ref())?))
    }

    /// Report progress while components load.
    pub fn progress(mut self, progress: Box<dyn LoadProgress>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Start even if some components fail to load (they are logged and
    /// left out). By default any load error stops the host.
    pub fn allow_load_errors(mut self, allow: bool) -> Self {
        self.allow_load_errors = allow;
        self
    }

    /// Return from [`HostBuilder::build`] before the tools are loaded: the
    /// host starts with none and loads them in the background, installing
    /// each as soon as it is ready (see [`Host::readiness`]). A call for a
    /// tool not loaded yet waits for it until the tool's deadline. A
    /// component that fails to load is logged and left out (as with
    /// [`HostBuilder::allow_load_errors`]); progress is not reported. Used
    /// by `airlock serve`, which must answer clients at once.
    pub fn load_in_background(mut self, background: bool) -> Self {
        self.background = background;
        self
    }

    /// Set up the engine, load the tools, policy and audit log.
    ///
    /// # Errors
    ///
    /// See [`HostError`].
    pub async fn build(self) -> Result<Host, HostError> {
        let config = match self.config {
            Some(config) => config,
            None => Config::parse("", "<empty>", Path::new("."))?,
        };
        let runtime = Runtime::new(&config.engine).map_err(HostError::Engine)?;
        let (registry, startup, background) = if self.background {
            let (planned, errors) = registry::plan(&config);
            let (startup, guard) = Startup::loading(planned.len());
            (Registry::pending(planned.len()), startup, Some((planned, errors, guard)))
        } else {
            let progress: &dyn LoadProgress = match &self.progress {
                Some(p) => p.as_ref(),
                None => &(),
            };
            let (registry, errors) = Registry::load(&runtime, &config, progress).await;
            if !errors.is_empty() {
                if !self.allow_load_errors {
                    return Err(HostError::Load(errors));
                }
                for error in &errors {
                    tracing::error!("{error}");
                }
            }
            let startup = Startup::finished(registry.len());
            (registry, startup, None)
        };
        let policy = match &config.policy.policies {
            Some(path) => Policy::from_files(path, config.policy.entities.as_deref())?,
            None => Policy::default_policy(),
        };
        let audit = match &config.audit {
            Some(settings) => Some(Arc::new(AuditLog::open(settings.clone())?)),
            None => None,
        };
        // Live sessions hold pool instances of their own (the config checks
        // that their max_live leave room); calls in flight get the rest.
        let session_slots: usize = config.tools.values().filter_map(|t| t.settings.sessions).map(|s| s.max_live).sum();
        let scheduler = Scheduler::new((config.engine.max_live_instances as usize).saturating_sub(session_slots));
        let sessions = Arc::new(Sessions::new());
        Sessions::spawn_sweeper(&sessions);
        let pipeline = Pipeline { policy: Arc::new(policy), audit, scheduler, quota: QuotaTracker::new(), sessions };
        let loading = background.map(|background| (background, config.clone()));
        let host = Host {
            inner: Arc::new(Inner {
                runtime,
                config: RwLock::new(config),
                registry: RwLock::new(Arc::new(registry)),
                pipeline,
                startup,
            }),
        };
        if let Some(((planned, errors, guard), config)) = loading {
            startup::spawn(host.clone(), config, planned, errors, guard)
                .map_err(|err| HostError::Engine(anyhow::Error::new(err).context("starting the tool loader")))?;
        }
        Ok(host)
    }
}

struct Inner {
    runtime: Runtime,
    config: RwLock<Config>,
    registry: RwLock<Arc<Registry>>,
    pipeline: Pipeline,
    startup: Startup,
}

/// A running Airlock host. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Host {
    inner: Arc<Inner>,
}

/// What [`Host::strict_report`] says about one tool for one provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrictReport {
    /// The tool.
    pub tool: String,
    /// The provider.
    pub provider: Provider,
    /// Why the tool's schema as it is is not accepted in strict mode.
    pub problems: Vec<String>,
    /// Why even its strict variant is not: empty when the tool has a strict
    /// form (and is marked strict with `--strict`).
    pub no_strict_form: Vec<String>,
}

/// The provider whose strict mode a format uses.
pub fn provider_of(format: Format) -> Option<Provider> {
    match format {
        Format::Anthropic => Some(Provider::Anthropic),
        Format::OpenAi | Format::OpenAiResponses => Some(Provider::OpenAi),
        Format::Mcp => None,
    }
}

impl Host {
    /// Start building a host.
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    /// The tools loaded now.
    pub fn tools(&self) -> Arc<Registry> {
        self.inner.registry.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How far loading the tools has come (with
    /// [`HostBuilder::load_in_background`]; otherwise everything was loaded
    /// before the host was built).
    pub fn readiness(&self) -> Readiness {
        self.inner.startup.readiness()
    }

    /// Wait until every component is loaded or refused.
    pub async fn ready(&self) -> Readiness {
        let mut changes = self.inner.startup.subscribe();
        let _ = changes.wait_for(Readiness::finished).await;
        self.readiness()
    }

    /// Swap in a registry built elsewhere (start-up in the background).
    pub(crate) fn install_registry(&self, registry: Arc<Registry>) {
        *self.inner.registry.write().unwrap_or_else(|e| e.into_inner()) = registry;
    }

    pub(crate) fn startup(&self) -> &Startup {
        &self.inner.startup
    }

    /// The configuration in force.
    pub fn config(&self) -> Config {
        self.inner.config.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The per-principal quotas in force (`[quotas]`; a reload replaces
    /// them).
    pub fn quotas(&self) -> Arc<Quotas> {
        self.inner.config.read().unwrap_or_else(|e| e.into_inner()).quotas.clone()
    }

    /// The model-facing tool list in a provider format. With `strict`, each
    /// schema that has a strict form is replaced by it and marked strict;
    /// a schema without one is emitted as it is, not marked strict
    /// ([`Host::strict_report`] says why).
    pub fn schemas(&self, format: Format, strict_mode: bool) -> Vec<Value> {
        let registry = self.tools();
        registry
            .iter()
            .map(|tool| {
                let mut model = project(tool);
                let mut strict_here = false;
                if let (true, Some(provider)) = (strict_mode, provider_of(format))
                    && let Ok(variant) = strict::strict_variant(provider, &model.parameters)
                {
                    model.parameters = variant;
                    strict_here = true;
                }
                let extras = (format == Format::Mcp).then(|| mcp_extras(tool));
                encode(format, &model, extras.as_ref(), strict_here)
            })
            .collect()
    }

    /// Strict-mode problems of every tool's schema, per provider.
    pub fn strict_report(&self) -> Vec<StrictReport> {
        let registry = self.tools();
        let mut report = Vec::new();
        for tool in registry.iter() {
            let model = project(tool);
            for provider in [Provider::OpenAi, Provider::Anthropic] {
                report.push(StrictReport {
                    tool: model.name.clone(),
                    provider,
                    problems: strict::lint(provider, &model.parameters),
                    no_strict_form: strict::strict_variant(provider, &model.parameters).err().unwrap_or_default(),
                });
            }
        }
        report
    }

    /// Run one call through the pipeline. Never fails: every failure is an
    /// error result. `confirmer` answers "ask" decisions; without one, ask
    /// means declined.
    pub async fn call(&self, request: CallRequest, confirmer: Option<&dyn Confirmer>) -> ToolResult {
        self.call_cancellable(request, confirmer, &CancellationToken::new()).await
    }

    /// [`Host::call`] with a cancellation token that interrupts the running
    /// guest (the result is then `cancelled`).
    pub async fn call_cancellable(
        &self,
        request: CallRequest,
        confirmer: Option<&dyn Confirmer>,
        cancel: &CancellationToken,
    ) -> ToolResult {
        startup::wait_for_tool(self, &request.tool, cancel).await;
        let (registry, quotas) = (self.tools(), self.quotas());
        self.inner.pipeline.call(&registry, &quotas, request, confirmer, cancel).await
    }

    /// Run a batch of calls; results come back in the proposed order.
    pub async fn dispatch(
        &self,
        requests: Vec<CallRequest>,
        confirmer: Option<&dyn Confirmer>,
        cancel: &CancellationToken,
    ) -> Vec<ToolResult> {
        futures::future::join_all(requests.iter().map(|r| startup::wait_for_tool(self, &r.tool, cancel))).await;
        let (registry, quotas) = (self.tools(), self.quotas());
        self.inner.pipeline.dispatch(&registry, &quotas, requests, confirmer, cancel).await
    }

    /// Reload the tools from `config` (or the config file in force, re-read)
    /// and swap them in atomically. On any error the old tools keep serving.
    /// A successful reload drops every session (their state is lost). A
    /// reload during a start-up in the background waits until start-up is
    /// done, then reads the config.
    ///
    /// # Errors
    ///
    /// The config is invalid or a component fails to load.
    pub async fn reload(&self, config: Option<Config>) -> Result<usize, HostError> {
        let _loading = self.inner.startup.lock().await;
        let config = match config {
            Some(config) => config,
            None => {
                let current = self.config();
                match &current.file {
                    Some(path) => Config::from_file(path)?,
                    None => current,
                }
            }
        };
        let (registry, errors) = Registry::load(&self.inner.runtime, &config, &()).await;
        if !errors.is_empty() {
            return Err(HostError::Load(errors));
        }
        let count = registry.len();
        *self.inner.registry.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(registry);
        *self.inner.config.write().unwrap_or_else(|e| e.into_inner()) = config;
        self.inner.pipeline.sessions.clear();
        Ok(count)
    }

    /// Live interpreter sessions, over all tools and principals.
    pub fn live_sessions(&self) -> usize {
        self.inner.pipeline.sessions.len()
    }

    /// Calls of `principal` in flight now: admitted under its quotas and
    /// not yet answered.
    pub fn calls_in_flight(&self, principal: &str) -> usize {
        self.inner.pipeline.quota.in_flight(principal)
    }

    /// The engine runtime (for inspecting components).
    pub fn runtime(&self) -> &Runtime {
        &self.inner.runtime
    }
}

/// Measurement hooks for `make bench`; not part of the supported API.
///
/// # Security
///
/// `execute_only` skips resolve, validate, authorize and audit: it exists
/// so benchmarks can separate the pipeline's own cost from execution. Front
/// ends must use [`Host::call`].
#[doc(hidden)]
pub mod bench {
    use crate::host::Host;
    use crate::sandbox::{self, Execution};
    use tokio_util::sync::CancellationToken;

    /// Run `tool` on `arguments` in a fresh instance, nothing else.
    pub async fn execute_only(host: &Host, tool: &str, arguments: &str) -> Option<Execution> {
        let registry = host.tools();
        let tool = registry.get(tool)?;
        let settings = &tool.settings;
        Some(sandbox::call(&tool.pre, &settings.limits, &settings.grants, arguments, &CancellationToken::new()).await)
    }
}
