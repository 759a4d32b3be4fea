//! Test fixture for the MCP conformance suite (tests/conformance): the tool
//! its `input-required-result-tampered-state` scenario calls by name. The
//! operator's config marks it as having side effects, so the default policy
//! asks: the call answers "input required" with a `requestState`, and the
//! suite checks that an altered state is refused. Never a tool to ship.

use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::Deserialize;

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {}

fn test_input_required_result_tampered_state(_args: Args) -> Result<String, ToolError> {
    Ok("confirmed".into())
}

export_tool!(
    name: "test_input_required_result_tampered_state",
    description: "Needs confirmation, then returns a fixed text (MCP conformance fixture).",
    handler: test_input_required_result_tampered_state
);
