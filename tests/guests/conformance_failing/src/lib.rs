//! Test fixture for the MCP conformance suite (tests/conformance):
//! `failing_job`, which works for a second and then fails on purpose with
//! a tool error. The operator's config makes its calls tasks only. Never a
//! tool to ship.

use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::Deserialize;
use std::time::Duration;

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {}

fn failing_job(_args: Args) -> Result<String, ToolError> {
    std::thread::sleep(Duration::from_secs(1));
    Err(ToolError::new("this job always fails, on purpose"))
}

export_tool!(name: "failing_job", description: "Always fails after a second (MCP conformance fixture).", handler: failing_job);
