//! Test fixture for the MCP conformance suite (tests/conformance): `greet`,
//! the tool its `tasks-*` scenarios call as the one that never runs as a
//! task. Never a tool to ship.

use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::Deserialize;

/// Whom to greet.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The name in the greeting.
    name: String,
}

fn greet(args: Args) -> Result<String, ToolError> {
    Ok(format!("Hello, {}!", args.name))
}

export_tool!(name: "greet", description: "Says hello to `name` (MCP conformance fixture).", handler: greet);
