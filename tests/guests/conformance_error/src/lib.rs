//! Test fixture for the MCP conformance suite (tests/conformance): the tool
//! its `tools-call-error` scenario calls by name, failing on purpose. Never
//! a tool to ship.

use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::Deserialize;

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {}

fn test_error_handling(_args: Args) -> Result<String, ToolError> {
    Err(ToolError::new("This tool intentionally returns an error for testing"))
}

export_tool!(name: "test_error_handling", description: "Always fails (MCP conformance fixture).", handler: test_error_handling);
