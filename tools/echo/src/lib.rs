//! `echo`: returns its input unchanged. The smallest useful tool, and the
//! one Airlock's benchmarks and tests use to measure the per-call floor.

use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `echo`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The text to return.
    pub text: String,
}

/// Result of `echo`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Echoed {
    /// The same text that was passed in.
    pub text: String,
}

/// Return the text unchanged.
pub fn echo(args: Args) -> Result<Echoed, ToolError> {
    Ok(Echoed { text: args.text })
}

export_tool!(
    name: "echo",
    description: "Returns the given text unchanged. Use it to check that tool calls work.",
    handler: echo,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_text_unchanged() {
        let out = echo(Args { text: "héllo".into() }).unwrap();
        assert_eq!(out.text, "héllo");
    }
}
