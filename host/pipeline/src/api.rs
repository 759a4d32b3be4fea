//! [`Host`]: the library front door. Load tools from a config, list their
//! model-facing schemas, and run calls through the one pipeline.
//!
//! The host keeps one [`State`] in force (everything built from the
//! operator's files) behind a single swap: a call takes it at receipt, a
//! reload builds a whole new one with [`State::load`], the function the
//! start uses, and swaps it in only when every part of it was built. What
//! outlives a state is the host's own: the wasmtime runtime, the scheduler,
//! the live sessions, the quota tracker and the audit shipper.

pub mod startup;

use crate::config::{Config, ConfigError, HttpSettings};
use crate::formats::{Format, encode};
use crate::metrics::{Metrics, Snapshot};
use crate::observe::Telemetry;
use crate::otel::Traces;
use crate::pipeline::Pipeline;
use crate::pipeline::Scheduler;
use crate::projection::{mcp_extras, project};
use crate::quota::{QuotaTracker, Quotas};
use crate::registry::{self, LoadProgress, Registry};
use crate::session::Sessions;
pub use crate::state::HostError;
use crate::state::{LoadErrors, State};
use crate::tool::Tool;
use airlock_core::call::{CallRequest, ToolResult};
use airlock_policy::audit::{RefusedApproval, ToolChange};
use airlock_policy::confirm::Confirmer;
use airlock_runtime::engine::Runtime;
use airlock_runtime::strict::{self, Problem, Provider};
use serde_json::Value;
use startup::{Readiness, Startup};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use tokio_util::sync::CancellationToken;

/// Builds a [`Host`]; the `airlock` crate's documentation opens with an
/// example.
#[derive(Default)]
pub struct HostBuilder {
    config: Option<Config>,
    progress: Option<Box<dyn LoadProgress>>,
    allow_load_errors: bool,
    background: bool,
    compiler: Option<PathBuf>,
}

impl HostBuilder {
    /// Compile components with this `airlock` executable, each in a child
    /// process under `[engine] compile_timeout_secs` and
    /// `compile_memory_mib` (sets [`EngineSettings::compiler`] of the
    /// configuration). Without one, components not in the compile cache
    /// are refused.
    ///
    /// [`EngineSettings::compiler`]: crate::EngineSettings::compiler
    pub fn compiler(mut self, exe: impl Into<PathBuf>) -> Self {
        self.compiler = Some(exe.into());
        self
    }

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
        let mut config = match self.config {
            Some(config) => config,
            None => Config::parse("", "<empty>", Path::new("."))?,
        };
        if let Some(exe) = self.compiler {
            config.engine.compiler = Some(exe);
        }
        let runtime = Runtime::new(&config.engine).map_err(HostError::Engine)?;
        // Approvals outlive reloads; in a fleet they are kept in its Redis.
        let approvals = Arc::new(
            crate::approval::Approvals::new(config.fleet.as_ref(), &config.approvals, config.state_dir())
                .map_err(|why| HostError::Engine(anyhow::anyhow!(why)))?,
        );
        // Tasks outlive reloads too, and share the fleet's Redis likewise.
        let tasks = Arc::new(
            crate::tasks::Tasks::new(config.fleet.as_ref()).map_err(|why| HostError::Engine(anyhow::anyhow!(why)))?,
        );
        crate::client_log::configure(&config.log);
        // Metrics and the span exporter live as long as the host: their
        // settings are fixed at start (`Config::restarts`).
        let metrics =
            Arc::new(Metrics::new(config.metrics.max_principals).with_max_tool_labels(config.metrics.max_tool_labels));
        let traces = match &config.traces {
            Some(settings) => Some(Traces::start(settings, metrics.spans_dropped()).map_err(HostError::Engine)?),
            None => None,
        };
        let (state, startup, background) = if self.background {
            // The state starts with no tools; the loader puts each in force
            // as it is ready (`install_registry`).
            let (planned, errors) = registry::plan(&config);
            let (startup, guard) = Startup::loading(planned.len());
            let state = State::build(config.clone(), Arc::new(Registry::pending(planned.len())), None)?;
            (state, startup, Some((planned, errors, guard, config)))
        } else {
            let progress: &dyn LoadProgress = match &self.progress {
                Some(p) => p.as_ref(),
                None => &(),
            };
            let load_errors = if self.allow_load_errors { LoadErrors::Log } else { LoadErrors::Refuse };
            let state = State::load(&runtime, config, None, progress, load_errors).await?;
            let startup = Startup::finished(state.registry().len());
            (state, startup, None)
        };
        // The shipper follows the log of the config the host starts with,
        // for the host's life, whoever drives the host: a transport or a
        // library caller. A reload never restarts it: `[audit.postgres]`
        // and the shipped `[audit] file` are fixed at start.
        let shipper = state.config().audit.as_ref().and_then(airlock_policy::audit::ship::spawn);
        let scheduler = Scheduler::new(state.max_in_flight());
        let sessions = Arc::new(Sessions::new(runtime.memory().clone()));
        Sessions::spawn_sweeper(&sessions);
        let telemetry = Telemetry { metrics, traces };
        let pipeline = Pipeline {
            scheduler,
            quota: QuotaTracker::new(),
            sessions,
            memory: runtime.memory().clone(),
            telemetry,
            approvals,
            confirmations_closed: CancellationToken::new(),
        };
        let host = Host {
            inner: Arc::new(Inner {
                runtime,
                state: RwLock::new(Arc::new(state)),
                pipeline,
                reloads: tokio::sync::Mutex::new(()),
                needs_tokens: Mutex::new(None),
                startup,
                stop_calls: CancellationToken::new(),
                draining: AtomicBool::new(false),
                tasks,
                _shipper: shipper,
            }),
        };
        if let Some((planned, errors, guard, config)) = background {
            startup::spawn(host.clone(), config, planned, errors, guard)
                .map_err(|err| HostError::Engine(anyhow::Error::new(err).context("starting the tool loader")))?;
        }
        Ok(host)
    }
}

struct Inner {
    runtime: Runtime,
    /// The state in force; replaced whole, never changed in place.
    state: RwLock<Arc<State>>,
    /// What lives as long as the host: scheduler, quota tracker, sessions.
    pipeline: Pipeline,
    /// One reload at a time, so that each builds on the state in force.
    reloads: tokio::sync::Mutex<()>,
    /// The address of an HTTP server on a non-loopback address: no state
    /// without bearer tokens may be put in force while it runs.
    needs_tokens: Mutex<Option<SocketAddr>>,
    startup: Startup,
    /// Cancels every call in flight (shutdown, past its grace).
    stop_calls: CancellationToken,
    /// Set when shutdown begins: `/readyz` answers 503 from then on.
    draining: AtomicBool,
    /// MCP tasks: their state and kept results, for the host's life.
    tasks: Arc<crate::tasks::Tasks>,
    /// The audit shipper (`[audit.postgres]`): it ships the local log to
    /// PostgreSQL while the host lives, and its task is stopped when the
    /// last clone of the host is dropped, so after a transport's
    /// [`Host::finish`] synced the log (what it has not shipped by then
    /// ships after the next start).
    _shipper: Option<airlock_policy::audit::ship::Shipper>,
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
    pub problems: Vec<Problem>,
    /// Why even its strict variant is not: empty when the tool has a strict
    /// form (and is marked strict with `--strict`).
    pub no_strict_form: Vec<Problem>,
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

    /// The state in force: the tools, policy, audit log, quotas and access
    /// rules built from one config. A caller that needs several of them
    /// takes this once, so that they come from the same config.
    pub fn state(&self) -> Arc<State> {
        self.inner.state.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The tools loaded now.
    pub fn tools(&self) -> Arc<Registry> {
        self.state().registry().clone()
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

    /// Put a registry built elsewhere (start-up in the background) in
    /// force: the state in force with that registry.
    pub(crate) fn install_registry(&self, registry: Arc<Registry>) {
        let mut slot = self.inner.state.write().unwrap_or_else(PoisonError::into_inner);
        *slot = Arc::new(slot.with_registry(registry));
        self.after_swap(&slot);
    }

    /// How start-up is going, for the transports (`tools/list` during a
    /// start-up in the background, `/readyz`).
    pub fn startup(&self) -> &Startup {
        &self.inner.startup
    }

    /// The configuration in force: the one the state in force was built
    /// from (a reload that failed or was refused leaves it unchanged).
    pub fn config(&self) -> Config {
        self.state().config().clone()
    }

    /// The per-principal quotas in force (`[quotas]`; a reload replaces
    /// them).
    pub fn quotas(&self) -> Arc<Quotas> {
        self.state().quotas().clone()
    }

    /// The model-facing tool list in a provider format. With `strict`, each
    /// schema that has a strict form is replaced by it and marked strict;
    /// a schema without one is emitted as it is, not marked strict
    /// ([`Host::strict_report`] says why).
    pub fn schemas(&self, format: Format, strict_mode: bool) -> Vec<Value> {
        let registry = self.tools();
        let fleet = self.state().config().fleet.is_some();
        registry.iter().map(|tool| schema_of(tool, format, strict_mode, fleet)).collect()
    }

    /// The model-facing schema of the tool `name` alone, as in
    /// [`Host::schemas`]; `None` when no such tool is served.
    pub fn schema(&self, name: &str, format: Format, strict_mode: bool) -> Option<Value> {
        let registry = self.tools();
        let fleet = self.state().config().fleet.is_some();
        registry.get(name).map(|tool| schema_of(tool, format, strict_mode, fleet))
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
        if self.inner.draining.load(Ordering::Relaxed) {
            return self.inner.pipeline.refuse(&self.state(), request, shutting_down());
        }
        // The call is cancelled by its own token or by shutdown.
        let stop = self.inner.stop_calls.child_token();
        let call = async {
            startup::wait_for_tool(self, &request.tool, &stop).await;
            let state = self.state();
            // Cancelled while its tool was still loading: it never got to
            // run, and says so (not that it waited out its deadline).
            if stop.is_cancelled() && state.registry().get(&request.tool).is_none() {
                return self.inner.pipeline.refuse(&state, request, cancelled_while_loading());
            }
            self.inner.pipeline.call(&state, request, confirmer, &stop).await
        };
        tokio::pin!(call);
        tokio::select! {
            biased;
            result = &mut call => result,
            () = cancel.cancelled() => {
                stop.cancel();
                call.await
            }
        }
    }

    /// Run a batch of calls; results come back in the proposed order.
    pub async fn dispatch(
        &self,
        requests: Vec<CallRequest>,
        confirmer: Option<&dyn Confirmer>,
        cancel: &CancellationToken,
    ) -> Vec<ToolResult> {
        if self.inner.draining.load(Ordering::Relaxed) {
            let state = self.state();
            return requests.into_iter().map(|r| self.inner.pipeline.refuse(&state, r, shutting_down())).collect();
        }
        let stop = self.inner.stop_calls.child_token();
        let batch = async {
            futures::future::join_all(requests.iter().map(|r| startup::wait_for_tool(self, &r.tool, &stop))).await;
            let state = self.state();
            self.inner.pipeline.dispatch(&state, requests, confirmer, &stop).await
        };
        tokio::pin!(batch);
        tokio::select! {
            biased;
            results = &mut batch => results,
            () = cancel.cancelled() => {
                stop.cancel();
                batch.await
            }
        }
    }

    /// Reload from `config` (or the config file in force, re-read): build a
    /// whole new state (tools, policy, audit log, quotas, access rules) and
    /// put it in force in one swap. Calls already received finish under the
    /// state they started with. On any error nothing changes: the old state
    /// keeps serving. Sessions of tools the reload left unchanged are kept;
    /// the others are dropped (their state is lost). A reload during a
    /// start-up in the background waits until start-up is done, then reads
    /// the config.
    ///
    /// # Errors
    ///
    /// The config is invalid, a component fails to load, the policy or
    /// entities are invalid, the audit log cannot be opened
    /// ([`HostError`]); a setting fixed at start changed
    /// ([`HostError::NeedsRestart`]); or the new config has no bearer token
    /// while an HTTP server runs on a non-loopback address
    /// ([`HostError::Refused`]).
    pub async fn reload(&self, config: Option<Config>) -> Result<usize, HostError> {
        let _loading = self.inner.startup.lock().await;
        let _one = self.inner.reloads.lock().await;
        let current = self.state();
        let config = match config {
            Some(config) => config,
            None => match &current.config().file {
                Some(path) => Config::from_file(path)?,
                None => current.config().clone(),
            },
        };
        let fixed = current.config().restarts(&config);
        if !fixed.is_empty() {
            return Err(HostError::NeedsRestart(fixed));
        }
        let loaded = match self.check_tokens(&config.http) {
            Ok(()) => State::load(&self.inner.runtime, config, Some(&current), &(), LoadErrors::Refuse).await,
            Err(err) => Err(err),
        };
        self.inner.pipeline.telemetry.metrics.reloaded(loaded.is_ok());
        let state = loaded?;
        let count = state.registry().len();
        let changes = state.registry().changes(current.registry());
        self.install(state);
        self.record_changes(&changes);
        Ok(count)
    }

    /// Log and audit each tool a reload put in force under another
    /// revision (a `tool_changed` record in the log now in force). A record
    /// that cannot be written is logged: the reload is in force already,
    /// and the calls' own records carry the new revision.
    fn record_changes(&self, changes: &[ToolChange]) {
        let state = self.state();
        for change in changes {
            tracing::warn!(
                tool = %change.tool,
                old = %change.old_revision,
                new = %change.new_revision,
                "a reload changed the tool's revision; sessions and confirmations bound to the old one are void"
            );
            if let Some(log) = state.audit()
                && let Err(err) = log.append_tool_changed(change)
            {
                self.inner.pipeline.telemetry.metrics.audit_failed();
                tracing::error!(path = %log.path().display(), tool = %change.tool, "cannot write the tool_changed audit record: {err}");
            }
        }
    }

    /// Audit a refused attempt to answer an approval: an
    /// `approval_refused` record in the log in force. A record that cannot
    /// be written is logged: nothing was approved, so nothing waits on it.
    pub fn audit_refused_approval(&self, refusal: &RefusedApproval) {
        let state = self.state();
        if let Some(log) = state.audit()
            && let Err(err) = log.append_approval_refused(refusal)
        {
            self.inner.pipeline.telemetry.metrics.audit_failed();
            tracing::error!(path = %log.path().display(), approval = %refusal.approval_id, "cannot write the approval_refused audit record: {err}");
        }
    }

    /// Put `registry` in force in the current state, everything else
    /// unchanged (tools loaded in the background, say). Tools the same as
    /// in force are kept, with their sessions. A reload running at the same
    /// time puts its own registry in force when it ends.
    pub fn replace_registry(&self, registry: Registry) {
        let mut slot = self.inner.state.write().unwrap_or_else(PoisonError::into_inner);
        let registry = registry.reusing(slot.registry());
        *slot = Arc::new(slot.with_registry(Arc::new(registry)));
        self.after_swap(&slot);
    }

    /// From now on, refuse every reload that leaves no bearer token: an
    /// MCP HTTP server listens on `addr`, which is not a loopback address.
    ///
    /// # Errors
    ///
    /// The state in force has no bearer token already.
    pub fn require_http_tokens(&self, addr: SocketAddr) -> Result<(), HostError> {
        *self.inner.needs_tokens.lock().unwrap_or_else(PoisonError::into_inner) = Some(addr);
        self.check_tokens(&self.state().config().http)
    }

    fn check_tokens(&self, http: &HttpSettings) -> Result<(), HostError> {
        let needs = *self.inner.needs_tokens.lock().unwrap_or_else(PoisonError::into_inner);
        match needs {
            Some(addr) if http.tokens.is_empty() && http.jwt.is_none() => Err(HostError::Refused(addr)),
            _ => Ok(()),
        }
    }

    /// Swap `state` in whole.
    fn install(&self, state: State) {
        let mut slot = self.inner.state.write().unwrap_or_else(PoisonError::into_inner);
        *slot = Arc::new(state);
        self.after_swap(&slot);
    }

    /// What follows the state in force outside it: the client-log settings,
    /// the scheduler's cap for calls starting from now on, and the sessions
    /// of replaced tools. Run while the swap still holds the lock, so that
    /// two swaps cannot apply these in the other order.
    fn after_swap(&self, state: &State) {
        crate::client_log::configure(&state.config().log);
        self.inner.pipeline.scheduler.set_cap(state.max_in_flight());
        let dropped = self.inner.pipeline.sessions.retain_tools(state.registry());
        if dropped > 0 {
            tracing::info!(dropped, "sessions of tools the reload replaced or removed were dropped");
        }
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

    /// Whether the host can serve calls (`/readyz`): every component is
    /// loaded or refused, the audit log (when there is one) takes writes,
    /// and shutdown has not begun.
    ///
    /// # Errors
    ///
    /// Which of those does not hold.
    pub fn ready_check(&self) -> Result<(), String> {
        if self.inner.draining.load(Ordering::SeqCst) {
            return Err("shutting down".to_owned());
        }
        let readiness = self.readiness();
        if !readiness.finished() {
            return Err(format!("loading tools: {} of {} components done", readiness.done, readiness.total));
        }
        match self.state().audit() {
            Some(log) => log.writable(),
            None => Ok(()),
        }
    }

    /// The metrics as Prometheus text (`/metrics`).
    pub fn metrics_text(&self) -> String {
        let readiness = self.readiness();
        let snapshot = Snapshot {
            sessions: self.live_sessions(),
            tools_configured: readiness.total,
            tools_ready: readiness.tools,
            ready: self.ready_check().is_ok(),
            memory: Some(self.inner.runtime.memory().snapshot()),
        };
        self.inner.pipeline.telemetry.metrics.render(snapshot)
    }

    /// The approvals on Airlock's page: opened by calls, answered on the
    /// page the transports serve (`airlock_pipeline::approval`).
    pub fn approvals(&self) -> &Arc<crate::approval::Approvals> {
        &self.inner.pipeline.approvals
    }

    /// The MCP tasks: calls whose results are kept for their principal to
    /// fetch (`airlock_pipeline::transport::tasks`).
    pub fn tasks(&self) -> &Arc<crate::tasks::Tasks> {
        &self.inner.tasks
    }

    /// Answer `request` with `failure` without running it: refused before
    /// any stage (a task the principal has no room for, say), and audited
    /// and counted as any other call.
    pub fn refuse(&self, request: CallRequest, failure: airlock_core::outcome::Failure) -> ToolResult {
        self.inner.pipeline.refuse(&self.state(), request, failure)
    }

    /// The host's metrics, for the transports' own counters.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.inner.pipeline.telemetry.metrics
    }

    /// Calls in flight now, over every principal.
    pub fn calls_in_flight_total(&self) -> usize {
        usize::try_from(self.metrics().in_flight()).unwrap_or(0)
    }

    /// Shutdown has begun: `/readyz` answers 503 from now on.
    pub fn begin_shutdown(&self) {
        self.inner.draining.store(true, Ordering::SeqCst);
        self.inner.pipeline.confirmations_closed.cancel();
    }

    /// Cancel every call in flight and every call received from now on:
    /// each ends with a `cancelled` result (audited as any other).
    pub fn cancel_calls(&self) {
        self.inner.stop_calls.cancel();
    }

    /// At exit: the audit log synced to disk and queued spans exported.
    pub async fn finish(&self) {
        if let Some(log) = self.state().audit()
            && let Err(err) = log.sync()
        {
            tracing::error!("cannot sync the audit log at exit: {err}");
        }
        if let Some(traces) = &self.inner.pipeline.telemetry.traces {
            traces.shutdown().await;
        }
    }

    /// The engine runtime (for inspecting components).
    pub fn runtime(&self) -> &Runtime {
        &self.inner.runtime
    }
}

/// What a call cancelled while its tool was still loading is told.
fn cancelled_while_loading() -> airlock_core::outcome::Failure {
    airlock_core::outcome::Failure::new(
        airlock_core::outcome::ErrorKind::Cancelled,
        "the call was cancelled while it waited for its tool to finish loading; nothing was run",
    )
}

/// What a call received after shutdown began is told.
fn shutting_down() -> airlock_core::outcome::Failure {
    airlock_core::outcome::Failure::new(
        airlock_core::outcome::ErrorKind::Cancelled,
        "the server is shutting down and takes no new calls (another replica, or this server once it is back, \
         can); nothing was run",
    )
    .blame(airlock_core::outcome::Blame::Host)
}

/// One tool's model-facing schema in `format` (its strict variant where
/// asked and possible). Only a fleet needs the session header to pin
/// interpreter sessions; marking it makes `session_id` a plain string,
/// which strict-mode converters then require (a model must send some id),
/// so a single host leaves it optional.
fn schema_of(tool: &Tool, format: Format, strict_mode: bool, fleet: bool) -> Value {
    let mut model = project(tool);
    let mut strict_here = false;
    if let (true, Some(provider)) = (strict_mode, provider_of(format))
        && let Ok(variant) = strict::strict_variant(provider, &model.parameters)
    {
        model.parameters = variant;
        strict_here = true;
    }
    let extras = (format == Format::Mcp).then(|| mcp_extras(tool, fleet));
    encode(format, &model, extras.as_ref(), strict_here)
}
