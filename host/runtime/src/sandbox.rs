//! Execute: run one call in a fresh instance under every limit.
//!
//! Trusts nothing the guest does. Each call gets a new `Store` with its own
//! fuel, epoch deadline and capabilities (`sandbox/capability.rs`): a
//! memory/table/instance limiter, a WASI context built only from the
//! operator's grants, captured output, `wasi:http` behind the network
//! grant, the caller, the content blocks it attaches
//! (`sandbox/content.rs`), its progress reports (`sandbox/progress.rs`,
//! forwarded while it runs), its log lines (`sandbox/tool_log.rs`) and the
//! host budget. The wall-clock deadline is also
//! enforced by the executor, so it holds while the guest waits inside a
//! host call. Every way a guest can fail (trap, fuel, deadline, memory,
//! panic) is classified into an [`ErrorKind`] (`sandbox/failure.rs`); none
//! of them reaches the host as a panic, and the store is dropped after
//! every call.
//!
//! The one exception is a session (`session.rs`): it keeps a
//! [`LiveInstance`] between calls and runs each call with [`call_on`], which
//! renews fuel, deadline and every capability per call and reports when
//! the instance is [`Spent`] and must be dropped.

use crate::grants::Grants;
use crate::secrets::Scrubber;
use airlock_core::call::Captured;
use airlock_core::caller::Caller;
use airlock_core::outcome::{ErrorKind, Failure};
use airlock_core::progress::{Progress, ProgressSink};
use airlock_core::tool_log::LogSink;
use airlock_settings::limits::{HANDLES_PER_RESOURCE, Limits};
use capability::{Renewal, Setup};
use failure::{classify, timeout_failure, unprepared, with_refusal};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use wasmtime::{Store, UpdateDeadline};

mod capability;
mod content;
mod failure;
mod limiter;
mod progress;
mod tool;
mod tool_log;

pub use capability::CallCtx;
pub use content::Attached;
pub(crate) use tool::Tool;
pub use tool::ToolPre;
pub use tool_log::TARGET as TOOL_LOG_TARGET;

/// Link every capability of the sandbox into `linker` (once per engine).
///
/// # Errors
///
/// A capability's interface cannot be linked.
pub(crate) fn add_to_linker(linker: &mut wasmtime::component::Linker<CallCtx>) -> anyhow::Result<()> {
    CallCtx::add_to_linker(linker)
}

/// What running a guest produced, whatever happened. `R` is what the guest
/// returned: a call's JSON text, or the component's metadata.
#[derive(Debug, Clone)]
pub struct Execution<R = String> {
    /// What the guest returned, or why there is none.
    pub result: Result<R, Failure>,
    /// Captured stdout.
    pub stdout: Captured,
    /// Captured stderr.
    pub stderr: Captured,
    /// Fuel consumed, when the store could report it.
    pub fuel_used: Option<u64>,
    /// Wall-clock time from store creation to the end of the call.
    pub duration: Duration,
    /// The content blocks the guest attached, or why one was refused
    /// (contract 0.3.0; empty for earlier components and metadata reads).
    pub content: Attached,
}

impl<R> Execution<R> {
    /// A call that failed before the guest ran.
    pub fn failed(failure: Failure, started: Instant) -> Self {
        Self {
            result: Err(failure),
            stdout: Captured::default(),
            stderr: Captured::default(),
            fuel_used: None,
            duration: started.elapsed(),
            content: Attached::default(),
        }
    }
}

/// What a call is for, besides its arguments: the tool's name (its log
/// lines are tagged with it), who it acts for, where its progress
/// reports go when the client asked to be told, and where its log lines
/// go besides the operator's log when the operator allows it.
#[derive(Clone, Copy)]
pub struct Invocation<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// Who the call acts for.
    pub caller: &'a Arc<Caller>,
    /// The front end's sink for progress reports (`None`: dropped).
    pub progress: Option<&'a Arc<dyn ProgressSink>>,
    /// The front end's sink for log lines (`None`: the operator's log
    /// only).
    pub log: Option<&'a Arc<dyn LogSink>>,
}

/// What `arm` renews a store's capabilities for: a call (its invocation
/// and the sending ends of its progress and log channels), or `None` for a
/// metadata read.
struct Serving<'a> {
    invocation: &'a Invocation<'a>,
    progress: Option<watch::Sender<Option<Progress>>>,
    log: Option<tool_log::Sender>,
}

/// Why an instance must not serve another call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spent {
    /// The call trapped, timed out, ran out of fuel or was cancelled: a
    /// component instance cannot be re-entered after that.
    Failed(ErrorKind),
    /// The guest hit its memory (or table) cap, even if it recovered.
    MemoryCap,
}

/// A store and the instance in it, which may outlive one call: a session
/// keeps one between calls, a plain call drops it at the end. The instance
/// is created by the first call (under that call's limits). Dropping it
/// frees the instance and its pool slot.
pub struct LiveInstance {
    store: Store<CallCtx>,
    /// The build the store is of: a session's instance stays on it when
    /// the tool's baseline build is replaced by its optimized one.
    pre: ToolPre,
    tool: Option<Tool>,
    /// What every result and every log line for the client lose: the
    /// network grant's secret values, well-known credentials and the
    /// operator's patterns.
    secrets: Scrubber,
}

impl LiveInstance {
    /// A store for `pre` whose capabilities are built from `limits` (its
    /// memory, table and instance caps hold for the store's whole life)
    /// and `grants`.
    ///
    /// # Errors
    ///
    /// A granted directory cannot be opened.
    pub(crate) fn new(pre: &ToolPre, limits: &Limits, grants: &Grants) -> anyhow::Result<Self> {
        let ctx = CallCtx::new(&Setup::new(limits, grants))?;
        let mut store = Store::new(pre.engine(), ctx);
        store.limiter(|ctx| &mut ctx.limits);
        // Data a guest hands the host in one host call (strings and lists
        // lifted out of its memory, its result included) is capped: lists
        // of strings can point at the same bytes many times over.
        store.set_hostcall_fuel(limits.hostcall_bytes());
        store.set_max_component_handles(limits.max_host_resources().saturating_mul(HANDLES_PER_RESOURCE));
        Ok(Self { store, pre: pre.clone(), tool: None, secrets: grants.scrubber() })
    }

    /// Set up the next call: every capability renewed (empty captures, a
    /// clean growth record, new network allowances and write caps, the
    /// call's caller, no content blocks, its progress channel and log
    /// tags), and the store's own per-call state: a full fuel budget and a
    /// new wall-clock deadline.
    fn arm(&mut self, limits: &Limits, serving: Option<Serving<'_>>) -> anyhow::Result<()> {
        self.store.set_fuel(limits.fuel)?;
        // Check the wall clock on every epoch tick: trap once the deadline
        // has passed, otherwise yield to the executor so cancellation and
        // the executor-side timeout can act on a guest that never calls the
        // host.
        let deadline = Instant::now() + limits.timeout;
        self.store.set_epoch_deadline(1);
        self.store.epoch_deadline_callback(move |_| {
            if Instant::now() >= deadline { Ok(UpdateDeadline::Interrupt) } else { Ok(UpdateDeadline::Yield(1)) }
        });
        let renewal = match serving {
            Some(Serving { invocation, progress, log }) => {
                Renewal { limits, tool: invocation.tool, caller: Some(invocation.caller), progress, log }
            }
            None => Renewal { limits, tool: "", caller: None, progress: None, log: None },
        };
        self.store.data_mut().renew(&renewal);
        Ok(())
    }

    /// The call is over: what it attached, with its progress channel
    /// closed and its dropped log lines reported.
    fn disarm(&mut self) -> Attached {
        let ctx = self.store.data_mut();
        ctx.progress.end();
        ctx.log.finish();
        ctx.content.take()
    }
}

/// How guest work ended, before a failure is classified.
enum Ended<R> {
    /// The guest returned: its result or its own error.
    Returned(Result<R, Failure>),
    /// Wasmtime stopped the guest (a trap, a host limit).
    Faulted(wasmtime::Error),
    /// The host stopped it: the deadline or cancellation.
    Stopped(Failure),
}

/// A store for `pre` under `limits` with `grants`, or the failure a call
/// reports when there is none.
pub fn fresh(pre: &ToolPre, limits: &Limits, grants: &Grants) -> Result<LiveInstance, Failure> {
    LiveInstance::new(pre, limits, grants).map_err(|err| unprepared(&err))
}

/// Run `work` on `live` (instantiating its build first if needed) under
/// `limits` until it finishes, the deadline passes or `cancel` fires. Also
/// says whether the instance is spent. Every guest call, in a fresh
/// instance or a session's, runs here. `stated` is the deadline as the
/// operator configured it (`timeout_ms`), which a timeout message names:
/// `limits.timeout` may be less, when the host's own checks took part of
/// it.
async fn run_on<R, F>(
    live: &mut LiveInstance,
    limits: &Limits,
    stated: Duration,
    serving: Option<Serving<'_>>,
    cancel: &CancellationToken,
    work: F,
) -> (Execution<R>, Option<Spent>)
where
    F: for<'a> FnOnce(
        &'a Tool,
        &'a mut Store<CallCtx>,
    ) -> std::pin::Pin<Box<dyn Future<Output = wasmtime::Result<Result<R, Failure>>> + Send + 'a>>,
{
    let started = Instant::now();
    if let Err(err) = live.arm(limits, serving) {
        live.disarm();
        let failure = unprepared(&err);
        return (Execution::failed(failure, started), Some(Spent::Failed(ErrorKind::Internal)));
    }
    let (execution, spent) = guest_work(live, limits, stated, cancel, started, work).await;
    let content = live.disarm();
    (Execution { content, ..execution }, spent)
}

/// [`run_on`] once the store is armed: run `work`, and classify how it
/// ended.
async fn guest_work<R, F>(
    live: &mut LiveInstance,
    limits: &Limits,
    stated: Duration,
    cancel: &CancellationToken,
    started: Instant,
    work: F,
) -> (Execution<R>, Option<Spent>)
where
    F: for<'a> FnOnce(
        &'a Tool,
        &'a mut Store<CallCtx>,
    ) -> std::pin::Pin<Box<dyn Future<Output = wasmtime::Result<Result<R, Failure>>> + Send + 'a>>,
{
    let LiveInstance { store, pre, tool, .. } = live;
    let ended = {
        let call = async {
            let instance = match tool {
                Some(instance) => instance,
                None => tool.insert(pre.instantiate_async(&mut *store).await?),
            };
            work(instance, &mut *store).await
        };
        tokio::select! {
            biased;
            () = cancel.cancelled() => Ended::Stopped(Failure::new(ErrorKind::Cancelled, "the call was cancelled before the tool finished")),
            result = tokio::time::timeout(limits.timeout, call) => match result {
                Ok(Ok(inner)) => Ended::Returned(inner),
                Ok(Err(err)) => Ended::Faulted(err),
                Err(_elapsed) => Ended::Stopped(timeout_failure(stated)),
            },
        }
    };
    let memory_capped = store.data().limits.refused;
    let finished = matches!(ended, Ended::Returned(_));
    let outcome = match ended {
        Ended::Returned(inner) => inner,
        Ended::Faulted(err) => {
            Err(classify(&err, limits, stated, memory_capped, &store.data().capture.stderr.snapshot()))
        }
        Ended::Stopped(failure) => Err(failure),
    };
    // A host refusal the guest turned into its own error (or a crash) is
    // the likely cause of a failure.
    let outcome = outcome.map_err(|failure| with_refusal(failure, store.data().budget.refusal()));
    let fuel_used = store.get_fuel().ok().map(|left| limits.fuel.saturating_sub(left));
    let spent = match &outcome {
        Err(failure) if !finished => Some(Spent::Failed(failure.kind)),
        _ if memory_capped => Some(Spent::MemoryCap),
        _ => None,
    };
    let execution = Execution {
        result: outcome,
        stdout: store.data().capture.stdout.take(),
        stderr: store.data().capture.stderr.take(),
        fuel_used,
        duration: started.elapsed(),
        content: Attached::default(),
    };
    (execution, spent)
}

/// Run `work` on a fresh instance of `pre` under `limits`, with `grants`,
/// and drop the instance.
async fn run<R, F>(
    pre: &ToolPre,
    limits: &Limits,
    grants: &Grants,
    serving: Option<Serving<'_>>,
    cancel: &CancellationToken,
    work: F,
) -> Execution<R>
where
    F: for<'a> FnOnce(
        &'a Tool,
        &'a mut Store<CallCtx>,
    ) -> std::pin::Pin<Box<dyn Future<Output = wasmtime::Result<Result<R, Failure>>> + Send + 'a>>,
{
    let started = Instant::now();
    let mut live = match fresh(pre, limits, grants) {
        Ok(live) => live,
        Err(failure) => return Execution::failed(failure, started),
    };
    let (mut execution, _) = run_on(&mut live, limits, limits.timeout, serving, cancel, work).await;
    drop(live);
    execution.duration = started.elapsed();
    execution
}

/// Call the tool's handler once in a fresh instance, for `invocation`,
/// within `limits.timeout`; a timeout names `stated`, the tool's
/// `timeout_ms` (see [`run_on`]).
pub async fn call(
    pre: &ToolPre,
    limits: &Limits,
    stated: Duration,
    grants: &Grants,
    invocation: &Invocation<'_>,
    arguments: &str,
    cancel: &CancellationToken,
) -> Execution {
    let started = Instant::now();
    // Credentials kept per principal are this caller's.
    let grants = grants.for_principal(&invocation.caller.principal);
    let mut live = match fresh(pre, limits, &grants) {
        Ok(live) => live,
        Err(failure) => return Execution::failed(failure, started),
    };
    let (mut execution, _) = call_within(&mut live, limits, stated, invocation, arguments, cancel).await;
    drop(live);
    execution.duration = started.elapsed();
    execution
}

/// Call the tool's handler on `live`, an instance kept by a session, under
/// `limits` (fuel and deadline are renewed for this call; the memory cap is
/// the one `live` was created with), in the build `live` was made for.
/// When the result says the instance is [`Spent`], the caller must drop it.
pub async fn call_on(
    live: &mut LiveInstance,
    limits: &Limits,
    invocation: &Invocation<'_>,
    arguments: &str,
    cancel: &CancellationToken,
) -> (Execution, Option<Spent>) {
    call_within(live, limits, limits.timeout, invocation, arguments, cancel).await
}

/// [`call_on`] within `limits.timeout`, naming `stated` in a timeout. The
/// guest's progress reports are forwarded while it runs, the last one
/// before this returns.
async fn call_within(
    live: &mut LiveInstance,
    limits: &Limits,
    stated: Duration,
    invocation: &Invocation<'_>,
    arguments: &str,
    cancel: &CancellationToken,
) -> (Execution, Option<Spent>) {
    let arguments = arguments.to_owned();
    let (sender, forwarding) = match invocation.progress {
        Some(sink) => {
            let (sender, receiver) = progress::channel();
            (Some(sender), Some((receiver, sink)))
        }
        None => (None, None),
    };
    let (log, logging) = match invocation.log {
        Some(sink) => {
            let (sender, receiver) = tool_log::channel();
            (Some(sender), Some((receiver, sink)))
        }
        None => (None, None),
    };
    // Lines for the client lose the secrets the way the result does.
    let secrets = live.secrets.clone();
    // Tells the forwarders that the guest is done; only made for a call
    // that has one (a token is an allocation and a lock per call).
    let ended = (forwarding.is_some() || logging.is_some()).then(CancellationToken::new);
    let serving = Serving { invocation, progress: sender, log };
    let run = async {
        let ran = run_on(live, limits, stated, Some(serving), cancel, move |tool, store| {
            Box::pin(async move { tool.call(store, &arguments).await })
        })
        .await;
        if let Some(ended) = &ended {
            ended.cancel();
        }
        ran
    };
    let forward = async {
        if let (Some((receiver, sink)), Some(ended)) = (forwarding, &ended) {
            progress::forward(receiver, sink.as_ref(), limits.progress_interval, ended.clone()).await;
        }
    };
    let forward_log = async {
        if let (Some((receiver, sink)), Some(ended)) = (logging, &ended) {
            tool_log::forward(receiver, sink.as_ref(), invocation.tool, &secrets, ended.clone()).await;
        }
    };
    let (mut execution, spent) = match ended {
        // Nothing to forward: the guest's work alone, not joined with two
        // futures that would do nothing.
        None => run.await,
        Some(_) => tokio::join!(run, forward, forward_log).0,
    };
    scrub_secrets(&live.secrets, &mut execution);
    (execution, spent)
}

/// Remove secrets from everything the guest returns: the operator's
/// secret header values (a server may echo one back), well-known
/// credentials and the operator's patterns ([`crate::secrets`]).
fn scrub_secrets(secrets: &Scrubber, execution: &mut Execution) {
    match &mut execution.result {
        Ok(text) => secrets.scrub(text),
        Err(failure) => {
            secrets.scrub(&mut failure.message);
            if let Some(code) = &mut failure.code {
                secrets.scrub(code);
                // A code with a secret withheld is no longer a valid code.
                *code = airlock_core::outcome::tool_code(code);
            }
        }
    }
    secrets.scrub(&mut execution.stdout.text);
    secrets.scrub(&mut execution.stderr.text);
    content::scrub(&mut execution.content.blocks, |text| secrets.scrub(text));
}

/// The raw metadata a component declares about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawMetadata {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.description`.
    pub description: String,
    /// `metadata.parameters` (JSON text, unchecked).
    pub parameters: String,
    /// `metadata.output` (JSON text, unchecked).
    pub output: Option<String>,
}

/// Read a component's metadata in a fresh instance with no grants and the
/// given limits: reading metadata runs untrusted code.
pub(crate) async fn metadata(pre: &ToolPre, limits: &Limits) -> Result<RawMetadata, Failure> {
    let execution = run(pre, limits, &Grants::default(), None, &CancellationToken::new(), |tool, store| {
        Box::pin(async move { tool.metadata(store).await.map(Ok) })
    })
    .await;
    execution.result
}
