//! Execute: run one call in a fresh instance under every limit.
//!
//! Trusts nothing the guest does. Each call gets a new `Store` with its own
//! fuel, epoch deadline, memory/table/instance limiter and a WASI context
//! built only from the operator's grants; the wall-clock deadline is also
//! enforced by the executor, so it holds while the guest waits inside a host
//! call. Every way a guest can fail (trap, fuel, deadline, memory, panic) is
//! classified into an [`ErrorKind`]; none of them reaches the host as a
//! panic, and the store is dropped after every call.

use crate::bindings::{Tool, ToolPre};
use crate::capture::{Captured, CapturedOutput};
use crate::grants::Grants;
use crate::limits::Limits;
use crate::network::NetworkHooks;
use crate::outcome::{ErrorKind, Failure};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use wasmtime::component::ResourceTable;
use wasmtime::{Store, StoreLimits, StoreLimitsBuilder, Trap, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

/// Per-call state held by a store: the WASI context, its resource table,
/// the limiter and the network hooks. Dropped with the store when the call
/// ends.
pub struct CallCtx {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
    http: WasiHttpCtx,
    network: NetworkHooks,
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

/// What running a guest produced, whatever happened.
#[derive(Debug, Clone)]
pub struct Execution {
    /// The JSON text the tool returned, or why there is none.
    pub result: Result<String, Failure>,
    /// Captured stdout.
    pub stdout: Captured,
    /// Captured stderr.
    pub stderr: Captured,
    /// Fuel consumed, when the store could report it.
    pub fuel_used: Option<u64>,
    /// Wall-clock time from store creation to the end of the call.
    pub duration: Duration,
}

/// A fresh store for one call: limits, fuel and deadline set, WASI from
/// grants.
fn new_store(
    pre: &ToolPre<CallCtx>,
    limits: &Limits,
    grants: &Grants,
) -> anyhow::Result<(Store<CallCtx>, CapturedOutput, CapturedOutput)> {
    let stdout = CapturedOutput::new(limits.max_stdio_bytes);
    let stderr = CapturedOutput::new(limits.max_stdio_bytes);
    let wasi = grants.wasi_ctx(stdout.clone(), stderr.clone())?;
    let store_limits = StoreLimitsBuilder::new()
        .memory_size(limits.memory_bytes)
        .table_elements(limits.table_elements)
        .instances(limits.instances)
        .tables(limits.instances * 4)
        .memories(limits.instances)
        // A failed grow returns -1 to the guest instead of trapping, so an
        // interpreter can raise its own MemoryError; a Rust guest aborts
        // with "memory allocation of N bytes failed", classified below.
        .trap_on_grow_failure(false)
        .build();
    let ctx = CallCtx {
        wasi,
        table: ResourceTable::new(),
        limits: store_limits,
        http: WasiHttpCtx::new(),
        network: NetworkHooks::new(grants.network.clone()),
    };
    let mut store = Store::new(pre.engine(), ctx);
    store.limiter(|ctx| &mut ctx.limits);
    store.set_fuel(limits.fuel)?;
    // Check the wall clock on every epoch tick: trap once the deadline has
    // passed, otherwise yield to the executor so cancellation and the
    // executor-side timeout can act on a guest that never calls the host.
    let deadline = Instant::now() + limits.timeout;
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |_| {
        if Instant::now() >= deadline { Ok(UpdateDeadline::Interrupt) } else { Ok(UpdateDeadline::Yield(1)) }
    });
    Ok((store, stdout, stderr))
}

/// Run `work` on a fresh instance of `pre` under `limits`, with `grants`,
/// until it finishes, the deadline passes or `cancel` fires.
async fn run<R, F>(
    pre: &ToolPre<CallCtx>,
    limits: &Limits,
    grants: &Grants,
    cancel: &CancellationToken,
    work: F,
) -> (Result<R, Failure>, Execution)
where
    F: for<'a> FnOnce(
        &'a Tool,
        &'a mut Store<CallCtx>,
    ) -> std::pin::Pin<Box<dyn Future<Output = wasmtime::Result<Result<R, Failure>>> + Send + 'a>>,
{
    let started = Instant::now();
    let (mut store, stdout, stderr) = match new_store(pre, limits, grants) {
        Ok(parts) => parts,
        Err(err) => {
            let failure = Failure::new(ErrorKind::Internal, format!("the host could not prepare the sandbox: {err:#}"));
            let execution = Execution {
                result: Err(failure.clone()),
                stdout: Captured::default(),
                stderr: Captured::default(),
                fuel_used: None,
                duration: started.elapsed(),
            };
            return (Err(failure), execution);
        }
    };
    let outcome = {
        let call = async {
            let instance = pre.instantiate_async(&mut store).await?;
            work(&instance, &mut store).await
        };
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(Failure::new(ErrorKind::Cancelled, "the call was cancelled before the tool finished")),
            result = tokio::time::timeout(limits.timeout, call) => match result {
                Ok(Ok(inner)) => inner,
                Ok(Err(err)) => Err(classify(&err, limits, &stderr.snapshot())),
                Err(_elapsed) => Err(timeout_failure(limits)),
            },
        }
    };
    let fuel_used = store.get_fuel().ok().map(|left| limits.fuel.saturating_sub(left));
    drop(store);
    let execution = Execution {
        result: outcome.as_ref().map(|_| String::new()).map_err(Clone::clone),
        stdout: stdout.snapshot(),
        stderr: stderr.snapshot(),
        fuel_used,
        duration: started.elapsed(),
    };
    (outcome, execution)
}

/// Call the tool's handler once in a fresh instance.
pub async fn call(
    pre: &ToolPre<CallCtx>,
    limits: &Limits,
    grants: &Grants,
    arguments: &str,
    cancel: &CancellationToken,
) -> Execution {
    let arguments = arguments.to_owned();
    let (result, mut execution) = run(pre, limits, grants, cancel, move |tool, store| {
        Box::pin(async move {
            let reply = tool.airlock_tool_handler().call_call(store, &arguments).await?;
            Ok(reply.map_err(|err| Failure { kind: ErrorKind::ToolError, message: err.message, code: err.code }))
        })
    })
    .await;
    execution.result = result;
    if let Some(network) = grants.network.as_deref().filter(|n| !n.secrets.is_empty()) {
        scrub_secrets(network, &mut execution);
    }
    execution
}

/// Remove the operator's secret header values from everything the guest
/// returns, in case a server echoed one back to it.
fn scrub_secrets(network: &crate::network::NetworkGrant, execution: &mut Execution) {
    match &mut execution.result {
        Ok(text) => crate::network::scrub(network, text),
        Err(failure) => {
            crate::network::scrub(network, &mut failure.message);
            if let Some(code) = &mut failure.code {
                crate::network::scrub(network, code);
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
pub async fn metadata(pre: &ToolPre<CallCtx>, limits: &Limits) -> Result<RawMetadata, Failure> {
    let (result, _) = run(pre, limits, &Grants::default(), &CancellationToken::new(), |tool, store| {
        Box::pin(async move {
            let meta = tool.airlock_tool_metadata();
            let name = meta.call_name(&mut *store).await?;
            let description = meta.call_description(&mut *store).await?;
            let parameters = meta.call_parameters(&mut *store).await?;
            let output = meta.call_output(&mut *store).await?;
            Ok(Ok(RawMetadata { name, description, parameters, output }))
        })
    })
    .await;
    result
}

fn timeout_failure(limits: &Limits) -> Failure {
    Failure::new(
        ErrorKind::Timeout,
        format!(
            "the tool did not finish within its {} ms deadline and was stopped; try a smaller input or a narrower request",
            limits.timeout.as_millis()
        ),
    )
}

/// Map a wasmtime error from a guest call to a failure the model can read.
fn classify(err: &wasmtime::Error, limits: &Limits, stderr: &Captured) -> Failure {
    let chain: Vec<String> = err.chain().map(|e| e.to_string()).collect();
    let text = chain.join(": ");
    let panic_message = panic_message(&stderr.text);
    match err.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => return timeout_failure(limits),
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
    if text.contains("forcing trap when growing memory")
        || stderr.text.contains("memory allocation of")
        || text.contains("forcing trap when growing table")
        || text.contains("exceeds memory limits")
        || text.contains("exceeds table limits")
    {
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
}
