//! Test fixture for the MCP conformance suite (tests/conformance) and the
//! task tests: `slow_compute`, which sleeps `seconds` (inside a WASI clock
//! poll, so that a cancel or the deadline stops it at once) and then says
//! what it did. The operator's config lets its calls run as tasks. Never a
//! tool to ship.

use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How long to work, and a label to echo.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Seconds to sleep before answering (0: answer at once).
    #[schemars(range(max = 3600))]
    seconds: u64,
    /// Echoed in the result, so that a client can tell its calls apart.
    label: Option<String>,
}

/// What was done.
#[derive(Serialize, JsonSchema)]
struct Done {
    /// The seconds slept.
    seconds: u64,
    /// The label given, if any.
    label: Option<String>,
}

fn slow_compute(args: Args) -> Result<Done, ToolError> {
    std::thread::sleep(Duration::from_secs(args.seconds));
    Ok(Done { seconds: args.seconds, label: args.label })
}

export_tool!(
    name: "slow_compute",
    description: "Sleeps `seconds`, then answers with the seconds and `label` (MCP conformance fixture).",
    handler: slow_compute
);
