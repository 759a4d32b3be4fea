//! Test fixture for the MCP conformance suite (tests/conformance): the tool
//! its `tools-call-with-logging` scenario calls by name, writing three log
//! lines at `info`, 50 ms apart. Never a tool to ship.
//!
//! The lines reach the client only because the suite's configuration
//! turns `client_log` on for it; by default a tool's lines stay in the
//! operator's log.

use airlock_guest::{ToolError, export_tool, log};
use schemars::JsonSchema;
use serde::Deserialize;
use std::time::Duration;

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {}

fn test_tool_with_logging(_args: Args) -> Result<String, ToolError> {
    let lines = ["Tool execution started", "Tool processing data", "Tool execution completed"];
    for (step, line) in lines.into_iter().enumerate() {
        if step > 0 {
            std::thread::sleep(Duration::from_millis(50));
        }
        log::info(line);
    }
    Ok("Wrote three log lines.".into())
}

export_tool!(name: "test_tool_with_logging", description: "Writes three log lines (MCP conformance fixture).", handler: test_tool_with_logging);
