//! Test fixture for the MCP conformance suite (tests/conformance):
//! `protocol_error_job`, which crashes (a panic, a trap in the guest), so
//! that the call cannot finish: as a task it ends `failed`. Never a tool to
//! ship.

// It panics on purpose: the crash is what the fixture is for.
#![allow(clippy::panic)]

use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::Deserialize;

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {}

fn protocol_error_job(_args: Args) -> Result<String, ToolError> {
    panic!("protocol_error_job crashes on purpose")
}

export_tool!(
    name: "protocol_error_job",
    description: "Always crashes (MCP conformance fixture).",
    handler: protocol_error_job
);
