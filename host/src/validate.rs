//! Validate: check the arguments against the tool's parameters schema
//! (compiled once, when the tool was loaded).
//!
//! The schema is the tool's and the arguments are the model's: neither is
//! trusted. The loader bounded the schema's cost per instance byte
//! (`schema_cost.rs`); here that cost times the size of the instance bounds
//! the work of one validation. Small work (the common case) is done inline;
//! larger work runs on a blocking thread, at most
//! [`MAX_BLOCKING_VALIDATIONS`] at once across the host, raced against the
//! call's deadline and cancellation; work past [`MAX_VALIDATION_WORK`] is
//! refused before anything is evaluated.
//!
//! The error names each failing JSON pointer and what was expected, in text
//! a model can act on in its next turn, and restates the schema.

use crate::loader::LoadedTool;
use crate::outcome::{ErrorKind, Failure};
use crate::render::cap;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// At most this many schema violations are listed.
pub const MAX_LISTED_ERRORS: usize = 10;
/// Violations past this many are not even counted ("at least N more").
pub const MAX_COUNTED_ERRORS: usize = 10_000;
/// The restated schema is cut at this many bytes.
const MAX_RESTATED_SCHEMA: usize = 2048;
/// Each listed violation is cut at this many bytes.
const MAX_VIOLATION_BYTES: usize = 300;
/// Validations whose work (schema cost × instance bytes) is at most this are
/// done inline on the async runtime: tens of microseconds at most.
pub const INLINE_VALIDATION_WORK: u64 = 1 << 16;
/// Most work one validation may take (≈ a second of one core); larger
/// instances are refused before they are evaluated.
pub const MAX_VALIDATION_WORK: u64 = 1 << 28;
/// Validations running at once on blocking threads, across the host; the
/// others wait for a place within their deadline.
pub const MAX_BLOCKING_VALIDATIONS: usize = 2;

/// Places for validations off the async runtime. A place is held until the
/// evaluation ends, also when the call stopped waiting for it (a deadline
/// passed): the work itself cannot be interrupted, only bounded.
static BLOCKING: Semaphore = Semaphore::const_new(MAX_BLOCKING_VALIDATIONS);

/// A compiled schema with its cost per instance byte.
#[derive(Clone)]
pub(crate) struct Compiled {
    /// The jsonschema validator.
    pub(crate) validator: Arc<jsonschema::Validator>,
    /// `schema_cost::cost` of the schema.
    pub(crate) cost: u64,
}

/// When a validation must give up.
#[derive(Clone, Copy)]
pub(crate) struct Deadline<'a> {
    /// The call's deadline.
    pub(crate) at: Instant,
    /// The tool's whole timeout (for messages).
    pub(crate) timeout_ms: u128,
    /// The call's cancellation.
    pub(crate) cancel: &'a CancellationToken,
}

/// Why a validation did not give an answer.
pub(crate) enum Unchecked {
    /// The work would exceed [`MAX_VALIDATION_WORK`].
    TooMuchWork {
        /// The work bound of this instance.
        work: u64,
        /// The largest instance, in bytes, that would be accepted.
        max_bytes: u64,
    },
    /// A failure to return as it is (timeout, cancellation, host fault).
    Failed(Failure),
}

/// The work bound of validating `bytes` of JSON against a schema of `cost`.
pub(crate) fn work(cost: u64, bytes: usize) -> u64 {
    cost.max(1).saturating_mul((bytes as u64).max(1))
}

/// Check `value` (whose JSON text is `bytes` long) against `schema` within
/// `deadline`; the inner result lists the violations.
pub(crate) async fn check(
    schema: &Compiled,
    value: &Value,
    bytes: usize,
    deadline: Deadline<'_>,
    stage: &str,
) -> Result<Result<(), Vec<String>>, Unchecked> {
    let work = work(schema.cost, bytes);
    if work > MAX_VALIDATION_WORK {
        return Err(Unchecked::TooMuchWork { work, max_bytes: MAX_VALIDATION_WORK / schema.cost.max(1) });
    }
    if work <= INLINE_VALIDATION_WORK {
        return Ok(violations(&schema.validator, value));
    }
    let timeout = || {
        Unchecked::Failed(Failure::new(
            ErrorKind::Timeout,
            format!(
                "the call's {} ms deadline passed while {stage} was being checked against its schema; \
                 send smaller arguments or ask for a smaller result",
                deadline.timeout_ms
            ),
        ))
    };
    if Instant::now() >= deadline.at {
        return Err(timeout());
    }
    let off_runtime = async {
        // The semaphore is never closed; if acquiring ever failed, the
        // validation would run without a place rather than not at all.
        let permit = BLOCKING.acquire().await.ok();
        let validator = schema.validator.clone();
        let value = value.clone();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            violations(&validator, &value)
        })
        .await
    };
    tokio::select! {
        biased;
        () = deadline.cancel.cancelled() => Err(Unchecked::Failed(Failure::new(
            ErrorKind::Cancelled,
            format!("the call was cancelled while {stage} was being checked against its schema"),
        ))),
        () = tokio::time::sleep_until(deadline.at) => Err(timeout()),
        joined = off_runtime => joined.map_err(|err| Unchecked::Failed(Failure::new(
            ErrorKind::Internal,
            format!("the host failed while checking {stage} against its schema: {err}"),
        ))),
    }
}

/// Check `arguments` (`bytes` of JSON text) against the parameters schema of
/// `tool`.
///
/// # Errors
///
/// One or more violations, or arguments too large for the schema, as an
/// [`ErrorKind::InvalidArguments`] failure; a [`ErrorKind::Timeout`] or
/// [`ErrorKind::Cancelled`] failure when the deadline passes or the call is
/// cancelled first.
pub(crate) async fn validate(
    tool: &LoadedTool,
    arguments: &Value,
    bytes: usize,
    deadline: Deadline<'_>,
) -> Result<(), Failure> {
    let lines = match check(&tool.parameters_check, arguments, bytes, deadline, "the arguments").await {
        Ok(Ok(())) => return Ok(()),
        Ok(Err(lines)) => lines,
        Err(Unchecked::Failed(failure)) => return Err(failure),
        Err(Unchecked::TooMuchWork { work, max_bytes }) => {
            return Err(Failure::new(
                ErrorKind::InvalidArguments,
                format!(
                    "the arguments are {bytes} bytes, too large for the parameters schema of {}: checking them \
                     would take {work} work units, more than the host's MAX_VALIDATION_WORK = \
                     {MAX_VALIDATION_WORK}; at most {max_bytes} bytes of arguments are accepted by this tool",
                    tool.name
                ),
            ));
        }
    };
    Err(Failure::new(
        ErrorKind::InvalidArguments,
        format!(
            "the arguments do not match the parameters of {}:\n{}\nExpected arguments matching this JSON Schema: {}",
            tool.name,
            lines.join("\n"),
            restate(&tool.parameters),
        ),
    ))
}

/// The violations of `value` against `validator`, one line each, as
/// `- at /pointer: message`.
pub(crate) fn violations(validator: &jsonschema::Validator, value: &Value) -> Result<(), Vec<String>> {
    // The common case first: `is_valid` stops at the first violation and
    // builds no error values, several times cheaper than `iter_errors`.
    if validator.is_valid(value) {
        return Ok(());
    }
    let mut lines = Vec::new();
    let mut total = 0usize;
    for error in validator.iter_errors(value).take(MAX_COUNTED_ERRORS) {
        total += 1;
        if lines.len() < MAX_LISTED_ERRORS {
            let pointer = error.instance_path().to_string();
            let at = if pointer.is_empty() { "(root)".to_owned() } else { pointer };
            lines.push(format!("- at {at}: {}", cap(&error.to_string(), MAX_VIOLATION_BYTES)));
        }
    }
    if total == 0 {
        return Ok(());
    }
    if total == MAX_COUNTED_ERRORS {
        lines.push(format!("- … and at least {} more", total - lines.len()));
    } else if total > lines.len() {
        lines.push(format!("- … and {} more", total - lines.len()));
    }
    Err(lines)
}

fn restate(schema: &Value) -> String {
    cap(&schema.to_string(), MAX_RESTATED_SCHEMA).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: Value, value: Value, expect: &[&str]) {
        let validator = jsonschema::validator_for(&schema).unwrap();
        match violations(&validator, &value) {
            Ok(()) => assert!(expect.is_empty(), "expected violations {expect:?}"),
            Err(lines) => {
                assert_eq!(lines.len(), expect.len(), "{lines:#?}");
                for (line, needle) in lines.iter().zip(expect) {
                    assert!(line.contains(needle), "{line:?} should contain {needle:?}");
                }
            }
        }
    }

    #[test]
    fn pointers_and_expectations() {
        let schema = json!({"type":"object","properties":{"path":{"type":"string"},"n":{"type":"integer","minimum":1}},"required":["path"]});
        check(schema.clone(), json!({"path":"a"}), &[]);
        check(schema.clone(), json!({}), &["at (root): \"path\" is a required property"]);
        check(
            schema.clone(),
            json!({"path":1,"n":0}),
            &["at /path: 1 is not of type \"string\"", "at /n: 0 is less than the minimum of 1"],
        );
    }

    #[test]
    fn long_lists_are_capped() {
        let schema = json!({"type":"array","items":{"type":"string"}});
        let lines =
            violations(&jsonschema::validator_for(&schema).unwrap(), &json!((0..50).collect::<Vec<_>>())).unwrap_err();
        assert_eq!(lines.len(), MAX_LISTED_ERRORS + 1);
        assert_eq!(lines.last().unwrap(), "- … and 40 more");
        let many = json!((0..MAX_COUNTED_ERRORS + 5).collect::<Vec<_>>());
        let lines = violations(&jsonschema::validator_for(&schema).unwrap(), &many).unwrap_err();
        assert_eq!(lines.last().unwrap(), &format!("- … and at least {} more", MAX_COUNTED_ERRORS - MAX_LISTED_ERRORS));
    }

    fn compiled(schema: Value, cost: u64) -> Compiled {
        Compiled { validator: Arc::new(jsonschema::validator_for(&schema).unwrap()), cost }
    }

    fn deadline(cancel: &CancellationToken, ms: u64) -> Deadline<'_> {
        Deadline { at: Instant::now() + std::time::Duration::from_millis(ms), timeout_ms: ms.into(), cancel }
    }

    #[tokio::test]
    async fn work_past_the_cap_is_refused_before_evaluation() {
        let cancel = CancellationToken::new();
        let schema = compiled(json!({"type": "object"}), 4096);
        let bytes = (MAX_VALIDATION_WORK / 4096 + 1) as usize;
        match super::check(&schema, &json!({}), bytes, deadline(&cancel, 60_000), "the arguments").await {
            Err(Unchecked::TooMuchWork { max_bytes, .. }) => assert_eq!(max_bytes, MAX_VALIDATION_WORK / 4096),
            _ => panic!("expected a refusal"),
        }
        // Just under the cap it is evaluated (off the runtime).
        let bytes = (MAX_VALIDATION_WORK / 4096) as usize;
        let got = super::check(&schema, &json!({}), bytes, deadline(&cancel, 60_000), "the arguments").await;
        assert!(matches!(got, Ok(Ok(()))));
    }

    #[tokio::test]
    async fn cancellation_and_deadline_stop_waiting() {
        let schema = compiled(json!({"type": "array", "items": {"type": "integer"}}), 1);
        let value = json!((0..200_000).collect::<Vec<_>>());
        let cancel = CancellationToken::new();
        cancel.cancel();
        match super::check(&schema, &value, 1_000_000, deadline(&cancel, 60_000), "the arguments").await {
            Err(Unchecked::Failed(failure)) => assert_eq!(failure.kind, ErrorKind::Cancelled),
            _ => panic!("expected a cancellation"),
        }
        let cancel = CancellationToken::new();
        match super::check(&schema, &value, 1_000_000, deadline(&cancel, 0), "the arguments").await {
            Err(Unchecked::Failed(failure)) => assert_eq!(failure.kind, ErrorKind::Timeout),
            _ => panic!("expected a timeout"),
        }
    }
}
