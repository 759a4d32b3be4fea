//! Start-up in the background (`airlock serve`): the host answers clients
//! before its tools are loaded, and each tool is installed as soon as it is
//! ready.
//!
//! Compiling a large component takes tens of seconds on a cold cache
//! (CPython is 20 MiB of WebAssembly), longer than clients wait for
//! `initialize`. So the host starts with an empty registry and one task
//! loads the components (in parallel, see `registry::load_planned`); after
//! each one it builds a new registry with that tool added and swaps it in
//! whole ([`Host::install_registry`]), then says so on a watch channel
//! ([`Readiness`]). A call for a tool that is not there yet waits for it
//! until the tool's deadline ([`wait_for_tool`]); the MCP front end tells
//! clients that the tool list changed.
//!
//! A component that fails to load is logged and left out: the others keep
//! serving. A reload (`--watch`) takes the same load lock as this task, so
//! it waits until start-up is done and then builds its registry from the
//! config as it is then: the two never mix, and no reload is lost.
//!
//! Trusts the config (the operator's); components are checked by the same
//! loader as any load. Waiting calls come from clients: each waits at most
//! its tool's `timeout_ms`, and the transports bound how many are open.

use super::Host;
use crate::config::Config;
use crate::registry::{self, Assembly, Planned, RegistryError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{Mutex, OwnedMutexGuard, watch};
use tokio_util::sync::CancellationToken;

/// How far loading the tools has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Readiness {
    /// Components the config names.
    pub total: usize,
    /// Components done: loaded or refused.
    pub done: usize,
    /// Tools serving now.
    pub tools: usize,
}

impl Readiness {
    /// Every component is loaded or refused.
    pub fn finished(&self) -> bool {
        self.done >= self.total
    }
}

/// The start-up state of one host: its readiness and the lock every
/// registry build (start-up or reload) holds.
pub struct Startup {
    readiness: watch::Sender<Readiness>,
    load_lock: Arc<Mutex<()>>,
    began: Instant,
}

impl Startup {
    /// A host whose tools are all loaded already.
    pub(crate) fn finished(tools: usize) -> Self {
        let (readiness, _) = watch::channel(Readiness { total: tools, done: tools, tools });
        Startup { readiness, load_lock: Arc::default(), began: Instant::now() }
    }

    /// A host about to load `total` components in the background, and the
    /// load lock for the task that loads them (taken before anyone else can
    /// ask for it).
    pub(crate) fn loading(total: usize) -> (Self, Option<OwnedMutexGuard<()>>) {
        let (readiness, _) = watch::channel(Readiness { total, done: 0, tools: 0 });
        let load_lock: Arc<Mutex<()>> = Arc::default();
        let guard = load_lock.clone().try_lock_owned().ok();
        (Startup { readiness, load_lock, began: Instant::now() }, guard)
    }

    /// How far loading has come.
    pub(crate) fn readiness(&self) -> Readiness {
        *self.readiness.borrow()
    }

    /// Changes of the readiness (one per tool installed or refused).
    pub fn subscribe(&self) -> watch::Receiver<Readiness> {
        self.readiness.subscribe()
    }

    /// The lock a registry build holds; a reload waits here for start-up.
    pub(crate) async fn lock(&self) -> OwnedMutexGuard<()> {
        self.load_lock.clone().lock_owned().await
    }
}

/// Load `planned` into `host` in the background, installing each tool as
/// it is ready. `guard` is the load lock, held until every component is
/// done.
///
/// The loads run on a thread of their own (with its own single-threaded
/// runtime; compilation still runs on its blocking pool, in parallel):
/// reading a large tool's metadata instantiates it, which keeps a thread
/// busy for tens of milliseconds, and the runtime's worker threads stay
/// free to answer clients meanwhile.
///
/// # Errors
///
/// The thread or its runtime cannot be started; nothing is loaded then.
pub(crate) fn spawn(
    host: Host,
    config: Config,
    planned: Vec<Planned>,
    errors: Vec<RegistryError>,
    guard: Option<OwnedMutexGuard<()>>,
) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    std::thread::Builder::new()
        .name("airlock-startup".into())
        .spawn(move || runtime.block_on(load(host, config, planned, errors, guard)))?;
    Ok(())
}

async fn load(
    host: Host,
    config: Config,
    planned: Vec<Planned>,
    errors: Vec<RegistryError>,
    guard: Option<OwnedMutexGuard<()>>,
) {
    let _guard = guard;
    let began = Instant::now();
    for error in &errors {
        tracing::error!("{error}; its tools are left out");
    }
    let total = planned.len();
    tracing::info!("start-up: loading {total} tool component(s) in the background");
    let mut assembly = Assembly::new(total, errors);
    registry::load_planned(host.runtime(), &config, planned, &(), |planned, outcome| {
        match assembly.add(planned, outcome) {
            Ok(name) => tracing::info!("start-up: tool {name} ready after {:.1} s", began.elapsed().as_secs_f64()),
            Err(error) => tracing::error!("{error}; the tool is left out"),
        }
        let registry = assembly.registry();
        let tools = registry.len();
        // The registry first, then the news: a waiter that hears of the
        // change finds the tool.
        host.install_registry(Arc::new(registry));
        host.startup().readiness.send_modify(|r| {
            r.done = r.done.saturating_add(1).min(r.total);
            r.tools = tools;
        });
    })
    .await;
    let (registry, errors) = assembly.finish();
    tracing::info!(
        "start-up: {} tool(s) ready, {} component(s) refused, after {:.1} s",
        registry.len(),
        errors.len(),
        began.elapsed().as_secs_f64()
    );
}

/// Wait until `name` is a loaded tool, start-up is done, the tool's
/// deadline (`timeout_ms`, or the defaults' for a name no section
/// configures) has passed, or `cancel` fires; whichever comes first. The
/// call's own deadline starts after this wait.
pub async fn wait_for_tool(host: &Host, name: &str, cancel: &CancellationToken) {
    let startup = host.startup();
    // Subscribe before looking: a tool installed in between is then seen
    // as a change.
    let mut changes = startup.subscribe();
    if changes.borrow_and_update().finished() || host.tools().get(name).is_some() {
        return;
    }
    let timeout = host.config().settings_for(name).limits.timeout;
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return },
            () = tokio::time::sleep_until(deadline) => return,
            () = cancel.cancelled() => return,
        }
        if changes.borrow_and_update().finished() || host.tools().get(name).is_some() {
            return;
        }
    }
}

/// Wait until start-up is done or `within` has passed since the host
/// started, whichever comes first.
pub async fn settle(host: &Host, within: Duration) {
    let startup = host.startup();
    let mut changes = startup.subscribe();
    let deadline = tokio::time::Instant::from_std(startup.began.checked_add(within).unwrap_or(startup.began));
    while !changes.borrow_and_update().finished() {
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return },
            () = tokio::time::sleep_until(deadline) => return,
        }
    }
}
