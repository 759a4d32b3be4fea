//! What a call, its argument check and a session reserve from the host
//! memory budget (`airlock_runtime::memory_budget`) before they take it,
//! and the failure a caller reads when there is no room.
//!
//! A call reserves everything its limits let it make the host hold at once:
//! its instance's linear memory (`memory_mib`, unless its session holds
//! that already), what it can make the host hold (`host_memory_mib`), its
//! captured stdout and stderr, its result's working set (the text, its
//! copies for the model and the transport, and the parsed values:
//! [`output_bytes`]), its content blocks with their encodings for the
//! transport (`max_content_bytes`, for a component of contract 0.3.0, the
//! only one that can attach them: [`content_bytes`]) and the validator
//! checking that result (`validation_memory_mib`, for a tool with an
//! output schema). Checking
//! the arguments reserves `validation_memory_mib` for as long as the check
//! runs. A session's live instance holds its `memory_mib` for the session's
//! life.

use airlock_core::outcome::{Blame, ErrorKind, Failure, Retry};
use airlock_runtime::memory_budget::{Holder, MemoryBudget, Refusal, Reservation};
use airlock_settings::limits::{Limits, OUTPUT_VALUE_BYTES};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Copies of a result's text the host may hold at once: as the guest
/// returned it, as rendered for the model, and as encoded for the
/// transport.
pub const OUTPUT_COPIES: u64 = 3;

const MIB: u64 = 1 << 20;

/// A result's working set under `limits`: its text [`OUTPUT_COPIES`] times
/// and its parsed values.
pub fn output_bytes(limits: &Limits) -> u64 {
    let text = (limits.max_output_bytes as u64).saturating_mul(OUTPUT_COPIES);
    text.saturating_add((limits.max_output_values as u64).saturating_mul(OUTPUT_VALUE_BYTES as u64))
}

/// Copies of a call's content blocks the host may hold at once: the bytes
/// as attached, and their base64 (4/3 of them) in the result a transport
/// encodes and in the message it writes, each freed as the next is made.
pub const CONTENT_COPIES: u64 = 3;

/// What a call's content blocks may make the host hold under `limits`:
/// `max_content_bytes` [`CONTENT_COPIES`] times. A block is refused at
/// attach as soon as the call's blocks would hold more.
pub fn content_bytes(limits: &Limits) -> u64 {
    (limits.max_content_bytes as u64).saturating_mul(CONTENT_COPIES)
}

/// What one call under `limits` reserves; `in_session` leaves out the
/// linear memory its session holds, `checks_output` adds the validator of
/// an output schema, `attaches_content` the content blocks of a component
/// that can attach them ([`content_bytes`]).
pub fn call_bytes(limits: &Limits, in_session: bool, checks_output: bool, attaches_content: bool) -> u64 {
    let mut bytes = (limits.host_memory_bytes as u64)
        .saturating_add((limits.max_stdio_bytes as u64).saturating_mul(2))
        .saturating_add(output_bytes(limits));
    if attaches_content {
        bytes = bytes.saturating_add(content_bytes(limits));
    }
    if !in_session {
        bytes = bytes.saturating_add(limits.memory_bytes as u64);
    }
    if checks_output {
        bytes = bytes.saturating_add(limits.validation_memory_bytes as u64);
    }
    bytes
}

/// What is being reserved, for the message.
#[derive(Debug, Clone, Copy)]
pub enum Purpose<'a> {
    /// A call of the tool of that name.
    Call(&'a str),
    /// Checking the arguments of a call of that tool.
    Arguments(&'a str),
    /// A new session of that tool.
    Session(&'a str),
}

/// Reserve `bytes` for `principal` from `budget`, waiting for room until
/// `deadline` (`timeout_ms` is the tool's, for the message) or until
/// `cancel` fires.
///
/// # Errors
///
/// [`ErrorKind::Busy`] when no room came before the deadline or too many
/// calls wait already; [`ErrorKind::Cancelled`]; [`ErrorKind::Internal`]
/// when the call needs more than the whole budget (no retry can help: the
/// operator's limits and budget disagree).
pub async fn reserve(
    budget: &MemoryBudget,
    principal: &str,
    bytes: u64,
    purpose: Purpose<'_>,
    deadline: (Instant, u128),
    cancel: &CancellationToken,
) -> Result<Reservation, Failure> {
    let (at, timeout_ms) = deadline;
    let holder = Holder::principal(principal);
    budget
        .reserve(&holder, bytes, at, cancel)
        .await
        .map_err(|refusal| refused(budget, principal, bytes, purpose, timeout_ms, refusal))
}

/// The failure a caller reads for `refusal`.
fn refused(
    budget: &MemoryBudget,
    principal: &str,
    bytes: u64,
    purpose: Purpose<'_>,
    timeout_ms: u128,
    refusal: Refusal,
) -> Failure {
    let need = bytes.div_ceil(MIB);
    let total = budget.total() / MIB;
    let what = match purpose {
        Purpose::Call(tool) => format!(
            "this call of {tool} needs {need} MiB of the host's memory budget (its memory_mib, host_memory_mib, \
             max_stdio_bytes, output and content caps and validation_memory_mib)"
        ),
        Purpose::Arguments(tool) => {
            format!(
                "checking the arguments of {tool} needs {need} MiB of the host's memory budget (validation_memory_mib)"
            )
        }
        Purpose::Session(tool) => {
            format!(
                "a new session of {tool} needs {need} MiB of the host's memory budget ([tools.{tool}.sessions] memory_mib)"
            )
        }
    };
    match refusal {
        // No wait can make room for more than the whole budget: only the
        // operator's settings can.
        Refusal::TooLarge { .. } => Failure::new(
            ErrorKind::Internal,
            format!(
                "{what}, more than the whole budget, `[engine] memory_budget_mib` = {total} MiB; nothing ran (the \
                 operator can lower the tool's limits or raise memory_budget_mib)"
            ),
        )
        .blame(Blame::Operator)
        .retry(Retry::No),
        Refusal::QueueFull | Refusal::Deadline => {
            let waited = match refusal {
                Refusal::QueueFull => "too many calls are waiting for memory already".to_owned(),
                _ => format!("no room came free within the call's {timeout_ms} ms deadline"),
            };
            Failure::new(
                ErrorKind::Busy,
                format!(
                    "the host is busy: {what}, and other calls hold the rest of `[engine] memory_budget_mib` = \
                     {total} MiB ({waited}; principal {principal:?} may hold at most {}% of it at once, \
                     `[engine] memory_share_percent`). Nothing ran",
                    budget.share_percent()
                ),
            )
        }
        Refusal::Cancelled => Failure::new(
            ErrorKind::Cancelled,
            "the call was cancelled while it waited for room in the host's memory budget",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_runtime::memory_budget::Source;

    #[test]
    fn a_call_reserves_what_its_limits_let_it_hold() {
        let limits = Limits::default();
        let plain = call_bytes(&limits, false, false, false);
        // 128 MiB of memory, 64 MiB of host memory, 2 × 64 KiB of stdio,
        // 3 × 1 MiB of result text and 2^18 values of 64 bytes.
        assert_eq!(plain, (128 + 64 + 3 + 16) * MIB + 128 * 1024);
        assert_eq!(call_bytes(&limits, true, false, false), plain - 128 * MIB);
        assert_eq!(call_bytes(&limits, false, true, false), plain + 64 * MIB);
        // 3 × 8 MiB of content blocks, for a component that can attach them.
        assert_eq!(call_bytes(&limits, false, false, true), plain + 24 * MIB);
        let none = Limits { max_content_bytes: 0, ..limits };
        assert_eq!(call_bytes(&none, false, false, true), plain, "no content, nothing reserved for it");
    }

    #[tokio::test]
    async fn the_caller_reads_the_key() {
        let budget = MemoryBudget::with_total(100 * MIB, 50, Source::Configured);
        let never = CancellationToken::new();
        let soon = (Instant::now() + std::time::Duration::from_millis(20), 20);
        let _held = reserve(&budget, "alice", 60 * MIB, Purpose::Call("echo"), soon, &never).await.unwrap();
        let busy = reserve(&budget, "alice", MIB, Purpose::Call("echo"), soon, &never).await.unwrap_err();
        assert_eq!(busy.kind, ErrorKind::Busy);
        for needle in ["memory_budget_mib` = 100 MiB", "memory_share_percent", "\"alice\"", "within the call's 20 ms"] {
            assert!(busy.message.contains(needle), "{needle:?} in {}", busy.message);
        }
        let huge = reserve(&budget, "bob", 200 * MIB, Purpose::Session("run_python"), soon, &never).await.unwrap_err();
        assert_eq!(huge.kind, ErrorKind::Internal);
        assert!(huge.message.contains("[tools.run_python.sessions] memory_mib"), "{}", huge.message);
    }
}
