//! Check: the result a guest returned is untrusted. Its size is
//! capped, it must be JSON, and when the tool declared an output schema the
//! result must match it.
//!
//! The output schema is the tool's too: the result is checked under the same
//! meter as arguments (`validate.rs`), within what is left of the call's
//! deadline and the tool's `validation_memory_mib`.

use super::validate::{self, Deadline, Unchecked};
use airlock_core::outcome::{ErrorKind, Failure};
use airlock_runtime::loader::LoadedTool;
use serde_json::Value;

/// Check the raw result text of a call of `tool` within `deadline`.
///
/// # Errors
///
/// [`ErrorKind::OutputTooLarge`] past the tool's output cap or past what its
/// output schema can be checked on, [`ErrorKind::InvalidOutput`] for non-JSON
/// or a schema mismatch, [`ErrorKind::Timeout`] / [`ErrorKind::Cancelled`]
/// when the deadline passes or the call is cancelled during the check.
pub(crate) async fn check_output(tool: &LoadedTool, text: &str, deadline: Deadline<'_>) -> Result<Value, Failure> {
    let cap = tool.settings.limits.max_output_bytes;
    if text.len() > cap {
        return Err(Failure::new(
            ErrorKind::OutputTooLarge,
            format!(
                "the tool returned {} bytes, more than its {cap}-byte output limit; ask for less (a narrower range, a filter, fewer items)",
                text.len()
            ),
        ));
    }
    let value: Value = serde_json::from_str(text).map_err(|err| {
        Failure::new(ErrorKind::InvalidOutput, format!("the tool returned a result that is not JSON ({err}); this is a fault of the tool, not of your arguments"))
    })?;
    // An integer serde_json would have rounded is refused, not shown rounded.
    if airlock_core::integers::has_float(&value)
        && let Some(found) = airlock_core::integers::inexact_in_text(text)
    {
        return Err(Failure::new(
            ErrorKind::InvalidOutput,
            format!(
                "the tool returned the integer {} at {}, beyond the integers the host holds exactly ({}), so it \
                 would have been rounded; this is a fault of the tool (it should send such a value as a string), \
                 retrying the same call will not help",
                found.shown,
                found.at(),
                airlock_core::integers::EXACT_RANGE
            ),
        ));
    }
    let Some(schema) = &tool.output else { return Ok(value) };
    let memory_bytes = tool.settings.limits.validation_memory_bytes;
    match validate::check(schema, text, memory_bytes, deadline, "the tool's result").await {
        Ok(Ok(())) => Ok(value),
        Ok(Err(lines)) => Err(Failure::new(
            ErrorKind::InvalidOutput,
            format!(
                "the tool returned a result that does not match its declared output schema:\n{}\nThis is a fault of the tool; retrying the same call will not help.",
                lines.join("\n")
            ),
        )),
        Err(Unchecked::Failed(failure)) => Err(failure),
        Err(Unchecked::Memory(mib)) => Err(Failure::new(
            ErrorKind::OutputTooLarge,
            format!(
                "the tool returned {} bytes, too large to check against its output schema: the check needed more \
                 memory than this tool's validation_memory_mib = {mib} allows; ask for less (a narrower range, a \
                 filter, fewer items)",
                text.len()
            ),
        )),
        Err(Unchecked::Fault(why)) => Err(Failure::new(
            ErrorKind::InvalidOutput,
            format!(
                "the tool's result could not be checked against its declared output schema ({why}); this is a \
                 fault of the tool; retrying the same call will not help."
            ),
        )),
    }
}
