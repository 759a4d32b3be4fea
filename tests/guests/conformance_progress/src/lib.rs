//! Test fixture for the MCP conformance suite (tests/conformance): the tool
//! its `tools-call-with-progress` scenario calls by name, reporting 0, 50
//! and 100 of 100. Never a tool to ship.
//!
//! It waits 100 ms between reports, twice the host's default
//! `progress_interval_ms`, so that each report is a notification of its
//! own: reports closer together than the interval are coalesced, the last
//! one kept.

use airlock_guest::{ToolError, export_tool, progress};
use schemars::JsonSchema;
use serde::Deserialize;
use std::time::Duration;

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {}

fn test_tool_with_progress(_args: Args) -> Result<String, ToolError> {
    for (step, done) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if step > 0 {
            std::thread::sleep(Duration::from_millis(100));
        }
        progress::report(done, Some(100.0), Some(&format!("step {} of 3", step + 1)));
    }
    Ok("Reported 0, 50 and 100 of 100.".into())
}

export_tool!(name: "test_tool_with_progress", description: "Reports its progress (MCP conformance fixture).", handler: test_tool_with_progress);
