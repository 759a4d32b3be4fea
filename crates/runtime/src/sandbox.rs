//! Execute: run one call in a fresh instance under every limit.
//!
//! Trusts nothing the guest does. Each call gets a new `Store` with its own
//! fuel, epoch deadline, memory/table/instance limiter and a WASI context
//! built only from the operator's grants; the wall-clock deadline is also
//! enforced by the executor, so it holds while the guest waits inside a host
//! call. Every way a guest can fail (trap, fuel, deadline, memory, panic) is
//! classified into an [`ErrorKind`]; none of them reaches the host as a
//! panic, and the store is dropped after every call.
//!
//! The one exception is a session (`session.rs`): it keeps a
//! [`LiveInstance`] between calls and runs each call with [`call_on`], which
//! renews fuel, deadline and captures per call and reports when the
//! instance is [`Spent`] and must be dropped.

use crate::budget::{HostBudget, Metered};
use crate::capture::CapturedOutput;
use crate::grants::Grants;
use crate::network::{NetworkGrant, NetworkHooks};
use airlock_core::call::Captured;
use airlock_core::caller::Caller;
use airlock_core::outcome::{ErrorKind, Failure};
use airlock_settings::limits::{HANDLES_PER_RESOURCE, HTTP_FIELDS_BYTES, Limits, OUTGOING_BODY_CHUNK_BYTES};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use wasmtime::component::{ResourceTable, ResourceTableError};
use wasmtime::{ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder, Trap, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{FieldMapError, WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

mod tool;

pub(crate) use tool::Tool;
pub use tool::ToolPre;

/// Per-call state held by a store: the WASI context, its resource table,
/// the limiter, the network hooks and the host budget. Dropped with the
/// store: after the call, or when a session ends.
pub struct CallCtx {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: GrowthLimiter,
    http: WasiHttpCtx,
    network: NetworkHooks,
    budget: HostBudget,
    /// Who the call being served acts for; `None` while the metadata is
    /// read.
    caller: Option<Arc<Caller>>,
}

impl CallCtx {
    /// The caller of the call being served (`airlock:tool/caller`).
    pub(crate) fn caller(&self) -> Option<&Caller> {
        self.caller.as_deref()
    }
}

impl Metered for CallCtx {
    fn budget_and_table(&mut self) -> (&mut HostBudget, &ResourceTable) {
        (&mut self.budget, &self.table)
    }
}

impl WasiView for CallCtx {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for CallCtx {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.http, table: &mut self.table, hooks: &mut self.network }
    }
}

/// The store's limiter: wasmtime's [`StoreLimits`], plus a note of any
/// growth it refused. The note is the host's own record of the memory or
/// table cap being hit: a call that fails after it is `out_of_memory`
/// whatever the trap says (a Rust guest aborts, an interpreter may raise
/// its own error). A session's instance whose guest hit the memory cap is
/// discarded even when the guest recovered (a Python `MemoryError`, a
/// JavaScript out-of-memory error): an interpreter that ran out of memory in
/// the middle of an allocation is not trusted to be consistent afterwards.
struct GrowthLimiter {
    limits: StoreLimits,
    refused: bool,
}

impl GrowthLimiter {
    /// Note a growth the limits refused (or that failed) and pass the answer on.
    fn record(&mut self, allowed: wasmtime::Result<bool>) -> wasmtime::Result<bool> {
        self.refused |= !matches!(allowed, Ok(true));
        allowed
    }
}

impl ResourceLimiter for GrowthLimiter {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum);
        self.record(allowed)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.refused = true;
        self.limits.memory_grow_failed(error)
    }

    fn table_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let allowed = self.limits.table_growing(current, desired, maximum);
        self.record(allowed)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.refused = true;
        self.limits.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
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
        }
    }
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
    tool: Option<Tool>,
    stdout: CapturedOutput,
    stderr: CapturedOutput,
    /// The network grant, whose secrets are scrubbed from every result.
    network: Option<Arc<NetworkGrant>>,
}

impl LiveInstance {
    /// A store for `pre` with the limiter from `limits` (its memory, table
    /// and instance caps hold for the store's whole life) and WASI built
    /// from `grants`.
    ///
    /// # Errors
    ///
    /// A granted directory cannot be opened.
    pub(crate) fn new(pre: &ToolPre, limits: &Limits, grants: &Grants) -> anyhow::Result<Self> {
        let stdout = CapturedOutput::new(limits.max_stdio_bytes);
        let stderr = CapturedOutput::new(limits.max_stdio_bytes);
        let wasi = grants.wasi_ctx(stdout.clone(), stderr.clone())?;
        let store_limits = StoreLimitsBuilder::new()
            .memory_size(limits.memory_bytes)
            .table_elements(limits.table_elements)
            .instances(limits.instances)
            .tables(limits.instances * 4)
            .memories(limits.instances)
            // A failed grow returns -1 to the guest instead of trapping, so
            // an interpreter can raise its own MemoryError; a Rust guest
            // aborts, and the limiter's record of the refused growth makes
            // that `out_of_memory` (see `classify`).
            .trap_on_grow_failure(false)
            .build();
        // Every WASI resource the guest holds (descriptor, stream, pollable,
        // header map, request, body) is one table entry; past the cap the
        // call traps and is classified as `host_limit`.
        let mut table = ResourceTable::new();
        table.set_max_capacity(limits.max_host_resources());
        let mut http = WasiHttpCtx::new();
        http.set_field_size_limit(HTTP_FIELDS_BYTES);
        let ctx = CallCtx {
            wasi,
            table,
            limits: GrowthLimiter { limits: store_limits, refused: false },
            http,
            network: NetworkHooks::new(grants.network.clone()),
            budget: HostBudget::new(limits.max_open_files, grants.dirs.len(), limits.max_outgoing_bodies())
                .with_write_caps(limits.max_write_bytes, limits.max_created_files),
            caller: None,
        };
        let mut store = Store::new(pre.engine(), ctx);
        store.limiter(|ctx| &mut ctx.limits);
        // Data a guest hands the host in one host call (strings and lists
        // lifted out of its memory, its result included) is capped: lists
        // of strings can point at the same bytes many times over.
        store.set_hostcall_fuel(limits.hostcall_bytes());
        store.set_max_component_handles(limits.max_host_resources().saturating_mul(HANDLES_PER_RESOURCE));
        Ok(Self { store, tool: None, stdout, stderr, network: grants.network.clone() })
    }

    /// Set up the next call: a full fuel budget, a new wall-clock deadline,
    /// empty captures, a clean growth record and the call's caller.
    fn arm(&mut self, limits: &Limits, caller: Option<&Arc<Caller>>) -> anyhow::Result<()> {
        self.store.set_fuel(limits.fuel)?;
        self.store.data_mut().caller = caller.cloned();
        // Check the wall clock on every epoch tick: trap once the deadline
        // has passed, otherwise yield to the executor so cancellation and
        // the executor-side timeout can act on a guest that never calls the
        // host.
        let deadline = Instant::now() + limits.timeout;
        self.store.set_epoch_deadline(1);
        self.store.epoch_deadline_callback(move |_| {
            if Instant::now() >= deadline { Ok(UpdateDeadline::Interrupt) } else { Ok(UpdateDeadline::Yield(1)) }
        });
        // A store that already served a call (a session's) starts this one
        // with empty captures, a clean growth record and new network
        // allowances; a fresh store has them already.
        if self.tool.is_some() {
            self.stdout.take();
            self.stderr.take();
            self.store.data_mut().limits.refused = false;
            self.store.data_mut().network.renew();
            self.store.data_mut().budget.renew();
        }
        Ok(())
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

/// The failure of a call whose store could not be set up.
fn unprepared(err: &anyhow::Error) -> Failure {
    Failure::new(ErrorKind::Internal, format!("the host could not prepare the sandbox: {err:#}"))
}

/// Run `work` on `live` (instantiating `pre` first if needed) under
/// `limits` until it finishes, the deadline passes or `cancel` fires. Also
/// says whether the instance is spent. Every guest call, in a fresh
/// instance or a session's, runs here. `stated` is the deadline as the
/// operator configured it (`timeout_ms`), which a timeout message names:
/// `limits.timeout` may be less, when the host's own checks took part of
/// it.
async fn run_on<R, F>(
    live: &mut LiveInstance,
    pre: &ToolPre,
    limits: &Limits,
    stated: Duration,
    caller: Option<&Arc<Caller>>,
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
    if let Err(err) = live.arm(limits, caller) {
        let failure = unprepared(&err);
        return (Execution::failed(failure, started), Some(Spent::Failed(ErrorKind::Internal)));
    }
    let LiveInstance { store, tool, stdout, stderr, .. } = live;
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
        Ended::Faulted(err) => Err(classify(&err, limits, stated, memory_capped, &stderr.snapshot())),
        Ended::Stopped(failure) => Err(failure),
    };
    // A host refusal the guest turned into its own error (or a crash) is
    // the likely cause; say so, since the guest only saw an error code.
    let outcome = match (outcome, store.data().budget.refusal()) {
        (Err(mut failure), Some(refusal))
            if matches!(failure.kind, ErrorKind::ToolError | ErrorKind::Trapped | ErrorKind::HostLimit) =>
        {
            failure.message = format!("{} (the host refused a request of this call: {refusal})", failure.message);
            Err(failure)
        }
        (outcome, _) => outcome,
    };
    let fuel_used = store.get_fuel().ok().map(|left| limits.fuel.saturating_sub(left));
    let spent = match &outcome {
        Err(failure) if !finished => Some(Spent::Failed(failure.kind)),
        _ if memory_capped => Some(Spent::MemoryCap),
        _ => None,
    };
    let execution = Execution {
        result: outcome,
        stdout: stdout.take(),
        stderr: stderr.take(),
        fuel_used,
        duration: started.elapsed(),
    };
    (execution, spent)
}

/// Run `work` on a fresh instance of `pre` under `limits`, with `grants`,
/// and drop the instance.
async fn run<R, F>(
    pre: &ToolPre,
    limits: &Limits,
    grants: &Grants,
    caller: Option<&Arc<Caller>>,
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
    let (mut execution, _) = run_on(&mut live, pre, limits, limits.timeout, caller, cancel, work).await;
    drop(live);
    execution.duration = started.elapsed();
    execution
}

/// Call the tool's handler once in a fresh instance, for `caller`, within
/// `limits.timeout`; a timeout names `stated`, the tool's `timeout_ms` (see
/// [`run_on`]).
pub async fn call(
    pre: &ToolPre,
    limits: &Limits,
    stated: Duration,
    grants: &Grants,
    caller: &Arc<Caller>,
    arguments: &str,
    cancel: &CancellationToken,
) -> Execution {
    let started = Instant::now();
    // Credentials kept per principal are this caller's.
    let grants = grants.for_principal(&caller.principal);
    let mut live = match fresh(pre, limits, &grants) {
        Ok(live) => live,
        Err(failure) => return Execution::failed(failure, started),
    };
    let (mut execution, _) = call_within(&mut live, pre, limits, stated, caller, arguments, cancel).await;
    drop(live);
    execution.duration = started.elapsed();
    execution
}

/// Call the tool's handler on `live`, an instance kept by a session, under
/// `limits` (fuel and deadline are renewed for this call; the memory cap is
/// the one `live` was created with). When the result says the instance is
/// [`Spent`], the caller must drop it.
pub async fn call_on(
    live: &mut LiveInstance,
    pre: &ToolPre,
    limits: &Limits,
    caller: &Arc<Caller>,
    arguments: &str,
    cancel: &CancellationToken,
) -> (Execution, Option<Spent>) {
    call_within(live, pre, limits, limits.timeout, caller, arguments, cancel).await
}

/// [`call_on`] within `limits.timeout`, naming `stated` in a timeout.
async fn call_within(
    live: &mut LiveInstance,
    pre: &ToolPre,
    limits: &Limits,
    stated: Duration,
    caller: &Arc<Caller>,
    arguments: &str,
    cancel: &CancellationToken,
) -> (Execution, Option<Spent>) {
    let arguments = arguments.to_owned();
    let (mut execution, spent) = run_on(live, pre, limits, stated, Some(caller), cancel, move |tool, store| {
        Box::pin(async move { tool.call(store, &arguments).await })
    })
    .await;
    if let Some(network) = live.network.as_deref() {
        scrub_secrets(network, &mut execution);
    }
    (execution, spent)
}

/// Remove the operator's secret header values from everything the guest
/// returns, in case a server echoed one back to it.
fn scrub_secrets(network: &NetworkGrant, execution: &mut Execution) {
    if network.secrets.is_empty() {
        return;
    }
    match &mut execution.result {
        Ok(text) => crate::network::scrub(network, text),
        Err(failure) => {
            crate::network::scrub(network, &mut failure.message);
            if let Some(code) = &mut failure.code {
                crate::network::scrub(network, code);
                // A code with a secret withheld is no longer a valid code.
                *code = airlock_core::outcome::tool_code(code);
            }
        }
    }
    crate::network::scrub(network, &mut execution.stdout.text);
    crate::network::scrub(network, &mut execution.stderr.text);
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

/// The failure of a call stopped at its deadline; `stated` is the tool's
/// `timeout_ms` as configured, whatever part of it the host's own checks
/// took.
fn timeout_failure(stated: Duration) -> Failure {
    Failure::new(
        ErrorKind::Timeout,
        format!(
            "the tool did not finish within its {} ms deadline and was stopped; try a smaller input or a narrower request",
            stated.as_millis()
        ),
    )
}

/// Map a wasmtime error from a guest call to a failure the model can read.
/// `memory_capped` is the limiter's record that it refused a memory or
/// table growth during the call: whatever the guest did next (a Rust guest
/// aborts, an allocator traps), the call failed for want of memory.
fn classify(
    err: &wasmtime::Error,
    limits: &Limits,
    stated: Duration,
    memory_capped: bool,
    stderr: &Captured,
) -> Failure {
    let chain: Vec<String> = err.chain().map(|e| e.to_string()).collect();
    let text = chain.join(": ");
    let panic_message = panic_message(&stderr.text);
    match err.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => return timeout_failure(stated),
        Some(Trap::OutOfFuel) => {
            return Failure::new(
                ErrorKind::OutOfFuel,
                format!(
                    "the tool used up its compute budget ({} fuel units) and was stopped; try a smaller input",
                    limits.fuel
                ),
            );
        }
        Some(Trap::StackOverflow) => {
            return Failure::new(
                ErrorKind::Trapped,
                "the tool overflowed its stack (recursion too deep) and was stopped",
            );
        }
        // Languages that keep their stack in linear memory (Rust, C) fault
        // on an out-of-bounds address when that stack runs out.
        Some(Trap::MemoryOutOfBounds) if panic_message.is_none() => {
            return Failure::new(
                ErrorKind::Trapped,
                "the tool accessed memory out of bounds and was stopped (often a stack overflow from recursion too deep)",
            );
        }
        _ => {}
    }
    if let Some(failure) = host_limit(err, &text, limits) {
        return failure;
    }
    if memory_capped {
        return Failure::new(
            ErrorKind::OutOfMemory,
            format!(
                "the tool exceeded its memory limit ({} MiB) and was stopped; try a smaller input",
                limits.memory_bytes >> 20
            ),
        );
    }
    let message = match panic_message {
        Some(panic) => format!("the tool crashed: {panic}"),
        None => format!("the tool crashed: {}", chain.get(1).or(chain.first()).map_or("unknown trap", String::as_str)),
    };
    Failure::new(ErrorKind::Trapped, message)
}

/// A trap raised by one of the host-side caps that wasmtime and
/// wasmtime-wasi(-http) enforce themselves, as a failure naming the cap.
/// The resource table and the header map fail with typed errors, matched
/// by type. The others (component handles, hostcall fuel, random bytes,
/// body write budget) are raised by wasmtime 48 as untyped errors (or a
/// private type) that the host neither calls nor can observe otherwise, so
/// their texts are matched: each of these is one fixed message in
/// wasmtime's source, and an unmatched one still fails as `trapped`.
fn host_limit(err: &wasmtime::Error, text: &str, limits: &Limits) -> Option<Failure> {
    let how_to_raise = "an operator can raise `host_memory_mib` for this tool in airlock.toml";
    let table_full =
        err.chain().any(|e| matches!(e.downcast_ref::<ResourceTableError>(), Some(ResourceTableError::Full)));
    if table_full || text.contains("store handle limit exceeded") {
        return Some(Failure::new(
            ErrorKind::HostLimit,
            format!(
                "the tool held more than {} WASI resources (files, streams, pollables, HTTP headers and requests) \
                 at once, the most its host memory budget of {} MiB allows, and was stopped; {how_to_raise}",
                limits.max_host_resources(),
                limits.host_memory_bytes >> 20
            ),
        ));
    }
    let fields_full = err.chain().any(|e| {
        matches!(e.downcast_ref::<FieldMapError>(), Some(FieldMapError::TotalSizeTooBig | FieldMapError::TooManyFields))
    });
    if fields_full {
        return Some(Failure::new(
            ErrorKind::HostLimit,
            format!(
                "the tool built an HTTP header map larger than the host accepts ({} KiB, counted with the \
                 in-memory size of each header) and was stopped; send fewer or smaller headers",
                HTTP_FIELDS_BYTES >> 10
            ),
        ));
    }
    if text.contains("fuel allocated for hostcalls has been exhausted") {
        // The tool's result crosses the same way; by far the commonest
        // cause is a result far over the output cap.
        return Some(Failure::new(
            ErrorKind::OutputTooLarge,
            format!(
                "the tool handed the host more than {} bytes at once and was stopped: its result is over its \
                 {}-byte output limit, or one host call carried that much data; return a smaller result (at most \
                 {} bytes)",
                limits.hostcall_bytes(),
                limits.max_output_bytes,
                limits.max_output_bytes
            ),
        ));
    }
    if text.contains("requested len") && text.contains("exceeds limit") {
        return Some(Failure::new(
            ErrorKind::HostLimit,
            format!(
                "the tool asked for more than {} random bytes at once and was stopped; ask for fewer",
                airlock_settings::limits::MAX_RANDOM_BYTES
            ),
        ));
    }
    if text.contains("write exceeded budget") {
        return Some(Failure::new(
            ErrorKind::HostLimit,
            format!(
                "the tool wrote more than {} KiB at once into an HTTP body without waiting for `check-write` \
                 and was stopped",
                OUTGOING_BODY_CHUNK_BYTES >> 10
            ),
        ));
    }
    None
}

/// The message of a Rust guest panic from its stderr (`panicked at …:\nmsg`).
fn panic_message(stderr: &str) -> Option<String> {
    let start = stderr.find("panicked at")?;
    let rest = &stderr[start..];
    let mut lines = rest.lines();
    let location = lines.next()?.trim_end_matches(':');
    let message: Vec<&str> = lines.take_while(|l| !l.starts_with("note:")).collect();
    let message = message.join("\n");
    let message = message.trim();
    Some(if message.is_empty() { location.to_owned() } else { format!("{message} ({location})") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_message_is_extracted_from_stderr() {
        let stderr =
            "\nthread '<unnamed>' panicked at src/lib.rs:10:5:\nboom here\nnote: run with `RUST_BACKTRACE=1`\n";
        assert_eq!(panic_message(stderr).as_deref(), Some("boom here (panicked at src/lib.rs:10:5)"));
        assert_eq!(panic_message("no panic"), None);
    }

    #[test]
    fn out_of_memory_comes_from_the_limiters_record_not_from_text() {
        let limits = Limits::default();
        let quiet = Captured::default();
        // A Rust guest aborting after a refused growth traps as unreachable.
        let abort = wasmtime::Error::from(Trap::UnreachableCodeReached);
        assert_eq!(classify(&abort, &limits, limits.timeout, true, &quiet).kind, ErrorKind::OutOfMemory);
        assert_eq!(classify(&abort, &limits, limits.timeout, false, &quiet).kind, ErrorKind::Trapped);
        // Text that looks like a memory failure, with no refused growth, is a trap.
        let lookalike = Captured { text: "memory allocation of 1024 bytes failed".into(), dropped: 0 };
        assert_eq!(classify(&abort, &limits, limits.timeout, false, &lookalike).kind, ErrorKind::Trapped);
        // What stopped the guest wins over an earlier refused growth.
        let interrupt = wasmtime::Error::from(Trap::Interrupt);
        assert_eq!(classify(&interrupt, &limits, limits.timeout, true, &quiet).kind, ErrorKind::Timeout);
        // The message names the deadline as configured, not what was left
        // of it after the host's own checks.
        let left = Limits { timeout: Duration::from_millis(998), ..limits };
        let late = classify(&interrupt, &left, Duration::from_millis(1000), false, &quiet);
        assert!(late.message.contains("within its 1000 ms deadline"), "{}", late.message);
        let fuel = wasmtime::Error::from(Trap::OutOfFuel);
        assert_eq!(classify(&fuel, &limits, limits.timeout, true, &quiet).kind, ErrorKind::OutOfFuel);
    }
}
