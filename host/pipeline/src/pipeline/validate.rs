//! Validate: check the arguments against the tool's parameters schema
//! (compiled once, when the tool was loaded).
//!
//! The schema is the tool's and the arguments are the model's: neither is
//! trusted, and no estimate of a schema's cost holds against every shape.
//! The check therefore runs under a meter, in the host's own validator
//! component (`validator.rs`): it stops at the call's deadline (the
//! `timeout` the call already promises), when the call is cancelled, or
//! when it needs more memory than the tool's `validation_memory_mib`, and it
//! yields to the async runtime while it runs, so other calls are served.
//!
//! The error names each failing JSON pointer and what was expected, in text
//! a model can act on in its next turn, and restates the schema.

use super::{Call, Pipeline, Stop};
use crate::reservation::{self, Purpose};
use airlock_core::outcome::{ErrorKind, Failure};
use airlock_core::text::cap;
use airlock_core::timeline::Stage;
use airlock_runtime::loader::LoadedTool;
use airlock_runtime::validator::{Bounds, Listed, MAX_COUNTED_ERRORS, Schema, Stopped};
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The restated schema is cut at this many bytes.
const MAX_RESTATED_SCHEMA: usize = 2048;
/// Each listed violation is cut at this many bytes.
const MAX_VIOLATION_BYTES: usize = 300;

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
    /// The check needed more memory than the tool's
    /// `validation_memory_mib` (in MiB).
    Memory(usize),
    /// The validator failed on this schema (a stack overflow on a deeply
    /// nested one, say): a fault of the tool's schema.
    Fault(String),
    /// A failure to return as it is (timeout, cancellation).
    Failed(Failure),
}

/// Check `text` (JSON) against `schema` within `deadline`, with at most
/// `memory_bytes` of validator memory; the inner result lists the
/// violations.
pub(crate) async fn check(
    schema: &Schema,
    text: &str,
    memory_bytes: usize,
    deadline: Deadline<'_>,
    stage: &str,
) -> Result<Result<(), Vec<String>>, Unchecked> {
    let bounds = Bounds { at: deadline.at, cancel: deadline.cancel, memory_bytes };
    match schema.check(text, bounds).await {
        Ok(None) => Ok(Ok(())),
        Ok(Some(listed)) => Ok(Err(lines(listed))),
        Err(Stopped::Deadline) => Err(Unchecked::Failed(Failure::new(
            ErrorKind::Timeout,
            format!(
                "the call's {} ms deadline passed while {stage} was being checked against its schema; \
                 send smaller arguments or ask for a smaller result",
                deadline.timeout_ms
            ),
        ))),
        Err(Stopped::Cancelled) => Err(Unchecked::Failed(Failure::new(
            ErrorKind::Cancelled,
            format!("the call was cancelled while {stage} was being checked against its schema"),
        ))),
        Err(Stopped::Memory) => Err(Unchecked::Memory(memory_bytes >> 20)),
        Err(Stopped::Fault(why)) => Err(Unchecked::Fault(why)),
    }
}

impl Pipeline {
    /// Check the call's arguments against its tool's parameters schema,
    /// with the validator's memory reserved from the host budget while the
    /// check runs, within the call's deadline (which starts at receipt).
    pub(super) async fn validate(&self, call: &mut Call<'_>) -> Result<(), Stop> {
        let tool = call.tool()?;
        // Time spent checking the arguments is taken from the time the
        // tool gets. A call that runs as a task has its tool's task
        // deadline.
        let timeout = call.limits(&tool).timeout;
        let deadline = Deadline {
            at: Instant::from_std(call.started) + timeout,
            timeout_ms: timeout.as_millis(),
            cancel: call.cancel,
        };
        let reserved = reservation::reserve(
            &self.memory,
            &call.request.principal,
            tool.settings.limits.validation_memory_bytes as u64,
            Purpose::Arguments(&tool.name),
            (deadline.at, deadline.timeout_ms),
            call.cancel,
        )
        .await;
        let validated = match reserved {
            Ok(_checking) => check_arguments(&tool, &call.arguments.text, deadline).await,
            Err(failure) => Err(failure),
        };
        call.timeline.lap(Stage::Validate);
        validated.map_err(Stop::not_reached)?;
        call.host_time = call.started.elapsed();
        Ok(())
    }
}

/// Check `arguments` (`text`, their JSON) against the parameters schema of
/// `tool`.
///
/// # Errors
///
/// One or more violations, or a check that needed more memory than the
/// tool's `validation_memory_mib`, as an [`ErrorKind::InvalidArguments`]
/// failure; [`ErrorKind::InvalidSchema`] when the validator fails on the
/// tool's schema itself (the tool's fault, whatever the arguments); a
/// [`ErrorKind::Timeout`] or [`ErrorKind::Cancelled`] failure when the
/// deadline passes or the call is cancelled first.
pub(crate) async fn check_arguments(tool: &LoadedTool, text: &str, deadline: Deadline<'_>) -> Result<(), Failure> {
    let memory_bytes = tool.settings.limits.validation_memory_bytes;
    let lines = match check(&tool.parameters, text, memory_bytes, deadline, "the arguments").await {
        Ok(Ok(())) => return Ok(()),
        Ok(Err(lines)) => lines,
        Err(Unchecked::Failed(failure)) => return Err(failure),
        Err(Unchecked::Memory(mib)) => {
            return Err(Failure::new(
                ErrorKind::InvalidArguments,
                format!(
                    "the arguments are {} bytes, too large for the parameters schema of {}: checking them needed \
                     more memory than this tool's validation_memory_mib = {mib} allows; send smaller arguments",
                    text.len(),
                    tool.name
                ),
            ));
        }
        Err(Unchecked::Fault(why)) => {
            return Err(Failure::new(
                ErrorKind::InvalidSchema,
                format!(
                    "the arguments could not be checked against the parameters schema of {}: the validator \
                     failed on the tool's schema ({why})",
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
            restate(tool.parameters.json()),
        ),
    ))
}

/// The violations as the model reads them, one line each, as
/// `- at /pointer: message`, then how many more there are.
fn lines(listed: Listed) -> Vec<String> {
    let Listed { listed, counted } = listed;
    let mut lines: Vec<String> = listed
        .into_iter()
        .map(|(pointer, message)| {
            let at = if pointer.is_empty() { "(root)".to_owned() } else { pointer };
            format!("- at {at}: {}", cap(&message, MAX_VIOLATION_BYTES))
        })
        .collect();
    let shown = lines.len();
    if counted >= MAX_COUNTED_ERRORS {
        lines.push(format!("- … and at least {} more", counted - shown));
    } else if counted > shown {
        lines.push(format!("- … and {} more", counted - shown));
    }
    lines
}

fn restate(schema: &Value) -> String {
    cap(&schema.to_string(), MAX_RESTATED_SCHEMA).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_runtime::validator::{MAX_LISTED_ERRORS, Validator};
    use serde_json::json;

    async fn violations(schema: Value, value: Value) -> Result<(), Vec<String>> {
        static VALIDATOR: std::sync::OnceLock<Validator> = std::sync::OnceLock::new();
        let validator = VALIDATOR.get_or_init(|| Validator::new(None));
        validator.ready().await.unwrap();
        let cancel = CancellationToken::new();
        let at = Instant::now() + std::time::Duration::from_secs(60);
        let bounds = Bounds { at, cancel: &cancel, memory_bytes: 64 << 20 };
        let schema = validator.compile(&schema, bounds).await.ok().unwrap().unwrap();
        let deadline = Deadline { at, timeout_ms: 60_000, cancel: &cancel };
        match check(&schema, &value.to_string(), 64 << 20, deadline, "the arguments").await {
            Ok(verdict) => verdict,
            Err(_) => panic!("the check must give an answer"),
        }
    }

    async fn expect(schema: Value, value: Value, expect: &[&str]) {
        match violations(schema, value).await {
            Ok(()) => assert!(expect.is_empty(), "expected violations {expect:?}"),
            Err(lines) => {
                assert_eq!(lines.len(), expect.len(), "{lines:#?}");
                for (line, needle) in lines.iter().zip(expect) {
                    assert!(line.contains(needle), "{line:?} should contain {needle:?}");
                }
            }
        }
    }

    #[tokio::test]
    async fn pointers_and_expectations() {
        let schema = json!({"type":"object","properties":{"path":{"type":"string"},"n":{"type":"integer","minimum":1}},"required":["path"]});
        expect(schema.clone(), json!({"path":"a"}), &[]).await;
        expect(schema.clone(), json!({}), &["at (root): \"path\" is a required property"]).await;
        expect(
            schema.clone(),
            json!({"path":1,"n":0}),
            &["at /path: 1 is not of type \"string\"", "at /n: 0 is less than the minimum of 1"],
        )
        .await;
    }

    #[tokio::test]
    async fn long_lists_are_capped() {
        let schema = json!({"type":"array","items":{"type":"string"}});
        let lines = violations(schema.clone(), json!((0..50).collect::<Vec<_>>())).await.unwrap_err();
        assert_eq!(lines.len(), MAX_LISTED_ERRORS + 1);
        assert_eq!(lines.last().unwrap(), "- … and 40 more");
        let many = json!((0..MAX_COUNTED_ERRORS + 5).collect::<Vec<_>>());
        let lines = violations(schema, many).await.unwrap_err();
        assert_eq!(lines.last().unwrap(), &format!("- … and at least {} more", MAX_COUNTED_ERRORS - MAX_LISTED_ERRORS));
    }

    #[tokio::test]
    async fn long_messages_are_cut() {
        let schema = json!({"type":"object","properties":{"a":{"const":"x".repeat(5000)}}});
        let lines = violations(schema, json!({"a": 1})).await.unwrap_err();
        assert_eq!(lines.len(), 1);
        assert!(lines[0].len() <= MAX_VIOLATION_BYTES + 20, "{}", lines[0].len());
        assert!(lines[0].ends_with('…'), "{}", lines[0]);
    }
}
