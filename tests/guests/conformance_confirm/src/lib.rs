//! Test fixture for the MCP conformance suite (tests/conformance):
//! `confirm_delete`, a tool with side effects (as the operator's config
//! says), so that the default policy asks before it runs: as a task it
//! waits in `input_required` for the confirmation. It deletes nothing.
//! Never a tool to ship.

use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::Deserialize;

/// The file to pretend to delete.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Its name.
    filename: String,
}

fn confirm_delete(args: Args) -> Result<String, ToolError> {
    Ok(format!("deleted {}", args.filename))
}

export_tool!(
    name: "confirm_delete",
    description: "Needs confirmation, then says it deleted `filename` (MCP conformance fixture).",
    handler: confirm_delete
);
