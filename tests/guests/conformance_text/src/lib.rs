//! Test fixture for the MCP conformance suite (tests/conformance): the tool
//! its `tools-call-simple-text` scenario calls by name, returning the text
//! the scenario describes. Never a tool to ship.

use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::Deserialize;

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {}

fn test_simple_text(_args: Args) -> Result<String, ToolError> {
    Ok("This is a simple text response for testing.".into())
}

export_tool!(name: "test_simple_text", description: "Returns a fixed text (MCP conformance fixture).", handler: test_simple_text);
