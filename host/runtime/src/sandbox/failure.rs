//! Failure classification: how a guest call that did not return becomes a
//! [`Failure`] the model can read.
//!
//! Trusts nothing the guest wrote: a trap is classified from typed wasmtime
//! errors (`Trap`, `ResourceTableError`, `FieldMapError`) and the host's
//! own records (the limiter's note of a refused growth, the budget's
//! refusal); the guest's stderr is read only for a Rust panic's message.
//! Only the caps wasmtime 48 raises as untyped errors are matched by their
//! fixed text.

use airlock_core::call::Captured;
use airlock_core::outcome::{ErrorKind, Failure};
use airlock_settings::limits::{HTTP_FIELDS_BYTES, Limits, OUTGOING_BODY_CHUNK_BYTES};
use std::time::Duration;
use wasmtime::Trap;
use wasmtime::component::ResourceTableError;
use wasmtime_wasi_http::FieldMapError;

/// The failure of a call whose store could not be set up.
pub(super) fn unprepared(err: &anyhow::Error) -> Failure {
    Failure::new(ErrorKind::Internal, format!("the host could not prepare the sandbox: {err:#}"))
}

/// A failure the guest may have caused by a request the host refused (a
/// host refusal the guest turned into its own error, or a crash): say so,
/// since the guest only saw an error code. Other failures are as they are.
pub(super) fn with_refusal(mut failure: Failure, refusal: Option<String>) -> Failure {
    if let Some(refusal) = refusal
        && matches!(failure.kind, ErrorKind::ToolError | ErrorKind::Trapped | ErrorKind::HostLimit)
    {
        failure.message = format!("{} (the host refused a request of this call: {refusal})", failure.message);
    }
    failure
}

/// The failure of a call stopped at its deadline; `stated` is the tool's
/// `timeout_ms` as configured, whatever part of it the host's own checks
/// took.
pub(super) fn timeout_failure(stated: Duration) -> Failure {
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
pub(super) fn classify(
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
        // The tool's result and its content blocks cross the same way; by
        // far the commonest cause is one of them far over its cap. The
        // guest is stopped before the host copies any of it.
        return Some(Failure::new(
            ErrorKind::OutputTooLarge,
            format!(
                "the tool handed the host more than {} bytes at once and was stopped before the host took any of \
                 it: its result is over its {}-byte output limit (max_output_bytes), a content block it attached \
                 is over the {}-byte limit of one block (max_content_block_bytes), or one host call carried that \
                 much data; return a smaller result (at most {} bytes) and smaller blocks",
                limits.hostcall_bytes(),
                limits.max_output_bytes,
                limits.max_content_block_bytes,
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
