//! Check output: the result a guest returned is untrusted. Its size is
//! capped, it must be JSON, and when the tool declared an output schema the
//! result must match it.

use crate::loader::LoadedTool;
use crate::outcome::{ErrorKind, Failure};
use crate::validate::violations;
use serde_json::Value;

/// Check the raw result text of a call of `tool`.
///
/// # Errors
///
/// [`ErrorKind::OutputTooLarge`] past the tool's output cap,
/// [`ErrorKind::InvalidOutput`] for non-JSON or a schema mismatch.
pub fn check_output(tool: &LoadedTool, text: &str) -> Result<Value, Failure> {
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
    if let Some(validator) = &tool.output_validator
        && let Err(lines) = violations(validator, &value)
    {
        return Err(Failure::new(
            ErrorKind::InvalidOutput,
            format!(
                "the tool returned a result that does not match its declared output schema:\n{}\nThis is a fault of the tool; retrying the same call will not help.",
                lines.join("\n")
            ),
        ));
    }
    Ok(value)
}
